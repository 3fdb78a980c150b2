// StripedIo: the arithmetic of which RPCs a read or write produces (PlanStripedIo), and the
// data path over an in-memory OstTransport standing in for the network (the transport is
// our own seam; the real OSS path is covered by client_cluster_test).
#include "client/striped_io.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <utility>

#include "client/internal/thread_pool.h"

namespace stria::client {
namespace {

constexpr uint64_t kS = 64 << 10;  // the smallest stripe size

using Seg = ObjectIo::Segment;

TEST(PlanStripedIo, EmptyRangeNoRpc) {
  EXPECT_TRUE(PlanStripedIo({kS, 4}, 123, 0, IoKind::kRead, 0).empty());
}

TEST(PlanStripedIo, SingleStripeMergesEverything) {
  // 10 chunks of one object: one RPC, one segment, for reads and writes alike.
  for (IoKind kind : {IoKind::kRead, IoKind::kWrite}) {
    auto plan = PlanStripedIo({kS, 1}, 100, 10 * kS, kind, 0);
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].stripe, 0u);
    EXPECT_EQ(plan[0].obj_offset, 100u);
    EXPECT_EQ(plan[0].length, 10 * kS);
    ASSERT_EQ(plan[0].segments.size(), 1u);
    EXPECT_EQ(plan[0].segments[0], (Seg{0, 10 * kS}));
  }
}

TEST(PlanStripedIo, WriteGathersOneRpcPerObject) {
  // 8 full chunks over 4 objects: each object gets chunks k and k+4, contiguous in the
  // object, so one RPC per object with two buffer segments.
  auto plan = PlanStripedIo({kS, 4}, 0, 8 * kS, IoKind::kWrite, 0);
  ASSERT_EQ(plan.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan[i].stripe, i);
    EXPECT_EQ(plan[i].obj_offset, 0u);
    EXPECT_EQ(plan[i].length, 2 * kS);
    ASSERT_EQ(plan[i].segments.size(), 2u);
    EXPECT_EQ(plan[i].segments[0], (Seg{i * kS, kS}));
    EXPECT_EQ(plan[i].segments[1], (Seg{(i + 4) * kS, kS}));
  }
}

TEST(PlanStripedIo, ReadMergesOnlyBufferContiguous) {
  // Same range as a read: a reply bulk is one span, so each chunk is its own RPC.
  auto plan = PlanStripedIo({kS, 4}, 0, 8 * kS, IoKind::kRead, 0);
  ASSERT_EQ(plan.size(), 8u);
  for (const ObjectIo& io : plan) EXPECT_EQ(io.segments.size(), 1u);
  EXPECT_EQ(plan[5].stripe, 1u);
  EXPECT_EQ(plan[5].obj_offset, kS);
  EXPECT_EQ(plan[5].segments[0], (Seg{5 * kS, kS}));
}

TEST(PlanStripedIo, UnalignedRangeAcrossStripes) {
  // [S-1, 2S+1) over 3 objects: 1 byte of obj 0, all of obj 1's first chunk, 1 byte of obj 2.
  auto plan = PlanStripedIo({kS, 3}, kS - 1, kS + 2, IoKind::kWrite, 0);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].stripe, 0u);
  EXPECT_EQ(plan[0].obj_offset, kS - 1);
  EXPECT_EQ(plan[0].length, 1u);
  EXPECT_EQ(plan[1].stripe, 1u);
  EXPECT_EQ(plan[1].obj_offset, 0u);
  EXPECT_EQ(plan[1].length, kS);
  EXPECT_EQ(plan[1].segments[0], (Seg{1, kS}));
  EXPECT_EQ(plan[2].stripe, 2u);
  EXPECT_EQ(plan[2].obj_offset, 0u);
  EXPECT_EQ(plan[2].length, 1u);
  EXPECT_EQ(plan[2].segments[0], (Seg{kS + 1, 1}));
}

TEST(PlanStripedIo, SecondRowStartsMidObject) {
  // A range beginning in row 1 of a 2-stripe file lands at object offset S + in-chunk.
  auto plan = PlanStripedIo({kS, 2}, 2 * kS + 10, 20, IoKind::kRead, 0);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].stripe, 0u);
  EXPECT_EQ(plan[0].obj_offset, kS + 10);
}

TEST(PlanStripedIo, MaxRpcBytesSplits) {
  // One object, 5 chunks, at most 2 chunks per RPC: 2 + 2 + 1.
  auto plan = PlanStripedIo({kS, 1}, 0, 5 * kS, IoKind::kWrite, 2 * kS);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].length, 2 * kS);
  EXPECT_EQ(plan[1].obj_offset, 2 * kS);
  EXPECT_EQ(plan[2].length, kS);
  // A chunk bigger than the limit is cut.
  auto big = PlanStripedIo({4 * kS, 1}, 0, 4 * kS, IoKind::kRead, kS);
  ASSERT_EQ(big.size(), 4u);
  EXPECT_EQ(big[3].obj_offset, 3 * kS);
  EXPECT_EQ(big[3].segments[0], (Seg{3 * kS, kS}));
}

TEST(PlanStripedIo, CoversEveryByteOnce) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    const StripeGeometry g{kS * (1 + rng() % 3), static_cast<uint32_t>(1 + rng() % 6)};
    const uint64_t off = rng() % (20 * kS);
    const uint64_t len = rng() % (12 * kS);
    const IoKind kind = iter % 2 ? IoKind::kRead : IoKind::kWrite;
    const auto plan = PlanStripedIo(g, off, len, kind, (1 + rng() % 4) * kS);
    std::vector<int> seen(len, 0);
    for (const ObjectIo& io : plan) {
      uint64_t sum = 0, obj = io.obj_offset;
      for (const Seg& s : io.segments) {
        for (uint64_t b = 0; b < s.length; ++b) {
          ++seen[s.buf_offset + b];
          uint32_t stripe;
          ASSERT_EQ(ObjectOffset(g, off + s.buf_offset + b, &stripe), obj + b);
          ASSERT_EQ(stripe, io.stripe);
        }
        obj += s.length;
        sum += s.length;
      }
      EXPECT_EQ(sum, io.length);
      if (kind == IoKind::kRead) {
        EXPECT_EQ(io.segments.size(), 1u);
      }
    }
    for (uint64_t b = 0; b < len; ++b) ASSERT_EQ(seen[b], 1) << "byte " << b;
  }
}

TEST(LayoutGeometry, Checks) {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(kS);
  EXPECT_FALSE(LayoutGeometry(l).ok());  // no objects
  l.add_objects()->set_ost_idx(0);
  l.add_objects()->set_ost_idx(1);
  l.set_stripe_count(2);
  auto g = LayoutGeometry(l);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->stripe_count, 2u);
  l.set_stripe_count(3);
  EXPECT_FALSE(LayoutGeometry(l).ok());
  l.set_stripe_count(2);
  l.set_stripe_size(1000);
  EXPECT_FALSE(LayoutGeometry(l).ok());
}

// Objects kept in memory, keyed by (ost, id); counts RPCs.
class MemoryOsts : public OstTransport {
 public:
  Status OstCallRaw(uint32_t ost_idx, uint16_t opcode, std::string_view request,
                    std::string* reply, const lnet::CallBulk& bulk,
                    int /*deadline_ms*/) override {
    std::lock_guard lock(mu_);
    ++rpcs_[opcode];
    switch (opcode) {
      case proto::OP_OST_WRITE: {
        proto::OstIoRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        auto& obj = objects_[Key(req.object())];
        if (obj.size() < req.offset() + req.length()) obj.resize(req.offset() + req.length());
        uint64_t pos = req.offset();
        for (const iovec& v : bulk.out) {
          std::memcpy(obj.data() + pos, v.iov_base, v.iov_len);
          pos += v.iov_len;
        }
        EXPECT_EQ(pos, req.offset() + req.length());
        proto::OstIoReply rep;
        rep.set_length(req.length());
        rep.set_object_size(obj.size());
        rep.SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_READ: {
        proto::OstIoRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        auto it = objects_.find(Key(req.object()));
        if (it == objects_.end()) return Status(Code::kNoEnt, "no object");
        const auto& obj = it->second;
        uint64_t n = 0;
        if (req.offset() < obj.size()) n = std::min<uint64_t>(req.length(), obj.size() - req.offset());
        n = std::min<uint64_t>(n, bulk.in.size());
        std::memcpy(bulk.in.data(), obj.data() + req.offset(), n);
        // Garbage past what was returned must not show through.
        std::memset(bulk.in.data() + n, 0xEE, bulk.in.size() - n);
        *bulk.in_len = n;
        proto::OstIoReply rep;
        rep.set_length(n);
        rep.SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_TRUNCATE: {
        proto::OstTruncateRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        objects_[Key(req.object())].resize(req.size());
        proto::OstIoReply().SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_GETATTR: {
        proto::OstGetattrRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        proto::OstGetattrReply rep;
        auto it = objects_.find(Key(req.object()));
        rep.set_exists(it != objects_.end());
        if (it != objects_.end()) rep.set_size(it->second.size());
        rep.SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_PUNCH: {
        proto::OstPunchRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        auto& obj = objects_[Key(req.object())];
        for (uint64_t i = req.offset(); i < req.offset() + req.length() && i < obj.size(); ++i) {
          obj[i] = 0;
        }
        proto::OstIoReply().SerializeToString(reply);
        return Status::Ok();
      }
      case proto::OP_OST_SYNC: {
        proto::OstSyncRequest req;
        req.ParseFromArray(request.data(), static_cast<int>(request.size()));
        EXPECT_EQ(req.ost_idx(), ost_idx);
        synced_objects_ += req.objects_size();
        proto::OstIoReply().SerializeToString(reply);
        return Status::Ok();
      }
    }
    return Status(Code::kBadOpcode, "unexpected opcode");
  }

  // Data-on-MDT bytes, per inode, as the MDS would keep them.
  Status MdsCallBulk(uint16_t opcode, std::string_view request, std::string* reply,
                     const lnet::CallBulk& bulk, int) override {
    std::lock_guard lock(mu_);
    ++rpcs_[opcode];
    if (opcode == proto::OP_MDS_SYNC) {
      proto::SyncReply().SerializeToString(reply);
      return Status::Ok();
    }
    proto::DomIoRequest req;
    req.ParseFromArray(request.data(), static_cast<int>(request.size()));
    auto& file = dom_[req.ino()];
    proto::DomIoReply rep;
    if (opcode == proto::OP_MDS_DOM_WRITE) {
      if (file.size() < req.offset() + req.length()) file.resize(req.offset() + req.length());
      uint64_t pos = req.offset();
      for (const iovec& v : bulk.out) {
        std::memcpy(file.data() + pos, v.iov_base, v.iov_len);
        pos += v.iov_len;
      }
      rep.set_length(req.length());
    } else if (opcode == proto::OP_MDS_DOM_READ) {
      uint64_t n = 0;
      if (req.offset() < file.size()) n = std::min<uint64_t>(req.length(), file.size() - req.offset());
      std::memcpy(bulk.in.data(), file.data() + req.offset(), n);
      std::memset(bulk.in.data() + n, 0xEE, bulk.in.size() - n);
      *bulk.in_len = n;
      rep.set_length(n);
    } else {
      return Status(Code::kBadOpcode, "unexpected MDS opcode");
    }
    rep.SerializeToString(reply);
    return Status::Ok();
  }
  std::vector<uint8_t> dom(uint64_t ino) {
    std::lock_guard lock(mu_);
    return dom_[ino];
  }

  int rpcs(uint16_t op) {
    std::lock_guard lock(mu_);
    return rpcs_[op];
  }
  void ResetCounts() {
    std::lock_guard lock(mu_);
    rpcs_.clear();
  }
  int synced_objects_ = 0;

 private:
  static std::pair<uint32_t, uint64_t> Key(const proto::ObjectId& id) {
    return {id.ost_idx(), id.object_id()};
  }
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint8_t>> objects_;
  std::map<uint16_t, int> rpcs_;
  std::map<uint64_t, std::vector<uint8_t>> dom_;
};

proto::Layout MakeLayout(uint64_t stripe_size, uint32_t count, uint32_t first_ost,
                         uint32_t num_osts) {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(stripe_size);
  l.set_stripe_count(static_cast<int>(count));
  for (uint32_t i = 0; i < count; ++i) {
    auto* o = l.add_objects();
    o->set_ost_idx((first_ost + i) % num_osts);
    o->set_object_id(1000 + i);
  }
  return l;
}

std::vector<uint8_t> Pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(StripedIo, RoundTripAwkwardSizes) {
  internal::ThreadPool pool(4);
  for (uint32_t count : {1u, 2u, 3u, 8u}) {
    MemoryOsts osts;
    StripedIo io(&osts, &pool, 64ull << 20);
    const auto layout = MakeLayout(kS, count, 1, 4);
    std::vector<uint8_t> file;  // the model
    uint64_t offset = 0;
    for (uint64_t len : {uint64_t{0}, uint64_t{1}, kS - 1, kS, kS + 1, 3 * kS + 17,
                         uint64_t{count} * kS * 2 + 5}) {
      const auto data = Pattern(len, len + count);
      ASSERT_TRUE(io.Write(layout, offset, data, false).ok());
      if (file.size() < offset + len) file.resize(offset + len);
      std::copy(data.begin(), data.end(), file.begin() + offset);
      offset += len;
    }
    std::vector<uint8_t> back(file.size() + 100, 0xAB);
    auto n = io.Read(layout, file.size(), 0, back);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, file.size());
    back.resize(file.size());
    EXPECT_TRUE(back == file) << "stripe count " << count;
    auto size = io.GlimpseSize(layout);
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, file.size());
  }
}

TEST(StripedIo, SparseReadsZeros) {
  internal::ThreadPool pool(4);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const auto layout = MakeLayout(kS, 4, 0, 4);
  // One byte far out: objects 0..3 mostly never written.
  const uint64_t far = 9 * kS + 5;
  const uint8_t one = 0x5A;
  ASSERT_TRUE(io.Write(layout, far, {&one, 1}, false).ok());
  EXPECT_EQ(*io.GlimpseSize(layout), far + 1);
  std::vector<uint8_t> back(far + 1, 0xCD);
  auto n = io.Read(layout, far + 1, 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, far + 1);
  for (uint64_t i = 0; i < far; ++i) ASSERT_EQ(back[i], 0) << "byte " << i;
  EXPECT_EQ(back[far], one);
  // Past EOF: nothing; straddling EOF: short.
  EXPECT_EQ(*io.Read(layout, far + 1, far + 1, back), 0u);
  EXPECT_EQ(*io.Read(layout, far + 1, far, back), 1u);
}

TEST(StripedIo, OneRpcPerObjectForBigWrite) {
  internal::ThreadPool pool(4);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const auto layout = MakeLayout(kS, 4, 0, 4);
  const auto data = Pattern(16 * kS, 1);
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  EXPECT_EQ(osts.rpcs(proto::OP_OST_WRITE), 4);
}

TEST(StripedIo, TruncateAndSync) {
  internal::ThreadPool pool(2);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const auto layout = MakeLayout(kS, 3, 0, 2);  // objects on OSTs 0, 1, 0
  const auto data = Pattern(7 * kS, 2);
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  ASSERT_TRUE(io.TruncateObjects(layout, 2 * kS + 3).ok());
  EXPECT_EQ(*io.GlimpseSize(layout), 2 * kS + 3);
  ASSERT_TRUE(io.TruncateObjects(layout, 0).ok());
  EXPECT_EQ(*io.GlimpseSize(layout), 0u);
  ASSERT_TRUE(io.TruncateObjects(layout, 5 * kS).ok());  // extend: sparse
  EXPECT_EQ(*io.GlimpseSize(layout), 5 * kS);
  std::vector<uint8_t> back(5 * kS, 1);
  EXPECT_EQ(*io.Read(layout, 5 * kS, 0, back), 5 * kS);
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0; }));
  osts.ResetCounts();
  ASSERT_TRUE(io.SyncObjects(layout).ok());
  EXPECT_EQ(osts.rpcs(proto::OP_OST_SYNC), 2);  // one per OST
  EXPECT_EQ(osts.synced_objects_, 3);
}

// A composite layout: [0, 2S) on 1 stripe, [2S, 8S) on 2, [8S, EOF) on 3 (instantiated only
// when `last_init`); object ids differ per component.
proto::Layout Composite(bool last_init) {
  proto::Layout l;
  l.set_generation(1);
  auto add = [&](uint64_t start, uint64_t end, uint32_t count, uint64_t first_id, bool init) {
    proto::LayoutComponent* c = l.add_components();
    c->set_id(static_cast<uint32_t>(l.components_size()));
    c->set_start(start);
    c->set_end(end);
    proto::Layout* p = c->mutable_layout();
    p->set_pattern(proto::PATTERN_RAID0);
    p->set_stripe_size(kS);
    p->set_stripe_count(static_cast<int>(count));
    if (!init) return;
    c->set_flags(kLcmeFlInit);
    for (uint32_t i = 0; i < count; ++i) {
      auto* o = p->add_objects();
      o->set_ost_idx(i % 2);
      o->set_object_id(first_id + i);
    }
  };
  add(0, 2 * kS, 1, 2000, true);
  add(2 * kS, 8 * kS, 2, 3000, true);
  add(8 * kS, kLayoutEof, 3, 4000, last_init);
  return l;
}

TEST(StripedIoComposite, RoundTripAcrossComponentBoundaries) {
  internal::ThreadPool pool(4);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const proto::Layout layout = Composite(/*last_init=*/true);
  std::vector<uint8_t> file;
  // Writes that end and start on each boundary, straddle them, and span all three.
  const std::pair<uint64_t, uint64_t> writes[] = {
      {2 * kS - 1, 2},  {0, 2 * kS},      {2 * kS, 1},      {8 * kS - 3, 10},
      {kS + 7, 9 * kS}, {12 * kS + 1, 5}, {8 * kS, 2 * kS}, {0, 3},
  };
  uint64_t seed = 0;
  for (auto [off, len] : writes) {
    const auto data = Pattern(len, ++seed);
    ASSERT_TRUE(io.Write(layout, off, data, false).ok()) << off << "+" << len;
    if (file.size() < off + len) file.resize(off + len);
    std::copy(data.begin(), data.end(), file.begin() + static_cast<ptrdiff_t>(off));
  }
  std::vector<uint8_t> back(file.size(), 0xAB);
  auto n = io.Read(layout, file.size(), 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, file.size());
  EXPECT_TRUE(back == file);
  // Each component's bytes are in its own objects: 1 + 2 + 3 objects were written.
  EXPECT_EQ(*io.GlimpseSize(layout), file.size());
  osts.ResetCounts();
  ASSERT_TRUE(io.SyncObjects(layout).ok());
  EXPECT_EQ(osts.synced_objects_, 6);
}

TEST(StripedIoComposite, UninstantiatedComponentsReadAsHolesAndRefuseWrites) {
  internal::ThreadPool pool(2);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const proto::Layout layout = Composite(/*last_init=*/false);
  const auto data = Pattern(8 * kS, 7);
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  const uint8_t one = 1;
  EXPECT_EQ(io.Write(layout, 8 * kS, {&one, 1}, false).code(), Code::kInval);
  // Straddling into it: refused whole, nothing written.
  osts.ResetCounts();
  EXPECT_EQ(io.Write(layout, 8 * kS - 1, std::span<const uint8_t>(data.data(), 2), false).code(),
            Code::kInval);
  EXPECT_EQ(osts.rpcs(proto::OP_OST_WRITE), 0);
  // A file that grew (truncate up) reads zeros in the uninstantiated component.
  std::vector<uint8_t> back(10 * kS, 0xCD);
  ASSERT_EQ(*io.Read(layout, 10 * kS, 0, back), 10 * kS);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin()));
  EXPECT_TRUE(std::all_of(back.begin() + 8 * kS, back.end(), [](uint8_t b) { return b == 0; }));
  // A layout that ends: writes past it are EFBIG, reads past it are holes.
  proto::Layout bounded = layout;
  bounded.mutable_components()->RemoveLast();
  EXPECT_EQ(io.Write(bounded, 8 * kS, {&one, 1}, false).code(), Code::kFBig);
  ASSERT_EQ(*io.Read(bounded, 10 * kS, 0, back), 10 * kS);
  EXPECT_TRUE(std::all_of(back.begin() + 8 * kS, back.end(), [](uint8_t b) { return b == 0; }));
}

TEST(StripedIoComposite, TruncateIntoAnEarlierComponentEmptiesLaterOnes) {
  internal::ThreadPool pool(2);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const proto::Layout layout = Composite(/*last_init=*/true);
  auto data = Pattern(12 * kS, 3);
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  ASSERT_TRUE(io.TruncateObjects(layout, kS + 3).ok());
  EXPECT_EQ(*io.GlimpseSize(layout), kS + 3);
  // Grown again: everything past the cut reads as zeros, in every component.
  ASSERT_TRUE(io.TruncateObjects(layout, 12 * kS).ok());
  EXPECT_EQ(*io.GlimpseSize(layout), 12 * kS);
  std::vector<uint8_t> back(12 * kS, 0xCD);
  ASSERT_EQ(*io.Read(layout, 12 * kS, 0, back), 12 * kS);
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + kS + 3, back.begin()));
  EXPECT_TRUE(std::all_of(back.begin() + kS + 3, back.end(), [](uint8_t b) { return b == 0; }));
  // Truncated to a boundary: the second component keeps nothing.
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  ASSERT_TRUE(io.TruncateObjects(layout, 2 * kS).ok());
  EXPECT_EQ(*io.GlimpseSize(layout), 2 * kS);
}

TEST(StripedIoComposite, PunchFreesTheRangeInEveryComponent) {
  internal::ThreadPool pool(2);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  const proto::Layout layout = Composite(/*last_init=*/true);
  auto data = Pattern(12 * kS, 4);
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  const uint64_t from = kS + 100, to = 9 * kS + 7;
  ASSERT_TRUE(io.PunchObjects(layout, from, to).ok());
  std::fill(data.begin() + from, data.begin() + to, 0);
  std::vector<uint8_t> back(12 * kS, 0xCD);
  ASSERT_EQ(*io.Read(layout, 12 * kS, 0, back), 12 * kS);
  EXPECT_TRUE(back == data);
}

TEST(StripedIoComposite, DataOnMdtBytesGoToTheMdsAndTheRestToOsts) {
  internal::ThreadPool pool(2);
  MemoryOsts osts;
  StripedIo io(&osts, &pool, 64ull << 20);
  // [0, 2S) on the MDT, then the 2-stripe and 3-stripe components.
  proto::Layout layout = Composite(/*last_init=*/true);
  layout.set_ino(77);
  proto::LayoutComponent* dom = layout.mutable_components(0);
  dom->mutable_layout()->clear_objects();
  dom->mutable_layout()->set_pattern(proto::PATTERN_MDT);
  auto data = Pattern(10 * kS + 3, 5);
  ASSERT_TRUE(io.Write(layout, 0, data, false).ok());
  // The MDS holds exactly the first 2S bytes; the OSTs the rest.
  const auto on_mds = osts.dom(77);
  ASSERT_EQ(on_mds.size(), 2 * kS);
  EXPECT_TRUE(std::equal(on_mds.begin(), on_mds.end(), data.begin()));
  std::vector<uint8_t> back(data.size(), 0xCD);
  ASSERT_EQ(*io.Read(layout, data.size(), 0, back), data.size());
  EXPECT_TRUE(back == data);
  // A read of a never-written DoM tail is zeros; punch zeroes DoM bytes too.
  ASSERT_TRUE(io.PunchObjects(layout, 10, 3 * kS).ok());
  std::fill(data.begin() + 10, data.begin() + 3 * kS, 0);
  ASSERT_EQ(*io.Read(layout, data.size(), 0, back), data.size());
  EXPECT_TRUE(back == data);
  // Sync reaches the MDS as well as each OST.
  osts.ResetCounts();
  ASSERT_TRUE(io.SyncObjects(layout).ok());
  EXPECT_EQ(osts.rpcs(proto::OP_MDS_SYNC), 1);
  EXPECT_EQ(osts.rpcs(proto::OP_OST_SYNC), 2);
}

TEST(ParallelFor, RunsEveryItemAndReportsFirstError) {
  internal::ThreadPool pool(3);
  std::vector<int> hits(100, 0);
  ASSERT_TRUE(internal::ParallelFor(&pool, hits.size(), [&](size_t i) {
                hits[i]++;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(std::accumulate(hits.begin(), hits.end(), 0), 100);
  Status st = internal::ParallelFor(&pool, 10, [&](size_t i) {
    return i == 3 || i == 7 ? Status(Code::kIO, std::to_string(i)) : Status::Ok();
  });
  EXPECT_EQ(st.code(), Code::kIO);
  EXPECT_EQ(st.message(), "3");
}

}  // namespace
}  // namespace stria::client
