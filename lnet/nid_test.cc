#include "lnet/nid.h"

#include <gtest/gtest.h>

namespace stria::lnet {
namespace {

TEST(NidTest, ParsesTcpWithAndWithoutPort) {
  auto a = Nid::Parse("192.168.1.5@tcp");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->addr, "192.168.1.5");
  EXPECT_EQ(a->lnd, Lnd::kTcp);
  EXPECT_EQ(a->port, kDefaultPort);
  auto b = Nid::Parse("127.0.0.1@tcp:9401");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 9401);
  EXPECT_EQ(b->ToString(), "127.0.0.1@tcp:9401");
}

TEST(NidTest, ParsesO2ibAndNetworkNumbers) {
  auto a = Nid::Parse("10.0.0.5@o2ib");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->lnd, Lnd::kO2ib);
  auto b = Nid::Parse("node-3@tcp1:77");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->addr, "node-3");
  EXPECT_EQ(b->port, 77);
}

TEST(NidTest, RejectsGarbage) {
  for (const char* bad : {"", "@tcp", "1.2.3.4", "1.2.3.4@udp", "1.2.3.4@tcp:", "1.2.3.4@tcp:x",
                          "1.2.3.4@tcp:70000", "a b@tcp", "1.2.3.4@tcp:12:13"}) {
    EXPECT_EQ(Nid::Parse(bad).status().code(), Code::kInval) << bad;
  }
}

TEST(NidTest, ParsesLists) {
  auto l = ParseNidList("a@tcp:1,b@tcp:2");
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[1].addr, "b");
  EXPECT_FALSE(ParseNidList("").ok());
  EXPECT_FALSE(ParseNidList("a@tcp,,b@tcp").ok());
}

}  // namespace
}  // namespace stria::lnet
