// OST pools: the MGS's pool commands with Lustre's errors, the pools in the configuration,
// and allocation restricted to a pool (plain, composite and directory defaults).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include "mds/mds_test_util.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "proto/layout_components.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;
using testing::Root;

Status Pool(MdsFixture& f, proto::PoolCommand cmd, const std::string& name,
            std::vector<uint32_t> osts = {}, const std::string& fsname = "testfs") {
  proto::PoolRequest req;
  req.set_command(cmd);
  req.set_fsname(fsname);
  req.set_pool(name);
  for (uint32_t i : osts) req.add_osts(i);
  proto::PoolReply rep;
  return PoolOp(f.ns(), req, &rep);
}

Result<proto::Layout> CreateIn(MdsFixture& f, uint64_t parent, const std::string& name,
                               const proto::Layout* layout) {
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(parent);
  req.set_name(name);
  req.set_mode(S_IFREG | 0644);
  if (layout) *req.mutable_layout() = *layout;
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(Create(f.ns(), req, &rep));
  return rep.layout();
}

proto::Layout InPool(const std::string& pool, int32_t count, int32_t offset = -1) {
  proto::Layout l;
  l.set_pool(pool);
  l.set_stripe_count(count);
  l.set_stripe_offset(offset);
  return l;
}

TEST(PoolTest, CommandsWithLustresErrors) {
  MdsFixture f;
  f.AddOsts(4);
  ASSERT_TRUE(Pool(f, proto::POOL_NEW, "fast").ok());
  EXPECT_EQ(Pool(f, proto::POOL_NEW, "fast").code(), Code::kExist);
  EXPECT_EQ(Pool(f, proto::POOL_NEW, "bad.name").code(), Code::kInval);
  EXPECT_EQ(Pool(f, proto::POOL_NEW, "sixteen-chars-xx").code(), Code::kInval);
  EXPECT_EQ(Pool(f, proto::POOL_NEW, "x", {}, "otherfs").code(), Code::kNoEnt);
  ASSERT_TRUE(Pool(f, proto::POOL_ADD, "fast", {1, 3}).ok());
  EXPECT_EQ(Pool(f, proto::POOL_ADD, "fast", {3}).code(), Code::kExist);
  EXPECT_EQ(Pool(f, proto::POOL_ADD, "fast", {9}).code(), Code::kNoEnt) << "unknown OST";
  EXPECT_EQ(Pool(f, proto::POOL_ADD, "nosuch", {0}).code(), Code::kNoEnt);
  EXPECT_EQ(Pool(f, proto::POOL_REMOVE, "fast", {0}).code(), Code::kNoEnt) << "not a member";
  EXPECT_EQ(Pool(f, proto::POOL_DESTROY, "fast").code(), Code::kNotEmpty);
  f.Reopen();  // pools are the MGS's persistent state
  proto::FsConfig config;
  ASSERT_TRUE(GetConfig(f.ns(), proto::GetConfigRequest(), &config).ok());
  ASSERT_EQ(config.pools_size(), 1);
  EXPECT_EQ(config.pools(0).name(), "fast");
  EXPECT_EQ(std::vector<uint32_t>(config.pools(0).osts().begin(), config.pools(0).osts().end()),
            (std::vector<uint32_t>{1, 3}));
  ASSERT_TRUE(Pool(f, proto::POOL_REMOVE, "fast", {1, 3}).ok());
  ASSERT_TRUE(Pool(f, proto::POOL_DESTROY, "fast").ok());
  proto::FsConfig after;
  ASSERT_TRUE(GetConfig(f.ns(), proto::GetConfigRequest(), &after).ok());
  EXPECT_EQ(after.pools_size(), 0);
  EXPECT_GT(after.config_generation(), config.config_generation());
}

TEST(PoolTest, AllocationStaysInThePool) {
  MdsFixture f;
  f.AddOsts(4);
  ASSERT_TRUE(Pool(f, proto::POOL_NEW, "fast").ok());
  ASSERT_TRUE(Pool(f, proto::POOL_ADD, "fast", {1, 3}).ok());
  std::set<uint32_t> used;
  for (int i = 0; i < 8; ++i) {
    proto::Layout req = InPool("fast", 1);
    auto l = CreateIn(f, kRootIno, "f" + std::to_string(i), &req);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    EXPECT_EQ(l->pool(), "fast");
    for (const auto& o : l->objects()) used.insert(o.ost_idx());
  }
  EXPECT_EQ(used, (std::set<uint32_t>{1, 3})) << "round robin over the pool only";
  proto::Layout all = InPool("fast", -1);
  auto wide = CreateIn(f, kRootIno, "wide", &all);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->objects_size(), 2) << "-c -1 is every OST of the pool";
  proto::Layout outside = InPool("fast", 1, /*offset=*/0);
  EXPECT_EQ(CreateIn(f, kRootIno, "outside", &outside).status().code(), Code::kInval);
  proto::Layout missing = InPool("nosuch", 1);
  EXPECT_EQ(CreateIn(f, kRootIno, "missing", &missing).status().code(), Code::kInval);
  ASSERT_TRUE(Pool(f, proto::POOL_NEW, "empty").ok());
  proto::Layout empty = InPool("empty", 1);
  EXPECT_EQ(CreateIn(f, kRootIno, "empty", &empty).status().code(), Code::kNoSpc);

  // A directory default with a pool, and a composite layout with a pooled component.
  auto dir = f.Mkdir(kRootIno, "hot");
  proto::SetDefaultLayoutRequest sr;
  *sr.mutable_cred() = Root();
  sr.set_ino(dir.attr().ino());
  *sr.mutable_layout() = InPool("nosuch", 1);
  proto::SetDefaultLayoutReply srep;
  EXPECT_EQ(SetDefaultLayout(f.ns(), sr, &srep).code(), Code::kInval);
  *sr.mutable_layout() = InPool("fast", 2);
  ASSERT_TRUE(SetDefaultLayout(f.ns(), sr, &srep).ok());
  auto inherited = CreateIn(f, dir.attr().ino(), "x", nullptr);
  ASSERT_TRUE(inherited.ok());
  std::set<uint32_t> osts;
  for (const auto& o : inherited->objects()) osts.insert(o.ost_idx());
  EXPECT_EQ(osts, (std::set<uint32_t>{1, 3}));
  proto::Layout pfl;
  auto* a = pfl.add_components();
  a->set_end(1 << 20);
  a->mutable_layout()->set_stripe_count(1);
  a->mutable_layout()->set_stripe_size(1 << 20);
  a->mutable_layout()->set_stripe_offset(-1);
  a->mutable_layout()->set_pool("fast");
  auto* b = pfl.add_components();
  b->set_start(1 << 20);
  b->set_end(kLayoutEof);
  b->mutable_layout()->set_stripe_count(1);
  b->mutable_layout()->set_stripe_offset(-1);
  auto composite = CreateIn(f, kRootIno, "pfl", &pfl);
  ASSERT_TRUE(composite.ok()) << composite.status().ToString();
  const auto& first = composite->components(0).layout();
  ASSERT_EQ(first.objects_size(), 1);
  EXPECT_TRUE(first.objects(0).ost_idx() == 1 || first.objects(0).ost_idx() == 3);
}

}  // namespace
}  // namespace stria::mds
