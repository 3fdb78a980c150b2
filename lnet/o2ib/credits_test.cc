#include "lnet/o2ib/credits.h"

#include <gtest/gtest.h>

#include <deque>

namespace stria::lnet::o2ib {
namespace {

// One direction of the wire: messages in flight, each with its kind and what it returns.
struct InFlight {
  MsgKind kind;
  CreditReturn returned;
};

// Two sides joined by two FIFO queues, as an RC queue pair delivers.
struct Pair {
  explicit Pair(CreditParams p) : a(p), b(p) {}
  Credits a, b;
  std::deque<InFlight> to_a, to_b;

  static void Send(Credits& from, std::deque<InFlight>& wire, MsgKind kind) {
    ASSERT_TRUE(from.CanSend(kind));
    wire.push_back({kind, from.Consume(kind)});
  }
  // Delivers everything on `wire` to `to`, reposting each buffer at once.
  static void Deliver(Credits& to, std::deque<InFlight>& wire) {
    while (!wire.empty()) {
      InFlight m = wire.front();
      wire.pop_front();
      ASSERT_TRUE(to.OnReceive(m.kind, m.returned).ok());
      to.OnRepost(m.kind);
    }
  }
};

TEST(CreditsTest, GrantConsumeAndReturnPiggyBacked) {
  Pair p({.queue_depth = 4, .reserved = 1, .noop_threshold = 3});
  EXPECT_EQ(p.a.send_credits(), 4);
  for (int i = 0; i < 4; ++i) Pair::Send(p.a, p.to_b, MsgKind::kNormal);
  EXPECT_FALSE(p.a.CanSend(MsgKind::kNormal));
  Pair::Deliver(p.b, p.to_b);
  EXPECT_EQ(p.b.owed_normal(), 4);
  // b's reply carries the four credits back.
  Pair::Send(p.b, p.to_a, MsgKind::kNormal);
  EXPECT_EQ(p.b.owed_normal(), 0);
  Pair::Deliver(p.a, p.to_a);
  EXPECT_EQ(p.a.send_credits(), 4);
  EXPECT_EQ(p.a.owed_normal(), 1);
  EXPECT_EQ(p.b.send_credits(), 3);
}

TEST(CreditsTest, ExceedingCreditsIsAProtocolError) {
  Credits rx({.queue_depth = 2, .reserved = 1, .noop_threshold = 1});
  EXPECT_TRUE(rx.OnReceive(MsgKind::kNormal, {}).ok());
  EXPECT_TRUE(rx.OnReceive(MsgKind::kNormal, {}).ok());
  // A third message before any credit went back: the peer overran our receive buffers.
  Status st = rx.OnReceive(MsgKind::kNormal, {});
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("no credit"), std::string::npos) << st.ToString();
}

TEST(CreditsTest, ReturningMoreThanGivenIsAProtocolError) {
  Credits c({.queue_depth = 4, .reserved = 1, .noop_threshold = 2});
  // Nothing was sent, so the peer owes nothing back.
  EXPECT_EQ(c.OnReceive(MsgKind::kNormal, {1, 0}).code(), Code::kProtocol);
  Credits d({.queue_depth = 4, .reserved = 1, .noop_threshold = 2});
  EXPECT_EQ(d.OnReceive(MsgKind::kNormal, {0, 1}).code(), Code::kProtocol);
}

TEST(CreditsTest, NoopSlotsAreSeparateAndBounded) {
  Credits rx({.queue_depth = 2, .reserved = 1, .noop_threshold = 1});
  Credits tx({.queue_depth = 2, .reserved = 1, .noop_threshold = 1});
  // A noop that returns nothing is refused: it would only ask for an answer.
  EXPECT_EQ(rx.OnReceive(MsgKind::kNoop, {}).code(), Code::kProtocol);
  // tx got a message, owes one credit: the noop slot may carry it.
  ASSERT_TRUE(tx.OnReceive(MsgKind::kNormal, {}).ok());
  tx.OnRepost(MsgKind::kNormal);
  EXPECT_TRUE(tx.NeedNoop(false));
  // A queued normal message with credit carries it instead.
  EXPECT_FALSE(tx.NeedNoop(true));
  CreditReturn r = tx.Consume(MsgKind::kNoop);
  EXPECT_EQ(r.normal, 1);
  EXPECT_FALSE(tx.CanSend(MsgKind::kNoop));
  // rx never sent anything, so a noop returning one credit is an overrun of what it gave.
  EXPECT_EQ(rx.OnReceive(MsgKind::kNoop, r).code(), Code::kProtocol);
}

TEST(CreditsTest, ThresholdHoldsBackNoops) {
  Credits c({.queue_depth = 8, .reserved = 2, .noop_threshold = 4});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.OnReceive(MsgKind::kNormal, {}).ok());
    c.OnRepost(MsgKind::kNormal);
  }
  EXPECT_FALSE(c.NeedNoop(false));  // 3 owed < 4
  ASSERT_TRUE(c.OnReceive(MsgKind::kNormal, {}).ok());
  EXPECT_FALSE(c.NeedNoop(false));  // received but not reposted: not owed yet
  c.OnRepost(MsgKind::kNormal);
  EXPECT_TRUE(c.NeedNoop(false));
}

// Both sides fill the other's queue at the same moment: each is out of normal credits and
// owes the other a full queue. The reserved slots let both hand the credits back, and
// neither noop asks for another.
TEST(CreditsTest, BothSidesOutOfCreditsDoNotDeadlock) {
  Pair p({.queue_depth = 4, .reserved = 1, .noop_threshold = 4});
  for (int i = 0; i < 4; ++i) {
    Pair::Send(p.a, p.to_b, MsgKind::kNormal);
    Pair::Send(p.b, p.to_a, MsgKind::kNormal);
  }
  Pair::Deliver(p.a, p.to_a);
  Pair::Deliver(p.b, p.to_b);
  ASSERT_FALSE(p.a.CanSend(MsgKind::kNormal));
  ASSERT_FALSE(p.b.CanSend(MsgKind::kNormal));
  // Each has a normal message queued that cannot go: a noop must.
  ASSERT_TRUE(p.a.NeedNoop(true));
  ASSERT_TRUE(p.b.NeedNoop(true));
  Pair::Send(p.a, p.to_b, MsgKind::kNoop);
  Pair::Send(p.b, p.to_a, MsgKind::kNoop);
  Pair::Deliver(p.a, p.to_a);
  Pair::Deliver(p.b, p.to_b);
  EXPECT_EQ(p.a.send_credits(), 4);
  EXPECT_EQ(p.b.send_credits(), 4);
  // Each owes the other's noop slot back, but that alone calls for no noop.
  EXPECT_EQ(p.a.owed_noop(), 1);
  EXPECT_FALSE(p.a.NeedNoop(false));
  EXPECT_FALSE(p.b.NeedNoop(false));
  // The next normal messages carry the slots back.
  Pair::Send(p.a, p.to_b, MsgKind::kNormal);
  Pair::Send(p.b, p.to_a, MsgKind::kNormal);
  Pair::Deliver(p.a, p.to_a);
  Pair::Deliver(p.b, p.to_b);
  EXPECT_TRUE(p.a.CanSend(MsgKind::kNoop));
  EXPECT_TRUE(p.b.CanSend(MsgKind::kNoop));
}

// A long random exchange: whenever a side cannot send it sends a noop if it should. Demand
// stops after a while, and then every message still wanted must get out: nothing wedges.
// Counts stay within the queue depth throughout.
TEST(CreditsTest, RandomTrafficNeverWedges) {
  Pair p({.queue_depth = 3, .reserved = 1, .noop_threshold = 2});
  uint64_t seed = 12345;
  auto rnd = [&] { return (seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  int want_a = 0, want_b = 0, sent = 0;
  for (int step = 0; step < 40000 && (step < 10000 || want_a + want_b > 0); ++step) {
    if (step < 10000 && rnd() % 2) ++want_a;
    if (step < 10000 && rnd() % 2) ++want_b;
    for (auto [side, wire, want] :
         {std::tuple{&p.a, &p.to_b, &want_a}, std::tuple{&p.b, &p.to_a, &want_b}}) {
      if (*want > 0 && side->CanSend(MsgKind::kNormal)) {
        Pair::Send(*side, *wire, MsgKind::kNormal);
        --*want;
        ++sent;
      } else if (side->NeedNoop(*want > 0)) {
        Pair::Send(*side, *wire, MsgKind::kNoop);
      }
    }
    if (rnd() % 3 == 0) Pair::Deliver(p.a, p.to_a);
    if (rnd() % 3 == 0) Pair::Deliver(p.b, p.to_b);
    ASSERT_LE(p.a.send_credits(), 3);
    ASSERT_LE(p.b.send_credits(), 3);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(sent, 9000);
  EXPECT_EQ(want_a + want_b, 0) << "messages stuck behind credits that never came back";
}

}  // namespace
}  // namespace stria::lnet::o2ib
