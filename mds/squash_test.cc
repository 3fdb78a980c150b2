// Root squash and nosquash NID patterns (mds/squash.h).
#include "mds/squash.h"

#include <gtest/gtest.h>

namespace stria::mds {
namespace {

TEST(NidPatternTest, ParsesLustreStyleLists) {
  auto l = ParseNidPatterns("192.168.1.5@tcp, 10.0.0.[1-4,9]@tcp *@o2ib");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->size(), 3u);
  EXPECT_TRUE(NidListMatches(*l, "192.168.1.5", "tcp"));
  EXPECT_TRUE(NidListMatches(*l, "192.168.1.5", "o2ib"));  // *@o2ib
  EXPECT_FALSE(NidListMatches(*l, "192.168.1.6", "tcp"));
  EXPECT_TRUE(NidListMatches(*l, "10.0.0.3", "tcp"));
  EXPECT_TRUE(NidListMatches(*l, "10.0.0.9", "tcp"));
  EXPECT_FALSE(NidListMatches(*l, "10.0.0.5", "tcp"));
  EXPECT_TRUE(NidListMatches(*l, "1.2.3.4", "o2ib"));
  EXPECT_FALSE(NidListMatches(*l, "1.2.3.4", "tcp"));
  auto star = ParseNidPatterns("10.*.0.1@*");
  ASSERT_TRUE(star.ok());
  EXPECT_TRUE(NidListMatches(*star, "10.77.0.1", "tcp"));
  EXPECT_FALSE(NidListMatches(*star, "10.77.0.2", "tcp"));
}

TEST(NidPatternTest, RefusesWhatIsNotAPattern) {
  for (const char* bad : {"", "10.0.0.1", "10.0.0.1@udp", "10.0.0@tcp", "10.0.0.256@tcp",
                          "10.0.0.[4-1]@tcp", "10.0.0.[1-@tcp", "host@tcp"}) {
    EXPECT_EQ(ParseNidPatterns(bad).status().code(), Code::kInval) << bad;
  }
}

TEST(SquashTest, RootIsSquashedUnlessItsNidIsListed) {
  SquashOptions o;
  o.root_squash = true;
  o.squash_uid = 99;
  o.squash_gid = 98;
  proto::Credentials root;
  root.set_uid(0);
  root.set_gid(0);
  root.add_groups(10);
  proto::Credentials c = root;
  EXPECT_TRUE(SquashRoot(o, "10.0.0.7:1023", "tcp", &c));
  EXPECT_EQ(c.uid(), 99u);
  EXPECT_EQ(c.gid(), 98u);
  EXPECT_EQ(c.groups_size(), 0);
  o.nosquash_nids = *ParseNidPatterns("10.0.0.[5-8]@tcp");
  c = root;
  EXPECT_FALSE(SquashRoot(o, "10.0.0.7:1023", "tcp", &c));
  EXPECT_EQ(c.uid(), 0u);
  c = root;
  EXPECT_TRUE(SquashRoot(o, "10.0.0.9:1023", "tcp", &c));
  proto::Credentials user;
  user.set_uid(1000);
  EXPECT_FALSE(SquashRoot(o, "10.0.0.9:1023", "tcp", &user));
  EXPECT_EQ(user.uid(), 1000u);
  o.root_squash = false;
  c = root;
  EXPECT_FALSE(SquashRoot(o, "10.0.0.9:1023", "tcp", &c));
}

}  // namespace
}  // namespace stria::mds
