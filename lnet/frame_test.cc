#include "lnet/frame.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"

namespace stria::lnet {
namespace {

FrameHeader Sample() {
  FrameHeader h;
  h.opcode = 100;
  h.flags = kFlagBulkCrc;
  h.xid = 0x1122334455667788ull;
  h.body_len = 5;
  h.body_crc = Crc32c("hello", 5);
  h.bulk_len = 1 << 20;
  h.bulk_crc = 0xdeadbeef;
  return h;
}

TEST(FrameTest, RoundTrip) {
  uint8_t buf[kFrameHeaderSize];
  EncodeHeader(Sample(), buf);
  auto h = DecodeHeader(buf, FrameLimits{});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->opcode, 100);
  EXPECT_EQ(h->xid, 0x1122334455667788ull);
  EXPECT_EQ(h->bulk_len, 1u << 20);
  EXPECT_EQ(h->bulk_crc, 0xdeadbeefu);
  EXPECT_TRUE(VerifyBody(*h, "hello").ok());
  EXPECT_EQ(VerifyBody(*h, "hellO").code(), Code::kProtocol);
  EXPECT_EQ(VerifyBody(*h, "hell").code(), Code::kProtocol);
}

TEST(FrameTest, EveryFlippedBitIsCaught) {
  uint8_t good[kFrameHeaderSize];
  EncodeHeader(Sample(), good);
  for (size_t bit = 0; bit < kFrameHeaderSize * 8; ++bit) {
    uint8_t buf[kFrameHeaderSize];
    memcpy(buf, good, sizeof buf);
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(DecodeHeader(buf, FrameLimits{}).ok()) << "bit " << bit;
  }
}

TEST(FrameTest, LimitsAreEnforcedBeforeAllocation) {
  FrameHeader h = Sample();
  h.bulk_len = 1ull << 40;
  uint8_t buf[kFrameHeaderSize];
  EncodeHeader(h, buf);
  EXPECT_EQ(DecodeHeader(buf, FrameLimits{}).status().code(), Code::kTooLarge);
  h = Sample();
  h.body_len = 100u << 20;
  EncodeHeader(h, buf);
  EXPECT_EQ(DecodeHeader(buf, FrameLimits{}).status().code(), Code::kTooLarge);
}

TEST(FrameTest, RejectsUnknownVersionAndFlagsAndUncheckedBulk) {
  uint8_t buf[kFrameHeaderSize];
  FrameHeader h = Sample();
  h.version = 9;
  EncodeHeader(h, buf);
  EXPECT_EQ(DecodeHeader(buf, FrameLimits{}).status().code(), Code::kProtocol);
  h = Sample();
  h.flags |= 1u << 7;
  EncodeHeader(h, buf);
  EXPECT_EQ(DecodeHeader(buf, FrameLimits{}).status().code(), Code::kProtocol);
  h = Sample();
  h.flags = 0;
  EncodeHeader(h, buf);
  EXPECT_EQ(DecodeHeader(buf, FrameLimits{}).status().code(), Code::kProtocol);
  // kFlagBulkShared in a request describes the reply's bulk: its own still needs a crc flag.
  h.flags = kFlagBulkShared;
  EncodeHeader(h, buf);
  EXPECT_EQ(DecodeHeader(buf, FrameLimits{}).status().code(), Code::kProtocol);
}

// A reply whose bulk a local server put in the client's shared arena carries its length
// and no crc: nothing of it crossed a wire (lnet/shared_bulk.h).
TEST(FrameTest, ASharedReplyBulkNeedsNoCrc) {
  uint8_t buf[kFrameHeaderSize];
  FrameHeader h = Sample();
  h.flags = kFlagReply | kFlagBulkShared;
  h.bulk_crc = 0;
  EncodeHeader(h, buf);
  Result<FrameHeader> d = DecodeHeader(buf, FrameLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bulk_len, 1u << 20);
  EXPECT_TRUE(d->flags & kFlagBulkShared);
}

// Request bulk left in a shared arena needs no crc, and comes only on a request, alone in
// the descriptor field, with bytes.
TEST(FrameTest, ASharedRequestBulkIsARequestsAloneWithBytes) {
  uint8_t buf[kFrameHeaderSize];
  auto decode = [&](uint32_t flags, uint64_t bulk_len) {
    FrameHeader h = Sample();
    h.flags = flags;
    h.bulk_len = bulk_len;
    EncodeHeader(h, buf);
    return DecodeHeader(buf, FrameLimits{});
  };
  Result<FrameHeader> d = decode(kFlagRequestBulkShared, 100'000);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bulk_len, 100'000u);
  for (uint32_t other : {kFlagReply, kFlagBulkShared, kFlagBulkCrc, kFlagBulkNoCrc}) {
    EXPECT_EQ(decode(kFlagRequestBulkShared | other, 4096).status().code(), Code::kProtocol)
        << other;
  }
  EXPECT_EQ(decode(kFlagRequestBulkShared, 0).status().code(), Code::kProtocol);
}

}  // namespace
}  // namespace stria::lnet
