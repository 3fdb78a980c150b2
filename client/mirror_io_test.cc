// MirroredIo over in-memory OSTs whose failures the test injects at the transport seam (an
// OST that does not answer, one whose bytes fail their checksum) and an MDS stand-in that
// applies OP_MDS_MIRROR STALE to its copy of the layout as the real one does
// (proto/layout_mirrors.h): writes complete on the mirror left and mark the other once,
// reads fail over and report damage, fsync marks a mirror it cannot sync, and a file whose
// every mirror is down fails as an unmirrored one.
#include "client/mirror_io.h"

#include <gtest/gtest.h>
#include <sys/uio.h>

#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "client/internal/thread_pool.h"
#include "proto/layout_mirrors.h"
#include "tests/harness/test_util.h"

namespace stria::client {
namespace {

constexpr uint64_t M = 1 << 20;

class FakeCluster : public OstTransport {
 public:
  explicit FakeCluster(proto::Layout layout) : layout_(std::move(layout)) {}

  Status OstCallRaw(uint32_t ost, uint16_t opcode, std::string_view request, std::string* reply,
                    const lnet::CallBulk& bulk, int deadline_ms) override {
    std::lock_guard lock(mu_);
    deadlines_.push_back(deadline_ms);
    if (down_.count(ost)) return Status(Code::kDisconnected, "connection refused");
    switch (opcode) {
      case proto::OP_OST_WRITE: {
        proto::OstIoRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        ++writes_[ost];
        auto& obj = objects_[{ost, req.object().object_id()}];
        if (obj.size() < req.offset() + req.length()) obj.resize(req.offset() + req.length());
        uint64_t pos = req.offset();
        for (const iovec& v : bulk.out) {
          std::memcpy(obj.data() + pos, v.iov_base, v.iov_len);
          pos += v.iov_len;
        }
        proto::OstIoReply rep;
        rep.set_length(req.length());
        rep.SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_READ: {
        proto::OstIoRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        ++reads_[ost];
        if (corrupt_.count(ost)) return Status(Code::kCorrupt, "checksum mismatch");
        const auto& obj = objects_[{ost, req.object().object_id()}];
        uint64_t n = 0;
        if (req.offset() < obj.size()) {
          n = std::min<uint64_t>(req.length(), obj.size() - req.offset());
        }
        std::memcpy(bulk.in.data(), obj.data() + req.offset(), n);
        *bulk.in_len = n;
        proto::OstIoReply rep;
        rep.set_length(n);
        rep.SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_SYNC:
        ++syncs_[ost];
        proto::OstIoReply().SerializeToString(reply);
        return Status::Ok();
    }
    return Status(Code::kBadOpcode, "unexpected opcode");
  }

  // The MDS: OP_MDS_MIRROR STALE as mds/ops/mirror.cc does it.
  Status MdsCallBulk(uint16_t opcode, std::string_view request, std::string* reply,
                     const lnet::CallBulk&, int) override {
    std::lock_guard lock(mu_);
    if (opcode != proto::OP_MDS_MIRROR) return Status(Code::kBadOpcode, "unexpected MDS op");
    proto::MirrorRequest req;
    req.ParseFromArray(request.data(), static_cast<int>(request.size()));
    marks_.push_back(req);
    if (!StaleCovers(layout_, req.mirror_id(), req.start(), req.end())) {
      if (!OtherMirrorHolds(layout_, req.mirror_id(), req.start(), req.end())) {
        return Status(Code::kIO, "the only good copy");
      }
      AddStaleRange(&layout_, req.mirror_id(), req.start(), req.end());
      layout_.set_generation(layout_.generation() + 1);
    }
    proto::MirrorReply rep;
    *rep.mutable_layout() = layout_;
    rep.SerializeToString(reply);
    return Status::Ok();
  }

  void SetDown(uint32_t ost, bool down) {
    std::lock_guard lock(mu_);
    if (down) {
      down_.insert(ost);
    } else {
      down_.erase(ost);
    }
  }
  void SetCorrupt(uint32_t ost) {
    std::lock_guard lock(mu_);
    corrupt_.insert(ost);
  }
  int writes(uint32_t ost) {
    std::lock_guard lock(mu_);
    return writes_[ost];
  }
  int reads(uint32_t ost) {
    std::lock_guard lock(mu_);
    return reads_[ost];
  }
  int syncs(uint32_t ost) {
    std::lock_guard lock(mu_);
    return syncs_[ost];
  }
  std::vector<proto::MirrorRequest> marks() {
    std::lock_guard lock(mu_);
    return marks_;
  }
  proto::Layout layout() {
    std::lock_guard lock(mu_);
    return layout_;
  }
  std::vector<int> deadlines() {
    std::lock_guard lock(mu_);
    return deadlines_;
  }

 private:
  std::mutex mu_;
  proto::Layout layout_;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint8_t>> objects_;
  std::set<uint32_t> down_, corrupt_;
  std::map<uint32_t, int> writes_, reads_, syncs_;
  std::vector<proto::MirrorRequest> marks_;
  std::vector<int> deadlines_;
};

// Two mirrors of one 1 MiB stripe each: mirror 1 on OST 0, mirror 2 on OST 1.
proto::Layout TwoMirrors() {
  proto::Layout l;
  l.set_ino(7);
  l.set_generation(1);
  for (uint32_t m = 1; m <= 2; ++m) {
    proto::LayoutComponent* c = l.add_components();
    c->set_id(ComponentId(m, m));
    c->set_start(0);
    c->set_end(kLayoutEof);
    c->set_flags(kLcmeFlInit);
    proto::Layout* p = c->mutable_layout();
    p->set_pattern(proto::PATTERN_RAID0);
    p->set_stripe_size(M);
    p->set_stripe_count(1);
    proto::StripeObject* o = p->add_objects();
    o->set_ost_idx(m - 1);
    o->set_object_id(100 + m);
  }
  return l;
}

using stria::testing::Pattern;

class MirrorIoTest : public ::testing::Test {
 protected:
  MirrorIoTest()
      : cluster_(TwoMirrors()),
        pool_(4),
        striped_(&cluster_, &pool_, 64 * M),
        io_(&striped_, &cluster_, &pool_, /*mirror_timeout_ms=*/250) {}

  FakeCluster cluster_;
  internal::ThreadPool pool_;
  StripedIo striped_;
  MirroredIo io_;
};

TEST_F(MirrorIoTest, WritesGoToEveryMirrorAndReadsSpreadByStripe) {
  const proto::Layout l = TwoMirrors();
  const auto data = Pattern(4 * M, 1);
  ASSERT_TRUE(io_.Write(l, 0, data, false, nullptr).ok());
  EXPECT_GT(cluster_.writes(0), 0);
  EXPECT_GT(cluster_.writes(1), 0);
  EXPECT_TRUE(cluster_.marks().empty());
  // Every mirror RPC is bounded by the mirror timeout.
  for (int d : cluster_.deadlines()) EXPECT_EQ(d, 250);

  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(io_.Read(l, data.size(), 0, got, nullptr, nullptr).ok());
  EXPECT_EQ(got, data);
  // Stripes 0 and 2 from mirror 1, 1 and 3 from mirror 2.
  EXPECT_EQ(cluster_.reads(0), 2);
  EXPECT_EQ(cluster_.reads(1), 2);
  ASSERT_TRUE(io_.SyncObjects(l, nullptr).ok());
  EXPECT_EQ(cluster_.syncs(0), 1);
  EXPECT_EQ(cluster_.syncs(1), 1);
}

TEST_F(MirrorIoTest, AMirrorThatIsDownIsMarkedStaleOnceAndSkipped) {
  const proto::Layout l = TwoMirrors();
  const auto data = Pattern(3 * M, 2);
  ASSERT_TRUE(io_.Write(l, 0, std::span(data).first(M), false, nullptr).ok());
  cluster_.SetDown(1, true);
  // The caller keeps its old layout; the write completes on mirror 1.
  ASSERT_TRUE(io_.Write(l, M, std::span(data).subspan(M, M), false, nullptr).ok());
  ASSERT_EQ(cluster_.marks().size(), 1u);
  EXPECT_EQ(cluster_.marks()[0].mirror_id(), 2u);
  EXPECT_EQ(cluster_.marks()[0].start(), M);  // from the first byte it missed on
  EXPECT_EQ(io_.stats().degraded_writes.load(), 1u);
  const int before = cluster_.writes(1);
  // The next write (same stale old layout from the caller) neither tries mirror 2 nor marks
  // again: the mark covers it.
  ASSERT_TRUE(io_.Write(l, 2 * M, std::span(data).subspan(2 * M), false, nullptr).ok());
  EXPECT_EQ(cluster_.marks().size(), 1u);
  EXPECT_EQ(cluster_.writes(1), before);
  // Reads never use the stale range: [M, 3M) comes from mirror 1.
  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(io_.Read(l, data.size(), 0, got, nullptr, nullptr).ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(cluster_.reads(0), 2);
  // fsync cannot make mirror 2's first MiB durable (its OST is still down): all of it is
  // stale now, and the fsync completes on mirror 1.
  ASSERT_TRUE(io_.SyncObjects(l, nullptr).ok());
  EXPECT_EQ(cluster_.syncs(1), 0);
  EXPECT_EQ(cluster_.syncs(0), 1);
  ASSERT_EQ(cluster_.marks().size(), 2u);
  EXPECT_EQ(cluster_.marks()[1].start(), 0u);
  EXPECT_TRUE(StaleCovers(cluster_.layout(), 2, 0, kLayoutEof));
}

TEST_F(MirrorIoTest, ADamagedMirrorIsReadAroundAndReported) {
  const proto::Layout l = TwoMirrors();
  const auto data = Pattern(2 * M, 3);
  ASSERT_TRUE(io_.Write(l, 0, data, false, nullptr).ok());
  cluster_.SetCorrupt(0);
  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(io_.Read(l, data.size(), 0, got, nullptr, nullptr).ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(io_.stats().damaged_reads.load(), 1u);
  ASSERT_EQ(cluster_.marks().size(), 1u);
  EXPECT_TRUE(cluster_.marks()[0].damaged());
  EXPECT_EQ(cluster_.marks()[0].mirror_id(), 1u);
  EXPECT_EQ(cluster_.marks()[0].start(), 0u);
  EXPECT_EQ(cluster_.marks()[0].end(), M);  // the piece mirror 1 served
}

TEST_F(MirrorIoTest, EveryMirrorDownFailsAsAnUnmirroredFile) {
  const proto::Layout l = TwoMirrors();
  cluster_.SetDown(0, true);
  cluster_.SetDown(1, true);
  const auto data = Pattern(M, 4);
  Status st = io_.Write(l, 0, data, false, nullptr);
  EXPECT_EQ(st.code(), Code::kDisconnected) << st.ToString();
  EXPECT_TRUE(cluster_.marks().empty());  // nothing written anywhere: nothing to mark
  // After the short tries, each mirror was tried again with the client's own deadline.
  const std::vector<int> d = cluster_.deadlines();
  EXPECT_EQ(std::count(d.begin(), d.end(), -1), 2);
  std::vector<uint8_t> got(M);
  EXPECT_FALSE(io_.Read(l, M, 0, got, nullptr, nullptr).ok());
}

TEST_F(MirrorIoTest, AnUnsyncableMirrorIsStaleOverTheWholeFile) {
  const proto::Layout l = TwoMirrors();
  ASSERT_TRUE(io_.Write(l, 0, Pattern(M, 5), false, nullptr).ok());
  cluster_.SetDown(0, true);
  ASSERT_TRUE(io_.SyncObjects(l, nullptr).ok());
  ASSERT_EQ(cluster_.marks().size(), 1u);
  EXPECT_EQ(cluster_.marks()[0].mirror_id(), 1u);
  EXPECT_EQ(cluster_.marks()[0].start(), 0u);
  EXPECT_EQ(cluster_.marks()[0].end(), kLayoutEof);
  // Now mirror 2 is the only good copy: losing it too is an error, never a silent loss.
  cluster_.SetDown(0, false);
  cluster_.SetDown(1, true);
  EXPECT_FALSE(io_.SyncObjects(l, nullptr).ok());
}

}  // namespace
}  // namespace stria::client
