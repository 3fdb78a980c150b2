#include "tools/lctl_scrub.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "client/metadata.h"
#include "common/fid.h"
#include "proto/layout_mirrors.h"
#include "proto/stria.pb.h"
#include "tools/fs_connect.h"

namespace stria::tools {
namespace {

Result<long> ParseNumber(const char* what, const char* text, long max) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 0 || v > max) {
    return Status(Code::kInval, std::string("scrub: bad ") + what + " '" + text + "'");
  }
  return v;
}

std::string OstName(uint32_t index) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "OST%04x", index);
  return buf;
}

// One OST's scrub over a connection of its own: a scrub may take far longer than the
// library's RPC timeout, and a timed-out scrub must not be resent.
Result<proto::OstScrubReply> ScrubOne(const proto::OstInfo& ost, const std::string& fsname,
                                      int timeout_s) {
  STRIA_ASSIGN_OR_RETURN(lnet::Nid nid, lnet::Nid::Parse(ost.nid()));
  lnet::ClientOptions opts;
  opts.fsname = fsname;
  opts.rpc_timeout_ms = timeout_s * 1000;
  opts.retry_deadline_ms = timeout_s * 1000;
  opts.max_connections = 1;
  UseToolKey(&opts);
  lnet::RpcClient rpc(nid, opts);
  proto::OstScrubRequest req;
  req.set_ost_idx(ost.index());
  proto::OstScrubReply rep;
  STRIA_RETURN_IF_ERROR(rpc.Call(proto::OP_OST_SCRUB, req, &rep));
  return rep;
}

void PrintReport(const proto::OstScrubReply& rep) {
  const std::string name = OstName(rep.ost_idx());
  std::printf("%s: %llu objects, %llu bytes checked: ", name.c_str(),
              static_cast<unsigned long long>(rep.objects()),
              static_cast<unsigned long long>(rep.bytes()));
  if (rep.corrupt_objects() == 0) {
    std::printf("clean\n");
    return;
  }
  std::printf("%llu corrupt\n", static_cast<unsigned long long>(rep.corrupt_objects()));
  for (const proto::OstScrubCorruption& c : rep.corruptions()) {
    std::printf("corrupt: %s object %llu group %llu offset %llu", name.c_str(),
                static_cast<unsigned long long>(c.object().object_id()),
                static_cast<unsigned long long>(c.object().group()),
                static_cast<unsigned long long>(c.offset()));
    if (!c.error().empty()) {
      std::printf(" (unreadable: %s)\n", c.error().c_str());
    } else {
      std::printf(" (%llu bad 4 KiB chunks)\n", static_cast<unsigned long long>(c.bad_chunks()));
    }
  }
  if (rep.corrupt_objects() > static_cast<uint64_t>(rep.corruptions_size())) {
    std::printf("%s: %llu more corrupt objects not listed (see the OSS log)\n", name.c_str(),
                static_cast<unsigned long long>(rep.corrupt_objects() - rep.corruptions_size()));
  }
}

// Finds the files that hold the corrupt objects `bad` ((OST, object id) -> first bad offset)
// and reports each damaged mirror component to the MDS, whose resync rewrites it from a good
// mirror. Prints one line per object; returns how many could not be handed over.
int RepairFromMirrors(client::Client* c, const std::map<std::pair<uint32_t, uint64_t>, uint64_t>& bad) {
  ToolSession session;
  std::map<std::pair<uint32_t, uint64_t>, bool> found;
  std::vector<uint64_t> dirs{1};  // the root
  int unrepaired = 0;
  while (!dirs.empty() && found.size() < bad.size()) {
    const uint64_t dir = dirs.back();
    dirs.pop_back();
    auto entries = session.ListDir(c, dir, /*plus=*/true);
    if (!entries.ok()) {
      std::fprintf(stderr, "lctl scrub: repair: directory %llu: %s\n",
                   static_cast<unsigned long long>(dir), entries.status().ToString().c_str());
      continue;
    }
    for (const proto::DirEntry& e : *entries) {
      if (e.type() == proto::FT_DIR) dirs.push_back(e.ino());
      if (e.type() != proto::FT_REG || !e.has_layout()) continue;
      const proto::Layout& l = e.layout();
      for (const proto::LayoutComponent& comp : l.components()) {
        for (const proto::StripeObject& o : comp.layout().objects()) {
          const auto key = std::make_pair(o.ost_idx(), o.object_id());
          if (!bad.count(key) || found.count(key)) continue;
          found[key] = true;
          const std::string what = OstName(o.ost_idx()) + " object " +
                                   std::to_string(o.object_id()) + " of " +
                                   FormatFid(FidOfIno(e.ino()));
          const uint64_t end = std::min(comp.end(), std::max<uint64_t>(e.attr().size(), 1));
          if (!IsMirrored(l) || end <= comp.start()) {
            std::printf("repair: %s: not repairable (no other mirror)\n", what.c_str());
            ++unrepaired;
            continue;
          }
          proto::MirrorRequest req;
          req.set_ino(e.ino());
          req.set_command(proto::MIRROR_STALE);
          req.set_mirror_id(MirrorIdOf(comp.id()));
          req.set_start(comp.start());
          req.set_end(end);
          req.set_damaged(true);
          Status st = client::Metadata(c).Mirror(session.cred(), req).status();
          if (st.ok()) {
            std::printf("repair: %s: mirror %u handed to the resync\n", what.c_str(),
                        MirrorIdOf(comp.id()));
          } else {
            std::printf("repair: %s: not repairable (%s)\n", what.c_str(), st.ToString().c_str());
            ++unrepaired;
          }
        }
      }
    }
  }
  for (const auto& [key, offset] : bad) {
    if (found.count(key)) continue;
    std::printf("repair: %s object %llu: no file holds it\n", OstName(key.first).c_str(),
                static_cast<unsigned long long>(key.second));
    ++unrepaired;
  }
  return unrepaired;
}

}  // namespace

Result<ScrubArgs> ParseScrubArgs(int argc, char** argv) {
  ScrubArgs args;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--ost") == 0 && has_value) {
      STRIA_ASSIGN_OR_RETURN(long v, ParseNumber("OST index", argv[++i], 0xffff));
      args.ost = static_cast<uint32_t>(v);
    } else if (std::strcmp(argv[i], "--repair") == 0) {
      args.repair = true;
    } else if (std::strcmp(argv[i], "--timeout") == 0 && has_value) {
      STRIA_ASSIGN_OR_RETURN(long v, ParseNumber("timeout", argv[++i], 7 * 24 * 3600));
      if (v == 0) return Status(Code::kInval, "scrub: the timeout must be at least 1 second");
      args.timeout_s = static_cast<int>(v);
    } else {
      return Status(Code::kInval,
                    std::string("scrub: unknown or incomplete option '") + argv[i] + "'");
    }
  }
  return args;
}

int LctlScrub(client::Client* c, const ScrubArgs& args) {
  auto config = c->GetConfig(/*refresh=*/true);
  if (!config.ok()) {
    std::fprintf(stderr, "lctl scrub: %s\n", config.status().ToString().c_str());
    return ExitCode(config.status());
  }
  std::map<uint32_t, const proto::OstInfo*> osts;
  for (const proto::OstInfo& o : config->osts()) {
    if (!args.ost || o.index() == *args.ost) osts[o.index()] = &o;
  }
  if (osts.empty()) {
    const Status st(Code::kNoOst, args.ost ? "no such OST " + OstName(*args.ost) : "no OSTs");
    std::fprintf(stderr, "lctl scrub: %s\n", st.ToString().c_str());
    return ExitCode(st);
  }
  bool corrupt = false;
  int failed = 0;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> bad;  // (OST, object) -> first bad offset
  for (const auto& [index, ost] : osts) {
    Result<proto::OstScrubReply> rep = ScrubOne(*ost, config->fsname(), args.timeout_s);
    if (!rep.ok()) {
      std::fprintf(stderr, "lctl scrub: %s (%s): %s\n", OstName(index).c_str(), ost->nid().c_str(),
                   rep.status().ToString().c_str());
      if (failed == 0) failed = ExitCode(rep.status());
      continue;
    }
    PrintReport(*rep);
    corrupt = corrupt || rep->corrupt_objects() > 0;
    for (const proto::OstScrubCorruption& x : rep->corruptions()) {
      bad[{x.object().ost_idx(), x.object().object_id()}] = x.offset();
    }
  }
  if (args.repair && !bad.empty()) RepairFromMirrors(c, bad);
  if (corrupt) return ExitCode(Status(Code::kCorrupt, "corruption found"));
  return failed;
}

}  // namespace stria::tools
