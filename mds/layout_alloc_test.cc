// Layout allocation: round robin, clamping, explicit offsets, object id persistence.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>

#include "mds/internal/layout_alloc.h"
#include "mds/mds_test_util.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

Result<proto::Layout> CreateWith(MdsFixture& f, const std::string& name, int32_t count,
                                 int32_t offset, uint64_t size = 0) {
  proto::CreateRequest req;
  req.set_parent(kRootIno);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  req.mutable_layout()->set_stripe_count(count);
  req.mutable_layout()->set_stripe_offset(offset);
  req.mutable_layout()->set_stripe_size(size);
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(Create(f.ns(), req, &rep));
  return rep.layout();
}

TEST(LayoutAllocTest, RoundRobinSpreadsStarts) {
  MdsFixture f;
  f.AddOsts(4);
  std::map<uint32_t, int> starts;
  for (int i = 0; i < 8; ++i) {
    auto file = f.Mkfile(kRootIno, "f" + std::to_string(i));
    ASSERT_EQ(file.layout().objects_size(), 1);
    EXPECT_EQ(file.layout().stripe_count(), 1);
    EXPECT_EQ(file.layout().stripe_size(), 4u << 20);
    EXPECT_EQ(file.layout().pattern(), proto::PATTERN_RAID0);
    starts[file.layout().objects(0).ost_idx()]++;
  }
  ASSERT_EQ(starts.size(), 4u);
  for (auto& [idx, n] : starts) EXPECT_EQ(n, 2) << "OST " << idx;
}

TEST(LayoutAllocTest, CountClampingAllAndOffset) {
  MdsFixture f;
  f.AddOsts(3);
  auto all = CreateWith(f, "all", -1, -1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->objects_size(), 3);
  std::set<uint32_t> osts;
  for (const auto& o : all->objects()) osts.insert(o.ost_idx());
  EXPECT_EQ(osts.size(), 3u);  // distinct OSTs

  auto clamped = CreateWith(f, "clamped", 10, -1);
  ASSERT_TRUE(clamped.ok());
  EXPECT_EQ(clamped->stripe_count(), 3);
  EXPECT_EQ(clamped->objects_size(), 3);

  auto at2 = CreateWith(f, "at2", 2, 2, 1 << 20);
  ASSERT_TRUE(at2.ok());
  ASSERT_EQ(at2->objects_size(), 2);
  EXPECT_EQ(at2->objects(0).ost_idx(), 2u);
  EXPECT_EQ(at2->objects(1).ost_idx(), 0u);  // wraps around
  EXPECT_EQ(at2->stripe_offset(), 2);
  EXPECT_EQ(at2->stripe_size(), 1u << 20);

  EXPECT_EQ(CreateWith(f, "bad_off", 1, 7).status().code(), Code::kInval);
  EXPECT_EQ(CreateWith(f, "bad_size", 1, -1, 12345).status().code(), Code::kInval);
  EXPECT_EQ(CreateWith(f, "bad_count", -5, -1).status().code(), Code::kInval);
  EXPECT_EQ(CreateWith(f, "bad_off2", 1, -3).status().code(), Code::kInval);
  EXPECT_FALSE(f.Lookup(kRootIno, "bad_off").ok());  // nothing created on failure
}

TEST(LayoutAllocTest, ObjectIdsNeverReusedAcrossReopen) {
  MdsFixture f;
  f.AddOsts(2);
  std::set<std::pair<uint32_t, uint64_t>> seen;
  auto take = [&](const proto::Layout& l) {
    for (const auto& o : l.objects()) {
      EXPECT_TRUE(seen.insert({o.ost_idx(), o.object_id()}).second)
          << "object reused: " << o.ost_idx() << ":" << o.object_id();
    }
  };
  for (int i = 0; i < 10; ++i) take(*CreateWith(f, "a" + std::to_string(i), -1, -1));
  // Unlinked files' ids must not come back either.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.Unlink(kRootIno, "a" + std::to_string(i), false).ok());
  f.Reopen();
  for (int i = 0; i < 10; ++i) take(*CreateWith(f, "b" + std::to_string(i), -1, -1));
  f.Reopen();
  f.AddOsts(2);  // re-registration (heartbeat) must not reset the counters
  for (int i = 0; i < 10; ++i) take(*CreateWith(f, "c" + std::to_string(i), -1, -1));
  EXPECT_EQ(seen.size(), 60u);
}

TEST(LayoutAllocTest, InactiveOstsAreSkipped) {
  MdsFixture f;
  f.AddOsts(2);
  // Deactivate OST 1 directly in the in-memory table (as an operator would).
  {
    std::lock_guard lock(f.ns().mutex());
    f.ns().osts_locked().at(1).info.set_active(false);
  }
  for (int i = 0; i < 4; ++i) {
    auto l = CreateWith(f, "f" + std::to_string(i), -1, -1);
    ASSERT_TRUE(l.ok());
    ASSERT_EQ(l->objects_size(), 1);
    EXPECT_EQ(l->objects(0).ost_idx(), 0u);
  }
  EXPECT_EQ(CreateWith(f, "on1", 1, 1).status().code(), Code::kInval);
}

TEST(LayoutAllocTest, SilentOstsGetNoNewObjects) {
  MdsFixture f;
  f.AddOsts(3);
  {
    std::lock_guard lock(f.ns().mutex());
    f.ns().osts_locked().at(2).info.set_last_seen_ns(1);  // silent for decades
  }
  for (int i = 0; i < 6; ++i) {
    auto l = CreateWith(f, "f" + std::to_string(i), -1, -1);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->objects_size(), 2);
    for (const auto& o : l->objects()) EXPECT_NE(o.ost_idx(), 2u);
  }
  auto on2 = CreateWith(f, "on2", 1, 2);  // explicitly asked for: allowed
  ASSERT_TRUE(on2.ok());
  EXPECT_EQ(on2->objects(0).ost_idx(), 2u);
  {
    std::lock_guard lock(f.ns().mutex());
    for (auto& [idx, st] : f.ns().osts_locked()) st.info.set_last_seen_ns(1);
  }
  auto all = CreateWith(f, "all", -1, -1);  // none fresh: all active ones
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->objects_size(), 3);
}

// A heartbeat from OST `idx` reporting `free_bytes` of `total` bytes free.
void Heartbeat(MdsFixture& f, uint32_t idx, uint64_t free_bytes, uint64_t total) {
  proto::RegisterOstRequest req;
  req.set_fsname(f.ns().fsname());
  req.set_index(idx);
  req.set_uuid("ost" + std::to_string(idx));
  req.set_nid("127.0.0.1@tcp:" + std::to_string(9000 + idx));
  req.set_bytes_free(free_bytes);
  req.set_bytes_total(total);
  proto::RegisterOstReply rep;
  Status st = RegisterOst(f.ns(), req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

TEST(LayoutAllocTest, NearlyFullThresholdIsSmallerOf64MiBAndOneInAThousand) {
  proto::OstInfo i;
  EXPECT_FALSE(OstNearlyFull(i));  // never reported: not full
  i.set_bytes_total(1ull << 40);    // 1 TiB: the reserve is 64 MiB
  i.set_bytes_free((64ull << 20) - 1);
  EXPECT_TRUE(OstNearlyFull(i));
  i.set_bytes_free(64ull << 20);
  EXPECT_FALSE(OstNearlyFull(i));
  i.set_bytes_total(32ull << 20);  // 32 MiB: the reserve is 0.1%, 33554 bytes
  i.set_bytes_free(33554 - 1);
  EXPECT_TRUE(OstNearlyFull(i));
  i.set_bytes_free(33554);
  EXPECT_FALSE(OstNearlyFull(i));
  i.set_bytes_free(0);
  EXPECT_TRUE(OstNearlyFull(i));
}

TEST(LayoutAllocTest, FullOstsGetNoNewObjectsUntilEveryOstIsFull) {
  MdsFixture f;
  f.AddOsts(4);
  constexpr uint64_t kTotal = 1ull << 30;
  for (uint32_t i = 0; i < 4; ++i) Heartbeat(f, i, kTotal / 2, kTotal);
  Heartbeat(f, 1, 1 << 20, kTotal);  // 1 MiB of 1 GiB free: below the 0.1% reserve
  std::map<uint32_t, int> used;
  for (int i = 0; i < 12; ++i) {
    auto l = CreateWith(f, "one" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    used[l->objects(0).ost_idx()]++;
  }
  EXPECT_EQ(used.count(1), 0u) << "a full OST got a new object";
  EXPECT_EQ(used.size(), 3u);
  auto wide = CreateWith(f, "wide", -1, -1);  // every OST with room
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->objects_size(), 3);
  for (const auto& o : wide->objects()) EXPECT_NE(o.ost_idx(), 1u);
  auto four = CreateWith(f, "four", 4, -1);  // clamped to the OSTs with room
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->objects_size(), 3);
  auto asked = CreateWith(f, "asked", 1, 1);  // an explicit offset is honoured
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->objects(0).ost_idx(), 1u);

  // Space comes back: OST 1 is used again.
  Heartbeat(f, 1, kTotal / 2, kTotal);
  std::set<uint32_t> again;
  for (int i = 0; i < 8; ++i) {
    auto l = CreateWith(f, "back" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok());
    again.insert(l->objects(0).ost_idx());
  }
  EXPECT_EQ(again.size(), 4u);

  // Every OST full: the allocator falls back to all of them rather than refusing.
  for (uint32_t i = 0; i < 4; ++i) Heartbeat(f, i, 0, kTotal);
  std::set<uint32_t> full;
  for (int i = 0; i < 8; ++i) {
    auto l = CreateWith(f, "full" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    full.insert(l->objects(0).ost_idx());
  }
  EXPECT_EQ(full.size(), 4u);
}

}  // namespace
}  // namespace stria::mds

namespace stria::mds {
namespace {

Status SetParamValue(MdsFixture& f, const std::string& name, const std::string& value) {
  proto::SetParamRequest req;
  req.set_name(name);
  req.set_value(value);
  proto::SetParamReply rep;
  return SetParam(f.ns(), req, &rep);
}

TEST(LayoutAllocTest, ImbalancedFreeSpaceFavoursTheEmptierOsts) {
  MdsFixture f;
  f.AddOsts(4);
  constexpr uint64_t kTotal = 100ull << 30;
  Heartbeat(f, 0, kTotal / 10, kTotal);  // 10% free
  for (uint32_t i = 1; i < 4; ++i) Heartbeat(f, i, kTotal * 9 / 10, kTotal);  // 90% free
  std::map<uint32_t, int> used;
  constexpr int kFiles = 400;
  for (int i = 0; i < kFiles; ++i) {
    auto l = CreateWith(f, "q" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    used[l->objects(0).ost_idx()]++;
  }
  // Weighted by free space, OST 0 expects 10/280 of the files (about 14), round robin 100.
  EXPECT_LT(used[0], kFiles / 10) << "the fuller OST got its round-robin share";
  EXPECT_GT(used[0], 0) << "a fuller OST keeps a chance";
  for (uint32_t i = 1; i < 4; ++i) EXPECT_GT(used[i], kFiles / 5) << "OST " << i;
  // Wide stripes are still on distinct OSTs.
  auto wide = CreateWith(f, "wide", 3, -1);
  ASSERT_TRUE(wide.ok());
  std::set<uint32_t> distinct;
  for (const auto& o : wide->objects()) distinct.insert(o.ost_idx());
  EXPECT_EQ(distinct.size(), 3u);

  // A threshold above the imbalance (90 - 10 = 80 points of 90: 88%) restores round robin.
  ASSERT_TRUE(SetParamValue(f, "lod.*.qos_threshold_rr", "90").ok());
  used.clear();
  for (int i = 0; i < 8; ++i) {
    auto l = CreateWith(f, "rr" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok());
    used[l->objects(0).ost_idx()]++;
  }
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(used[i], 2) << "OST " << i;
  EXPECT_EQ(SetParamValue(f, "lod.*.qos_threshold_rr", "101").code(), Code::kInval);
  EXPECT_EQ(SetParamValue(f, "lod.*.qos_threshold_rr", "x").code(), Code::kInval);
}

TEST(LayoutAllocTest, BalancedOrUnreportedSpaceIsRoundRobin) {
  std::map<uint32_t, OstState> osts;
  for (uint32_t i = 0; i < 3; ++i) {
    osts[i].info.set_bytes_total(1000);
    osts[i].info.set_bytes_free(900);
  }
  EXPECT_FALSE(FreeSpaceImbalanced(osts, {0, 1, 2}, 17));
  osts[2].info.set_bytes_free(740);  // 160 of 900: 17.8% > 17%
  EXPECT_TRUE(FreeSpaceImbalanced(osts, {0, 1, 2}, 17));
  EXPECT_FALSE(FreeSpaceImbalanced(osts, {0, 1, 2}, 18));
  EXPECT_FALSE(FreeSpaceImbalanced(osts, {0, 1}, 0)) << "equal free space";
  osts[1].info.set_bytes_total(0);  // never reported
  EXPECT_FALSE(FreeSpaceImbalanced(osts, {0, 1, 2}, 17));
  EXPECT_FALSE(FreeSpaceImbalanced(osts, {2}, 0)) << "one candidate";
}

TEST(LayoutAllocTest, DeactivatedOstGetsNoNewObjects) {
  MdsFixture f;
  f.AddOsts(4);
  ASSERT_TRUE(SetParamValue(f, "osp.testfs-OST0002-osc-MDT0000.active", "0").ok());
  std::set<uint32_t> used;
  for (int i = 0; i < 12; ++i) {
    auto l = CreateWith(f, "d" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok());
    used.insert(l->objects(0).ost_idx());
  }
  EXPECT_EQ(used, (std::set<uint32_t>{0, 1, 3}));
  auto all = CreateWith(f, "all", -1, -1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->objects_size(), 3);
  EXPECT_EQ(CreateWith(f, "asked", 1, 2).status().code(), Code::kInval) << "-i a deactivated OST";
  EXPECT_EQ(SetParamValue(f, "osp.testfs-OST0002-osc-MDT0000.active", "2").code(), Code::kInval);
  // A glob deactivates every OST; the more specific name re-activates one.
  ASSERT_TRUE(SetParamValue(f, "osp.*.active", "0").ok());
  ASSERT_TRUE(SetParamValue(f, "osp.testfs-OST0002-osc-MDT0000.active", "1").ok());
  for (int i = 0; i < 4; ++i) {
    auto l = CreateWith(f, "g" + std::to_string(i), 1, -1);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->objects(0).ost_idx(), 2u);
  }
  ASSERT_TRUE(SetParamValue(f, "osp.testfs-OST0002-osc-MDT0000.active", "0").ok());
  EXPECT_EQ(CreateWith(f, "none", 1, -1).status().code(), Code::kNoSpc);
}

}  // namespace
}  // namespace stria::mds
