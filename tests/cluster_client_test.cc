// libstria against real daemons: an MDS and 2 OSS processes with 2 OSTs each, started once
// for this file. Files are created with explicit layouts (OP_MDS_CREATE), written and read
// through Client's striping, and the OST objects are read back directly to check that every
// byte landed in the object and offset RAID-0 says it should.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/metadata.h"
#include "common/layout.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr uint64_t kS = 64 << 10;  // stripe size used by most tests (the minimum)

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;

ClusterOptions ClusterEnvOptions() {
  ClusterOptions o;
  o.tag = "client";
  o.fsname = "clitest";
  o.mount = false;
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(ClusterEnvOptions(), &g_cluster, &g_client));

class ClusterClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (g_client == nullptr) GTEST_SKIP() << "cluster did not start";
  }

  // Creates /name with the given layout request; checks the layout the MDS returns.
  proto::EntryReply Create(const std::string& name, const proto::Layout& want) {
    proto::CreateRequest req;
    *req.mutable_cred() = RootCred();
    req.set_parent(1);
    req.set_name(name);
    req.set_mode(S_IFREG | 0644);
    *req.mutable_layout() = want;
    proto::EntryReply rep;
    Status st = g_client->MdsCall(proto::OP_MDS_CREATE, req, &rep);
    EXPECT_TRUE(st.ok()) << "create " << name << ": " << st.ToString();
    const proto::Layout& l = rep.layout();
    EXPECT_EQ(l.stripe_count(), want.stripe_count()) << l.ShortDebugString();
    EXPECT_EQ(l.stripe_size(), want.stripe_size()) << l.ShortDebugString();
    EXPECT_EQ(l.objects_size(), want.stripe_count()) << l.ShortDebugString();
    std::set<uint32_t> osts;
    for (const auto& o : l.objects()) {
      EXPECT_LT(o.ost_idx(), static_cast<uint32_t>(g_cluster->num_osts()));
      osts.insert(o.ost_idx());
    }
    EXPECT_EQ(osts.size(), static_cast<size_t>(l.objects_size()))
        << "stripes share an OST: " << l.ShortDebugString();
    EXPECT_EQ(rep.attr().mode() & S_IFMT, static_cast<uint32_t>(S_IFREG));
    EXPECT_NE(rep.attr().ino(), 0u);
    return rep;
  }

  // Checks each stripe object holds exactly the bytes RAID-0 puts there for a file whose
  // content is `file` (zeros = holes). dense: the file was written from 0 to its end, so
  // every object must have exactly the size the file implies.
  void CheckObjects(const proto::Layout& layout, const std::vector<uint8_t>& file, bool dense) {
    StripeGeometry g{layout.stripe_size(), static_cast<uint32_t>(layout.stripe_count())};
    for (int s = 0; s < layout.objects_size(); ++s) {
      uint64_t want_size = ObjectSizeForFileSize(g, s, file.size());
      std::vector<uint8_t> want(want_size, 0);
      for (const auto& e : MapExtent(g, 0, file.size())) {
        if (e.stripe != static_cast<uint32_t>(s)) continue;
        std::copy_n(file.begin() + e.buf_offset, e.length, want.begin() + e.obj_offset);
      }
      auto attr = ObjectAttr(*g_client, layout.objects(s));
      ASSERT_TRUE(attr.ok()) << attr.status().ToString();
      if (dense) {
        EXPECT_EQ(attr->size(), want_size) << "object " << s << " of " << layout.ShortDebugString();
      } else {
        EXPECT_LE(attr->size(), want_size) << "object " << s;
      }
      auto got = ReadObject(*g_client, layout.objects(s));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_LE(got->size(), want.size());
      std::vector<uint8_t> prefix(want.begin(), want.begin() + got->size());
      EXPECT_EQ(FirstDiff(*got, prefix), -1) << "object " << s << " differs";
      // Bytes the object does not hold must be holes in the file.
      EXPECT_TRUE(
          std::all_of(want.begin() + got->size(), want.end(), [](uint8_t b) { return b == 0; }))
          << "object " << s << " is missing written bytes";
    }
  }

  std::vector<uint8_t> ReadAll(const proto::Layout& layout, uint64_t size) {
    std::vector<uint8_t> buf(size + 4096, 0xEE);
    auto n = g_client->Read(layout, size, 0, buf);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (!n.ok()) return {};
    EXPECT_EQ(*n, size) << "short read";
    buf.resize(std::min<size_t>(*n, buf.size()));
    return buf;
  }
};

TEST_F(ClusterClientTest, ConfigListsAllOsts) {
  auto cfg = g_client->GetConfig(/*refresh=*/true);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->fsname(), "clitest");
  std::set<uint32_t> idx;
  for (const auto& o : cfg->osts()) {
    EXPECT_TRUE(o.active()) << o.ShortDebugString();
    EXPECT_FALSE(o.nid().empty());
    EXPECT_TRUE(lnet::Nid::Parse(o.nid()).ok()) << o.nid();
    idx.insert(o.index());
  }
  EXPECT_EQ(idx, (std::set<uint32_t>{0, 1, 2, 3})) << cfg->ShortDebugString();
  for (uint32_t i = 0; i < 4; ++i) {
    auto ost = g_client->Ost(i);
    EXPECT_TRUE(ost.ok()) << "Ost(" << i << "): " << ost.status().ToString();
  }
  EXPECT_FALSE(g_client->Ost(99).ok());
}

struct Case {
  int count;
  uint64_t stripe_size;
  uint64_t size;
};

TEST_F(ClusterClientTest, StripedWriteReadAwkwardSizes) {
  std::vector<Case> cases;
  for (auto [count, ss] : std::vector<std::pair<int, uint64_t>>{{1, kS}, {4, kS}, {3, 2 * kS}}) {
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, ss - 1, ss, ss + 1, count * ss - 1,
                          count * ss + 1, 13 * ss + 12345}) {
      cases.push_back({count, ss, size});
    }
  }
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("count=" + std::to_string(c.count) + " stripe_size=" +
                 std::to_string(c.stripe_size) + " size=" + std::to_string(c.size));
    auto e = Create("awk" + std::to_string(n), Raid0(c.count, c.stripe_size));
    if (HasFailure()) return;
    const proto::Layout& l = e.layout();
    auto data = Pattern(c.size, 100 + n);
    if (n % 2 == 0) {
      if (!data.empty()) {
        Status st = g_client->Write(l, 0, data);
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
    } else {
      // Odd-sized pieces, so writes start and end inside stripes.
      for (size_t off = 0; off < data.size(); off += 10007) {
        size_t len = std::min<size_t>(10007, data.size() - off);
        Status st = g_client->Write(l, off, std::span<const uint8_t>(data.data() + off, len));
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
    }
    auto glimpse = g_client->GlimpseSize(l);
    ASSERT_TRUE(glimpse.ok()) << glimpse.status().ToString();
    EXPECT_EQ(*glimpse, c.size);
    EXPECT_EQ(FirstDiff(ReadAll(l, c.size), data), -1);
    // A read that crosses a stripe boundary from an odd offset.
    if (c.size > c.stripe_size + 5) {
      std::vector<uint8_t> buf(11);
      auto r = g_client->Read(l, c.size, c.stripe_size - 5, buf);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, 11u);
      EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + c.stripe_size - 5));
    }
    // A read past the end returns 0 bytes.
    std::vector<uint8_t> past(100);
    auto r = g_client->Read(l, c.size, c.size + 10, past);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, 0u);
    CheckObjects(l, data, /*dense=*/true);
    ++n;
  }
}

TEST_F(ClusterClientTest, StripeOffsetIsHonoured) {
  auto e = Create("offset2", Raid0(2, kS, /*offset=*/2));
  ASSERT_EQ(e.layout().objects_size(), 2);
  EXPECT_EQ(e.layout().objects(0).ost_idx(), 2u) << e.layout().ShortDebugString();
  auto data = Pattern(3 * kS + 7, 7);
  ASSERT_TRUE(g_client->Write(e.layout(), 0, data).ok());
  CheckObjects(e.layout(), data, true);
}

TEST_F(ClusterClientTest, SparseFileWithHoles) {
  auto e = Create("sparse", Raid0(4, kS));
  const proto::Layout& l = e.layout();
  // Bytes at 0, in the middle of stripe 5, and one byte far out (stripe 41); the rest holes.
  const uint64_t size = 41 * kS + 8;
  std::vector<uint8_t> file(size, 0);
  auto put = [&](uint64_t off, const std::vector<uint8_t>& d) {
    std::copy(d.begin(), d.end(), file.begin() + off);
    Status st = g_client->Write(l, off, d);
    ASSERT_TRUE(st.ok()) << st.ToString();
  };
  put(0, Pattern(100, 1));
  put(5 * kS + 1000, Pattern(kS, 2));  // crosses into stripe 6
  put(size - 1, Pattern(1, 3));
  auto glimpse = g_client->GlimpseSize(l);
  ASSERT_TRUE(glimpse.ok()) << glimpse.status().ToString();
  EXPECT_EQ(*glimpse, size);
  EXPECT_EQ(FirstDiff(ReadAll(l, size), file), -1);
  CheckObjects(l, file, /*dense=*/false);
}

TEST_F(ClusterClientTest, CloseReportsSizeAndSetattrTruncates) {
  auto e = Create("sized", Raid0(2, kS));
  proto::OpenRequest oreq;
  *oreq.mutable_cred() = RootCred();
  oreq.set_ino(e.attr().ino());
  oreq.set_flags(O_RDWR);
  proto::OpenReply orep;
  Status st = g_client->MdsCall(proto::OP_MDS_OPEN, oreq, &orep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(orep.layout().objects_size(), 2);
  const proto::Layout l = orep.layout();
  auto data = Pattern(300'000, 9);
  ASSERT_TRUE(g_client->Write(l, 0, data).ok());

  proto::CloseRequest creq;
  *creq.mutable_cred() = RootCred();
  creq.set_ino(e.attr().ino());
  creq.set_handle(orep.handle());
  creq.set_wrote(true);
  creq.set_size(data.size());
  proto::AttrReply crep;
  st = g_client->MdsCall(proto::OP_MDS_CLOSE, creq, &crep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(crep.attr().size(), data.size());

  auto getattr = [&]() {
    proto::GetattrRequest g;
    *g.mutable_cred() = RootCred();
    g.set_ino(e.attr().ino());
    proto::AttrReply a;
    Status s = g_client->MdsCall(proto::OP_MDS_GETATTR, g, &a);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return a.attr();
  };
  EXPECT_EQ(getattr().size(), data.size());

  // A second writer that knew a smaller size does not shrink the file (max wins).
  ASSERT_TRUE(g_client->MdsCall(proto::OP_MDS_OPEN, oreq, &orep).ok());
  creq.set_handle(orep.handle());
  creq.set_size(1000);
  ASSERT_TRUE(g_client->MdsCall(proto::OP_MDS_CLOSE, creq, &crep).ok());
  EXPECT_EQ(getattr().size(), data.size());

  // Truncate: objects first, then the MDS size exactly.
  auto truncate = [&](uint64_t size) {
    Status s = g_client->TruncateObjects(l, size);
    ASSERT_TRUE(s.ok()) << s.ToString();
    proto::SetattrRequest sreq;
    *sreq.mutable_cred() = RootCred();
    sreq.set_ino(e.attr().ino());
    sreq.set_valid(proto::SETATTR_SIZE);
    sreq.mutable_attr()->set_size(size);
    proto::AttrReply srep;
    s = g_client->MdsCall(proto::OP_MDS_SETATTR, sreq, &srep);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(srep.attr().size(), size);
    EXPECT_EQ(getattr().size(), size);
    auto glimpse = g_client->GlimpseSize(l);
    ASSERT_TRUE(glimpse.ok());
    EXPECT_EQ(*glimpse, size);
  };
  truncate(1000);
  std::vector<uint8_t> want(data.begin(), data.begin() + 1000);
  EXPECT_EQ(FirstDiff(ReadAll(l, 1000), want), -1);
  CheckObjects(l, want, true);
  // Growing again must read zeros past the old end, not the old bytes.
  truncate(200'000);
  want.resize(200'000, 0);
  EXPECT_EQ(FirstDiff(ReadAll(l, 200'000), want), -1);
}

// LookupRequest.open (client/fuse/pre_opens.h): the MDS opens a regular file it finds as
// OP_MDS_OPEN would, with the access checked, and the handle keeps the file when it is
// unlinked until it is closed.
TEST_F(ClusterClientTest, ALookupWithOpenIntentOpensTheFileAsAnOpenWould) {
  client::Metadata md(g_client);
  const uint64_t ino = Create("intent", Raid0(1, kS)).attr().ino();
  auto found = md.LookupOpen(RootCred(), 1, "intent", O_RDONLY);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->attr().ino(), ino);
  ASSERT_TRUE(found->has_open());
  const uint64_t handle = found->open().handle();
  EXPECT_NE(handle, 0u);
  EXPECT_EQ(found->open().layout().objects_size(), 1);

  ASSERT_TRUE(md.Unlink(RootCred(), 1, "intent", /*is_dir=*/false).ok());
  EXPECT_TRUE(md.Getattr(RootCred(), ino).ok()) << "kept for the lookup's open";
  client::Metadata::CloseArgs close;
  close.ino = ino;
  close.handle = handle;
  ASSERT_TRUE(md.Close(RootCred(), close).ok());
  Status gone;
  for (int i = 0; i < 500 && gone.ok(); ++i) {
    gone = md.Getattr(RootCred(), ino).status();
    if (gone.ok()) usleep(10'000);
  }
  EXPECT_EQ(gone.code(), Code::kNoEnt) << "gone with its last close";

  // What the open refuses is looked up without one; a write is not an intent.
  proto::Credentials user;
  user.set_uid(4242);
  user.set_gid(4242);
  Create("private", Raid0(1, kS));
  proto::SetattrRequest chmod;
  chmod.set_ino(md.Lookup(RootCred(), 1, "private")->attr().ino());
  chmod.set_valid(proto::SETATTR_MODE);
  chmod.mutable_attr()->set_mode(S_IFREG | 0600);
  ASSERT_TRUE(md.Setattr(RootCred(), chmod).ok());
  auto refused = md.LookupOpen(user, 1, "private", O_RDONLY);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_NE(refused->attr().ino(), 0u);
  EXPECT_FALSE(refused->has_open()) << "mode 0600: no read access for uid 4242";
  client::Metadata::CreateArgs mkdir;
  mkdir.parent = 1;
  mkdir.name = "intent-dir";
  mkdir.mode = S_IFDIR | 0755;
  ASSERT_TRUE(md.Create(RootCred(), mkdir).ok());
  auto dir = md.LookupOpen(RootCred(), 1, "intent-dir", O_RDONLY);
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_FALSE(dir->has_open()) << "directories are opened on their own";
  EXPECT_EQ(md.LookupOpen(RootCred(), 1, "private", O_RDWR).status().code(), Code::kInval);
}

// A batch of lookups with an open intent (client/entry_batches.h): each regular file found
// is opened, as it would be alone, with its own handle; a directory and a missing name are
// answered without one.
TEST_F(ClusterClientTest, ABatchOfLookupsWithOpenIntentOpensEachFileFound) {
  client::Metadata md(g_client);
  std::map<std::string, uint64_t> inos;
  for (const char* name : {"bo-a", "bo-b", "bo-c"})
    inos[name] = Create(name, Raid0(1, kS)).attr().ino();
  client::Metadata::CreateArgs mkdir;
  mkdir.parent = 1;
  mkdir.name = "bo-dir";
  mkdir.mode = S_IFDIR | 0755;
  ASSERT_TRUE(md.Create(RootCred(), mkdir).ok());
  proto::LookupRequest req;
  *req.mutable_cred() = RootCred();
  req.set_parent(1);
  req.set_name("bo-a");
  for (const char* name : {"bo-b", "bo-missing", "bo-dir", "bo-c"}) req.add_more_names(name);
  req.set_negative_ok(true);
  req.set_open(true);
  req.set_open_flags(O_RDONLY);
  proto::EntryReply rep;
  Status st = g_client->MdsCall(proto::OP_MDS_LOOKUP, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rep.codes_size(), 5);
  ASSERT_EQ(rep.more_size(), 4);
  std::set<uint64_t> handles;
  auto opened = [&](const proto::EntryReply& r, const std::string& name) {
    EXPECT_EQ(r.attr().ino(), inos[name]) << name;
    ASSERT_TRUE(r.has_open()) << name;
    EXPECT_EQ(r.open().attr().ino(), inos[name]) << name;
    EXPECT_NE(r.open().handle(), 0u) << name;
    handles.insert(r.open().handle());
  };
  opened(rep, "bo-a");
  opened(rep.more(0), "bo-b");
  EXPECT_EQ(rep.more(1).attr().ino(), 0u);
  EXPECT_FALSE(rep.more(1).has_open()) << "a missing name";
  EXPECT_NE(rep.more(2).attr().ino(), 0u);
  EXPECT_FALSE(rep.more(2).has_open()) << "directories are opened on their own";
  opened(rep.more(3), "bo-c");
  EXPECT_EQ(handles.size(), 3u) << "each file its own handle";

  // Each handle keeps its file when unlinked, as an open does.
  ASSERT_TRUE(md.Unlink(RootCred(), 1, "bo-b", /*is_dir=*/false).ok());
  EXPECT_TRUE(md.Getattr(RootCred(), inos["bo-b"]).ok()) << "kept for the batch's open";
  for (const proto::EntryReply* r :
       std::vector<const proto::EntryReply*>{&rep, &rep.more(0), &rep.more(3)}) {
    client::Metadata::CloseArgs close;
    close.ino = r->attr().ino();
    close.handle = r->open().handle();
    EXPECT_TRUE(md.Close(RootCred(), close).ok());
  }

  // Through the client: threads that look files up with an open intent in one directory at
  // once are batched, and each gets its own file's open.
  constexpr int kThreads = 8, kEach = 25;
  std::vector<std::string> names;
  for (int i = 0; i < kThreads * kEach; ++i) {
    names.push_back("bo-f" + std::to_string(i));
    inos[names.back()] = Create(names.back(), Raid0(1, kS)).attr().ino();
  }
  const uint64_t batched_before = g_client->lookup_batches().counters().batched;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string& name = names[static_cast<size_t>(t * kEach + i)];
        auto got = md.LookupOpen(RootCred(), 1, name, O_RDONLY);
        if (!got.ok() || !got->has_open() || got->attr().ino() != inos.at(name) ||
            got->open().attr().ino() != inos.at(name)) {
          wrong.fetch_add(1);
          continue;
        }
        client::Metadata::CloseArgs close;
        close.ino = got->attr().ino();
        close.handle = got->open().handle();
        if (!md.Close(RootCred(), close).ok()) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(g_client->lookup_batches().counters().batched, batched_before)
      << "8 threads' lookups of one directory never waited for each other";
}

TEST_F(ClusterClientTest, UnlinkDestroysObjects) {
  auto e = Create("doomed", Raid0(4, kS));
  auto data = Pattern(4 * kS, 11);
  ASSERT_TRUE(g_client->Write(e.layout(), 0, data).ok());
  proto::UnlinkRequest ureq;
  *ureq.mutable_cred() = RootCred();
  ureq.set_parent(1);
  ureq.set_name("doomed");
  proto::UnlinkReply urep;
  Status st = g_client->MdsCall(proto::OP_MDS_UNLINK, ureq, &urep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(urep.attr().nlink(), 0u);
  proto::LookupRequest lreq;
  *lreq.mutable_cred() = RootCred();
  lreq.set_parent(1);
  lreq.set_name("doomed");
  proto::EntryReply lrep;
  EXPECT_EQ(g_client->MdsCall(proto::OP_MDS_LOOKUP, lreq, &lrep).code(), Code::kNoEnt);
  // Objects are freed asynchronously but surely: wait (bounded) until every one is gone.
  for (const auto& o : e.layout().objects()) {
    bool gone = false;
    for (int i = 0; i < 600 && !gone; ++i) {
      auto a = ObjectAttr(*g_client, o);
      gone = !a.ok() || !a->exists();
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(gone) << "object still exists 60 s after unlink: " << o.ShortDebugString();
  }
}

TEST_F(ClusterClientTest, StatfsSumsOsts) {
  auto osts = g_client->OstStatfs();
  ASSERT_TRUE(osts.ok()) << osts.status().ToString();
  ASSERT_EQ(osts->size(), 4u);
  uint64_t total = 0, free = 0;
  for (size_t i = 0; i < osts->size(); ++i) {
    const auto& o = (*osts)[i];
    EXPECT_EQ(o.ost_idx(), i) << "OstStatfs not in index order";
    EXPECT_GT(o.bsize(), 0u);
    EXPECT_GT(o.blocks(), 0u);
    EXPECT_LE(o.bfree(), o.blocks());
    EXPECT_LE(o.bavail(), o.bfree());
    total += o.blocks() * o.bsize();
    free += o.bfree() * o.bsize();
  }
  proto::StatfsRequest req;
  *req.mutable_cred() = RootCred();
  proto::StatfsReply rep;
  Status st = g_client->MdsCall(proto::OP_MDS_STATFS, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_GT(rep.bsize(), 0u);
  uint64_t mds_total = rep.blocks() * rep.bsize();
  uint64_t mds_free = rep.bfree() * rep.bsize();
  // All OSTs share this machine's disk, so the totals must match (up to block rounding);
  // free space moves a little as other tests write.
  EXPECT_NEAR(static_cast<double>(mds_total), static_cast<double>(total),
              4.0 * rep.bsize() + 4.0 * (1 << 20));
  EXPECT_NEAR(static_cast<double>(mds_free), static_cast<double>(free), total * 0.01);
  EXPECT_LE(rep.bavail(), rep.bfree());
  EXPECT_GT(rep.namelen(), 0u);
  EXPECT_GT(rep.files(), 0u);
}

TEST_F(ClusterClientTest, BadLayoutRequestsAreRefused) {
  for (auto bad : {Raid0(4, 1000), Raid0(99, kS), Raid0(1, kS, 77)}) {
    proto::CreateRequest req;
    *req.mutable_cred() = RootCred();
    req.set_parent(1);
    req.set_name("bad" + std::to_string(bad.stripe_size()) + "_" +
                 std::to_string(bad.stripe_count()) + "_" + std::to_string(bad.stripe_offset()));
    req.set_mode(S_IFREG | 0644);
    *req.mutable_layout() = bad;
    proto::EntryReply rep;
    Status st = g_client->MdsCall(proto::OP_MDS_CREATE, req, &rep);
    if (bad.stripe_count() == 99 && st.ok()) {
      // Lustre clamps an over-large count to the OSTs available; accept that.
      EXPECT_LE(rep.layout().objects_size(), 4);
      continue;
    }
    EXPECT_FALSE(st.ok()) << "accepted " << bad.ShortDebugString() << " -> "
                          << rep.layout().ShortDebugString();
  }
  // The MDS keeps serving.
  auto cfg = g_client->GetConfig(true);
  EXPECT_TRUE(cfg.ok());
}

}  // namespace
}  // namespace stria::testing
