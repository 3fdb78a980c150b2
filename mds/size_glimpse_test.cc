// GlimpseObjects: a file's size from its objects' sizes, through a gateway that answers
// from a table (what the OSTs would), for a striped layout, a composite one, a missing
// object, an unknown OST and an OST that does not answer.
#include "mds/size_glimpse.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "proto/layout_components.h"

namespace stria::mds {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class SizesGateway : public OstGateway {
 public:
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> sizes;  // (ost, object id) -> size
  uint32_t dead_ost = ~0u;

  Status Destroy(const proto::OstInfo&, const proto::OstDestroyRequest&) override {
    return Status::Ok();
  }
  Result<proto::OstStatfsReply> Statfs(const proto::OstInfo&) override {
    return proto::OstStatfsReply();
  }
  Result<uint64_t> ObjectSize(const proto::OstInfo& ost, const proto::ObjectId& o) override {
    if (ost.index() == dead_ost) return Status(Code::kDisconnected, "OST down");
    auto it = sizes.find({o.ost_idx(), o.object_id()});
    return it == sizes.end() ? 0 : it->second;  // a missing object: 0
  }
};

std::map<uint32_t, proto::OstInfo> Osts(int n) {
  std::map<uint32_t, proto::OstInfo> osts;
  for (int i = 0; i < n; ++i) osts[i].set_index(i);
  return osts;
}

proto::Layout Raid0(uint64_t stripe_size, int count, uint64_t first_id) {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(stripe_size);
  l.set_stripe_count(count);
  for (int i = 0; i < count; ++i) {
    proto::StripeObject* o = l.add_objects();
    o->set_ost_idx(i);
    o->set_object_id(first_id + i);
  }
  return l;
}

TEST(SizeGlimpseTest, TheLargestEndAnyStripeObjectHoldsIsTheSize) {
  SizesGateway gw;
  const proto::Layout l = Raid0(kMiB, 4, 100);
  EXPECT_EQ(*GlimpseObjects(gw, Osts(4), l), 0u) << "no object written";
  // Object 0 holds chunks 0 and 4 (5 bytes of the latter): the file ends 5 bytes into 4 MiB.
  gw.sizes[{0, 100}] = kMiB + 5;
  gw.sizes[{1, 101}] = kMiB;
  gw.sizes[{3, 103}] = kMiB / 2;
  EXPECT_EQ(*GlimpseObjects(gw, Osts(4), l), 4 * kMiB + 5);
  // Object 3 ends later in the file than object 0: its second chunk is the file's eighth.
  gw.sizes[{3, 103}] = kMiB + 7;
  EXPECT_EQ(*GlimpseObjects(gw, Osts(4), l), 7 * kMiB + 7);
}

TEST(SizeGlimpseTest, AComponentCountsOnlyInsideItsExtentAndUninstantiatedOnesNotAtAll) {
  SizesGateway gw;
  proto::Layout l;
  proto::LayoutComponent* first = l.add_components();
  first->set_id(1);
  first->set_start(0);
  first->set_end(2 * kMiB);
  first->set_flags(kLcmeFlInit);
  *first->mutable_layout() = Raid0(kMiB, 1, 10);
  proto::LayoutComponent* second = l.add_components();
  second->set_id(2);
  second->set_start(2 * kMiB);
  second->set_end(kLayoutEof);
  *second->mutable_layout() = Raid0(kMiB, 2, 20);  // not instantiated: its objects are unread
  gw.sizes[{0, 10}] = 3 * kMiB;                     // past its extent: clamped to 2 MiB
  gw.sizes[{0, 20}] = 9 * kMiB;
  EXPECT_EQ(*GlimpseObjects(gw, Osts(2), l), 2 * kMiB);
  second->set_flags(kLcmeFlInit);
  // Objects map file offsets as a plain layout would: file chunk 2 (2 MiB) is the second
  // component's stripe 0 at object offset 1 MiB.
  gw.sizes[{0, 20}] = kMiB + 100;
  EXPECT_EQ(*GlimpseObjects(gw, Osts(2), l), 2 * kMiB + 100);
}

TEST(SizeGlimpseTest, AnUnknownOrSilentOstIsAnError) {
  SizesGateway gw;
  const proto::Layout l = Raid0(kMiB, 4, 100);
  EXPECT_EQ(GlimpseObjects(gw, Osts(2), l).status().code(), Code::kNoOst);
  gw.dead_ost = 2;
  EXPECT_EQ(GlimpseObjects(gw, Osts(4), l).status().code(), Code::kDisconnected);
}

}  // namespace
}  // namespace stria::mds
