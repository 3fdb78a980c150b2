#include "lnet/o2ib/o2ib_msg.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace stria::lnet::o2ib {
namespace {

// Encodes a message with the given descriptors and payload into a byte vector.
std::vector<uint8_t> Encode(const MsgHeader& h, const std::vector<RemoteBuf>& bufs,
                            std::string_view payload) {
  std::vector<uint8_t> out(MsgSize(bufs.size(), payload.size()));
  MsgHeader hh = h;
  hh.payload_len = static_cast<uint32_t>(payload.size());
  const size_t off = EncodeMsgHead(hh, bufs, out.data());
  EXPECT_EQ(off, MsgSize(bufs.size(), 0));
  std::memcpy(out.data() + off, payload.data(), payload.size());
  return out;
}

// Rewrites one descriptor field and fixes the header crc, as a buggy or hostile peer would.
void Patch(std::vector<uint8_t>* msg, size_t offset, const void* v, size_t n) {
  std::memcpy(msg->data() + offset, v, n);
  // Re-encode the header crc over the patched bytes by decoding the descriptors back.
  MsgHeader h;
  h.type = static_cast<MsgType>((*msg)[6]);
  std::memcpy(&h.flags, msg->data() + 8, 2);
  std::memcpy(&h.credits.normal, msg->data() + 10, 2);
  std::memcpy(&h.credits.noop, msg->data() + 12, 2);
  std::memcpy(&h.payload_len, msg->data() + 16, 4);
  const size_t nbufs = (*msg)[7];
  std::vector<RemoteBuf> bufs(nbufs);
  for (size_t i = 0; i < nbufs; ++i) {
    const uint8_t* p = msg->data() + kMsgHeaderSize + i * kRemoteBufSize;
    std::memcpy(&bufs[i].addr, p, 8);
    std::memcpy(&bufs[i].rkey, p + 8, 4);
    std::memcpy(&bufs[i].len, p + 12, 4);
    uint16_t role;
    std::memcpy(&role, p + 16, 2);
    bufs[i].role = static_cast<BufRole>(role);
  }
  EncodeMsgHead(h, bufs, msg->data());
}

TEST(O2ibMsgTest, RoundTripsDescriptorsCreditsAndPayload) {
  MsgHeader h;
  h.type = MsgType::kFrame;
  h.credits = {5, 1};
  std::vector<RemoteBuf> bufs = {
      {0x7f0000001000, 0x1234, 1 << 20, BufRole::kBulkSource},
      {0x7f0000201000, 0x1234, 4096, BufRole::kBulkSource},
      {0x7f0000400000, 0x99, 8 << 20, BufRole::kBulkSink},
      {0x55550000, 0x42, 100000, BufRole::kBody},
  };
  auto msg = Encode(h, bufs, "frame-bytes");
  auto d = DecodeMsg(msg.data(), msg.size(), MsgLimits{});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->header.type, MsgType::kFrame);
  EXPECT_EQ(d->header.credits.normal, 5);
  EXPECT_EQ(d->header.credits.noop, 1);
  EXPECT_EQ(d->bufs, bufs);
  EXPECT_EQ(d->source_bytes, (1u << 20) + 4096);
  EXPECT_EQ(d->sink_bytes, 8u << 20);
  ASSERT_EQ(d->body_index, 3);
  EXPECT_EQ(std::string(d->payload.begin(), d->payload.end()), "frame-bytes");
}

TEST(O2ibMsgTest, NoopCarriesOnlyCredits) {
  MsgHeader h;
  h.type = MsgType::kNoop;
  h.credits = {3, 0};
  auto msg = Encode(h, {}, "");
  auto d = DecodeMsg(msg.data(), msg.size(), MsgLimits{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->header.type, MsgType::kNoop);
  EXPECT_EQ(d->header.credits.normal, 3);
  auto bad = Encode(h, {{1, 2, 3, BufRole::kBulkSink}}, "");
  EXPECT_EQ(DecodeMsg(bad.data(), bad.size(), MsgLimits{}).status().code(), Code::kProtocol);
}

TEST(O2ibMsgTest, OversizedDescriptorsAreRejectedWithAReason) {
  MsgLimits limits;
  limits.max_bulk = 1 << 20;
  limits.max_body = 4096;
  MsgHeader h;
  auto big = Encode(h, {{0x1000, 1, (1 << 20) + 1, BufRole::kBulkSource}}, "x");
  auto d = DecodeMsg(big.data(), big.size(), limits);
  EXPECT_EQ(d.status().code(), Code::kTooLarge);
  EXPECT_NE(d.status().message().find("exceeds the limit"), std::string::npos);
  // Several pieces that are fine alone but too much together.
  auto sum = Encode(
      h, {{0x1000, 1, 600 << 10, BufRole::kBulkSink}, {0x900000, 1, 600 << 10, BufRole::kBulkSink}},
      "x");
  EXPECT_EQ(DecodeMsg(sum.data(), sum.size(), limits).status().code(), Code::kTooLarge);
  auto body = Encode(h, {{0x1000, 1, 4097, BufRole::kBody}}, "x");
  EXPECT_EQ(DecodeMsg(body.data(), body.size(), limits).status().code(), Code::kTooLarge);
  std::vector<RemoteBuf> many(kMaxRemoteBufs + 1, {0x1000, 1, 1, BufRole::kBulkSource});
  auto lots = Encode(h, many, "");
  EXPECT_EQ(DecodeMsg(lots.data(), lots.size(), MsgLimits{}).status().code(), Code::kTooLarge);
}

TEST(O2ibMsgTest, BadDescriptorsAreRejectedWithAReason) {
  MsgHeader h;
  auto expect_bad = [](const std::vector<uint8_t>& m, const std::string& why) {
    auto d = DecodeMsg(m.data(), m.size(), MsgLimits{});
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), Code::kProtocol);
    EXPECT_NE(d.status().message().find(why), std::string::npos) << d.status().ToString();
  };
  expect_bad(Encode(h, {{0x1000, 1, 0, BufRole::kBulkSource}}, ""), "is empty");
  expect_bad(Encode(h, {{~uint64_t{0} - 10, 1, 100, BufRole::kBulkSink}}, ""), "wraps");
  expect_bad(Encode(h, {{0x1000, 1, 8, BufRole::kBody}, {0x2000, 1, 8, BufRole::kBody}}, ""),
             "more than one remote body");
  auto role = Encode(h, {{0x1000, 1, 8, BufRole::kBulkSink}}, "");
  const uint16_t bogus = 9;
  Patch(&role, kMsgHeaderSize + 16, &bogus, 2);
  expect_bad(role, "unknown role 9");
  MsgHeader inline_bulk;
  inline_bulk.flags = kMsgInlineBulk;
  expect_bad(Encode(inline_bulk, {{0x1000, 1, 8, BufRole::kBulkSource}}, "p"),
             "both inline and in remote");
}

TEST(O2ibMsgTest, CorruptOrTruncatedMessagesAreRejected) {
  MsgHeader h;
  auto msg = Encode(h, {{0x1000, 7, 64, BufRole::kBulkSource}}, "payload");
  // Any flipped byte in the header or a descriptor fails the header crc (or an earlier check).
  for (size_t i = 0; i < MsgSize(1, 0); ++i) {
    auto m = msg;
    m[i] ^= 0x40;
    EXPECT_FALSE(DecodeMsg(m.data(), m.size(), MsgLimits{}).ok()) << "byte " << i;
  }
  // A message shorter or longer than its header says.
  EXPECT_FALSE(DecodeMsg(msg.data(), msg.size() - 1, MsgLimits{}).ok());
  EXPECT_FALSE(DecodeMsg(msg.data(), 20, MsgLimits{}).ok());
  auto longer = msg;
  longer.push_back(0);
  EXPECT_FALSE(DecodeMsg(longer.data(), longer.size(), MsgLimits{}).ok());
}

TEST(O2ibMsgTest, ConnParamsRoundTripAndNegotiateDown) {
  uint8_t buf[kConnParamsSize];
  EncodeConnParams({16, 2, 32 << 10}, buf);
  auto c = DecodeConnParams(buf, sizeof buf);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (ConnParams{16, 2, 32 << 10}));
  EXPECT_EQ(Negotiate({8, 2, 64 << 10}, *c), (ConnParams{8, 2, 32 << 10}));
  EncodeConnParams({0, 2, 32 << 10}, buf);
  EXPECT_EQ(DecodeConnParams(buf, sizeof buf).status().code(), Code::kProtocol);
  EncodeConnParams({8, 2, 100}, buf);
  EXPECT_EQ(DecodeConnParams(buf, sizeof buf).status().code(), Code::kProtocol);
  EXPECT_FALSE(DecodeConnParams(buf, 8).ok());
  EXPECT_FALSE(DecodeConnParams(nullptr, 0).ok());
  buf[0] ^= 1;
  EXPECT_NE(DecodeConnParams(buf, sizeof buf).status().message().find("magic"), std::string::npos);
}

}  // namespace
}  // namespace stria::lnet::o2ib
