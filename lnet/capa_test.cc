// OSS capabilities: what the MDS signs and what the OSS accepts (lnet/capa.h).
#include "lnet/capa.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace stria::lnet {
namespace {

KeyRing Ring(uint8_t seed) {
  Key k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed + i);
  return KeyRing({k});
}

proto::Layout TwoStripes() {
  proto::Layout l;
  l.set_pattern(proto::PATTERN_RAID0);
  l.set_stripe_size(1 << 20);
  l.set_stripe_count(2);
  for (uint32_t i = 0; i < 2; ++i) {
    proto::StripeObject* o = l.add_objects();
    o->set_ost_idx(i);
    o->set_object_id(100 + i);
  }
  return l;
}

// The capability a client puts in its request for object `i` of a grant.
proto::Capability CapaOf(const proto::CapaGrant& g, int i) {
  proto::Capability c;
  c.set_ino(g.ino());
  c.set_ops(g.ops());
  c.set_expiry_ms(g.expiry_ms());
  c.set_mac(g.objects(i).mac());
  return c;
}

class CapaTest : public ::testing::Test {
 protected:
  std::shared_ptr<const KeyRing> keys_ = DeriveCapaKeys(Ring(1));
  CapaSigner signer_{keys_, 60'000};
  CapaVerifier verifier_{keys_};
};

TEST_F(CapaTest, GrantedObjectsPassForTheirClientAndOps) {
  proto::CapaGrant g;
  signer_.Grant("client-a", 7, proto::CAPA_READ | proto::CAPA_WRITE, TwoStripes(), &g);
  ASSERT_EQ(g.objects_size(), 2);
  EXPECT_EQ(g.lifetime_ms(), 60'000u);
  for (int i = 0; i < 2; ++i) {
    const proto::Capability c = CapaOf(g, i);
    EXPECT_TRUE(verifier_.Check(&c, g.objects(i).object(), "client-a", proto::CAPA_WRITE).ok());
    EXPECT_TRUE(verifier_.Check(&c, g.objects(i).object(), "client-a", proto::CAPA_READ).ok());
  }
  EXPECT_EQ(verifier_.verified(), 2u);  // the second check of each came from the cache
  EXPECT_EQ(verifier_.cached(), 2u);
}

TEST_F(CapaTest, EverythingElseIsRefused) {
  proto::CapaGrant g;
  signer_.Grant("client-a", 7, proto::CAPA_READ, TwoStripes(), &g);
  const proto::Capability c = CapaOf(g, 0);
  const proto::ObjectId& obj = g.objects(0).object();
  ASSERT_TRUE(verifier_.Check(&c, obj, "client-a", proto::CAPA_READ).ok());  // now cached

  EXPECT_EQ(verifier_.Check(nullptr, obj, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  // A read capability does not write.
  EXPECT_EQ(verifier_.Check(&c, obj, "client-a", proto::CAPA_WRITE).code(), Code::kAccess);
  // Another object, another client (a replay), another OST.
  EXPECT_EQ(verifier_.Check(&c, g.objects(1).object(), "client-a", proto::CAPA_READ).code(),
            Code::kAccess);
  EXPECT_EQ(verifier_.Check(&c, obj, "client-b", proto::CAPA_READ).code(), Code::kAccess);
  proto::ObjectId other = obj;
  other.set_ost_idx(5);
  EXPECT_EQ(verifier_.Check(&c, other, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  // Raised ops, a later expiry, another ino, a flipped MAC bit: the MAC no longer matches.
  proto::Capability t = c;
  t.set_ops(proto::CAPA_READ | proto::CAPA_WRITE);
  EXPECT_EQ(verifier_.Check(&t, obj, "client-a", proto::CAPA_WRITE).code(), Code::kAccess);
  t = c;
  t.set_ops(proto::CAPA_READ | proto::CAPA_ANY_OBJECT);
  EXPECT_EQ(verifier_.Check(&t, obj, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  t = c;
  t.set_expiry_ms(c.expiry_ms() + 1);
  EXPECT_EQ(verifier_.Check(&t, obj, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  t = c;
  t.set_ino(8);
  EXPECT_EQ(verifier_.Check(&t, obj, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  t = c;
  (*t.mutable_mac())[3] ^= 1;
  EXPECT_EQ(verifier_.Check(&t, obj, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  // Signed with another key.
  CapaSigner other_signer(DeriveCapaKeys(Ring(2)), 60'000);
  proto::CapaGrant g2;
  other_signer.Grant("client-a", 7, proto::CAPA_READ, TwoStripes(), &g2);
  const proto::Capability c2 = CapaOf(g2, 0);
  EXPECT_EQ(verifier_.Check(&c2, obj, "client-a", proto::CAPA_READ).code(), Code::kAccess);
  // The genuine one still passes.
  EXPECT_TRUE(verifier_.Check(&c, obj, "client-a", proto::CAPA_READ).ok());
}

TEST_F(CapaTest, ExpiredIsItsOwnCodeAndOnlyWhenGenuine) {
  CapaSigner short_lived(keys_, -1);  // already expired when made
  proto::CapaGrant g;
  short_lived.Grant("c", 7, proto::CAPA_READ, TwoStripes(), &g);
  proto::Capability c = CapaOf(g, 0);
  Status st = verifier_.Check(&c, g.objects(0).object(), "c", proto::CAPA_READ);
  EXPECT_EQ(st.code(), Code::kCapaExpired) << st.ToString();
  EXPECT_EQ(st.ToErrno(), EACCES);
  (*c.mutable_mac())[0] ^= 0x80;
  EXPECT_EQ(verifier_.Check(&c, g.objects(0).object(), "c", proto::CAPA_READ).code(),
            Code::kAccess);
}

TEST_F(CapaTest, AuthorityCoversEveryObjectAndOnlyItsOps) {
  const proto::Capability a = signer_.Authority("mds", proto::CAPA_DESTROY);
  proto::ObjectId obj;
  obj.set_ost_idx(3);
  obj.set_object_id(12345);
  EXPECT_TRUE(verifier_.Check(&a, obj, "mds", proto::CAPA_DESTROY).ok());
  EXPECT_EQ(verifier_.Check(&a, obj, "mds", proto::CAPA_WRITE).code(), Code::kAccess);
  EXPECT_EQ(verifier_.Check(&a, obj, "other", proto::CAPA_DESTROY).code(), Code::kAccess);
}

TEST_F(CapaTest, RotatedKeysAreAccepted) {
  // The OSS holds the new and the old key; an MDS still signing with the old one passes.
  Key a{}, b{};
  a[0] = 1;
  b[0] = 2;
  auto both = DeriveCapaKeys(KeyRing({b, a}));
  CapaVerifier v(both);
  CapaSigner old_signer(DeriveCapaKeys(KeyRing({a})), 60'000);
  proto::CapaGrant g;
  old_signer.Grant("c", 1, proto::CAPA_READ, TwoStripes(), &g);
  const proto::Capability c = CapaOf(g, 1);
  EXPECT_TRUE(v.Check(&c, g.objects(1).object(), "c", proto::CAPA_READ).ok());
}

TEST_F(CapaTest, GarbageNeverCrashes) {
  std::mt19937_64 rng(42);
  proto::ObjectId obj;
  obj.set_object_id(100);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes(rng() % 96, '\0');
    for (char& ch : bytes) ch = static_cast<char>(rng());
    proto::Capability c;
    if (!c.ParseFromString(bytes)) c.set_mac(bytes);
    const Status st = verifier_.Check(&c, obj, "c", proto::CAPA_READ);
    EXPECT_EQ(st.code(), Code::kAccess);
    EXPECT_EQ(st.message().rfind("capability refused: ", 0), 0u) << st.message();
  }
  EXPECT_LE(verifier_.cached(), 0u);
}

}  // namespace
}  // namespace stria::lnet
