#include "oss/ost_scrub.h"

#include "common/log.h"

namespace stria::oss {
namespace {

proto::OstScrubCorruption* AddCorruption(proto::OstScrubReply* rep, size_t max_listed,
                                         uint32_t ost_idx, uint64_t group, uint64_t id) {
  rep->set_corrupt_objects(rep->corrupt_objects() + 1);
  if (static_cast<size_t>(rep->corruptions_size()) >= max_listed) return nullptr;
  proto::OstScrubCorruption* c = rep->add_corruptions();
  c->mutable_object()->set_ost_idx(ost_idx);
  c->mutable_object()->set_group(group);
  c->mutable_object()->set_object_id(id);
  return c;
}

}  // namespace

Result<proto::OstScrubReply> ScrubOst(ObjectStore& store, size_t max_listed) {
  const uint32_t index = store.meta().index;
  proto::OstScrubReply rep;
  rep.set_ost_idx(index);
  LOG_INFO("scrub of OST {} started", index);
  Status walk = store.ForEachObject([&](uint64_t group, uint64_t id) {
    Result<ObjectScrub> r = store.ScrubObject(group, id);
    rep.set_objects(rep.objects() + 1);
    if (!r.ok()) {  // unreadable: reported like a corruption, and the walk goes on
      LOG_WARN("scrub: OST {} object {}:{} cannot be read: {}", index, group, id,
               r.status().ToString());
      if (auto* c = AddCorruption(&rep, max_listed, index, group, id)) {
        c->set_error(r.status().ToString());
      }
      return Status::Ok();
    }
    rep.set_bytes(rep.bytes() + r->bytes);
    if (r->bad_chunks > 0) {
      LOG_WARN(
          "scrub: OST {} object {}:{} failed crc32c verification at offset {} ({} bad "
          "4 KiB chunks)",
          index, group, id, r->first_bad_offset, r->bad_chunks);
      if (auto* c = AddCorruption(&rep, max_listed, index, group, id)) {
        c->set_offset(r->first_bad_offset);
        c->set_bad_chunks(r->bad_chunks);
      }
    }
    return Status::Ok();
  });
  STRIA_RETURN_IF_ERROR(walk);
  LOG_INFO("scrub of OST {} done: {} objects, {} bytes, {} corrupt", index, rep.objects(),
           rep.bytes(), rep.corrupt_objects());
  return rep;
}

}  // namespace stria::oss
