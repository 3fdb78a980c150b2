// MGS: OST registration, config, params.
#include <gtest/gtest.h>

#include "mds/mds_test_util.h"
#include "mds/schema.h"

namespace stria::mds {
namespace {

using testing::MdsFixture;

proto::RegisterOstRequest Reg(const std::string& fs, uint32_t idx, const std::string& uuid,
                              const std::string& nid) {
  proto::RegisterOstRequest r;
  r.set_fsname(fs);
  r.set_index(idx);
  r.set_uuid(uuid);
  r.set_nid(nid);
  return r;
}

TEST(MgsTest, RegisterOst) {
  MdsFixture f;
  proto::RegisterOstReply rep;
  const uint64_t gen0 = f.ns().ConfigGeneration();
  ASSERT_TRUE(RegisterOst(f.ns(), Reg("testfs", 0, "u0", "127.0.0.1@tcp:9000"), &rep).ok());
  EXPECT_EQ(rep.fsname(), "testfs");
  const uint64_t gen1 = f.ns().ConfigGeneration();
  EXPECT_GT(gen1, gen0);
  // A heartbeat changes last_seen but not the generation.
  ASSERT_TRUE(RegisterOst(f.ns(), Reg("testfs", 0, "u0", "127.0.0.1@tcp:9000"), &rep).ok());
  EXPECT_EQ(f.ns().ConfigGeneration(), gen1);
  // A new NID (OSS restarted on another port) is taken and bumps the generation.
  ASSERT_TRUE(RegisterOst(f.ns(), Reg("testfs", 0, "u0", "127.0.0.1@tcp:9100"), &rep).ok());
  EXPECT_GT(f.ns().ConfigGeneration(), gen1);
  auto table = f.ns().OstTable();
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table[0].nid(), "127.0.0.1@tcp:9100");
  EXPECT_TRUE(table[0].active());
  EXPECT_GT(table[0].last_seen_ns(), 0u);

  Status st = RegisterOst(f.ns(), Reg("testfs", 0, "other", "127.0.0.1@tcp:9000"), &rep);
  EXPECT_EQ(st.code(), Code::kExist);
  EXPECT_NE(st.message().find("u0"), std::string::npos);
  EXPECT_EQ(RegisterOst(f.ns(), Reg("otherfs", 1, "u1", "127.0.0.1@tcp:9001"), &rep).code(),
            Code::kWrongFs);
  EXPECT_EQ(RegisterOst(f.ns(), Reg("testfs", 1, "u1", "no-at-sign"), &rep).code(), Code::kInval);
  EXPECT_EQ(RegisterOst(f.ns(), Reg("testfs", 1, "", "127.0.0.1@tcp:1"), &rep).code(),
            Code::kInval);
  EXPECT_EQ(RegisterOst(f.ns(), Reg("testfs", 70000, "u", "127.0.0.1@tcp:1"), &rep).code(),
            Code::kInval);
  f.Reopen();
  table = f.ns().OstTable();
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table[0].uuid(), "u0");
}

TEST(MgsTest, ConfigAndParams) {
  MdsFixture f;
  f.AddOsts(3);
  proto::SetParamRequest sp;
  sp.set_name("osc.*.max_rpcs_in_flight");
  sp.set_value("16");
  proto::SetParamReply spr;
  ASSERT_TRUE(SetParam(f.ns(), sp, &spr).ok());
  sp.set_name("llite.*.max_read_ahead_mb");
  sp.set_value("64");
  ASSERT_TRUE(SetParam(f.ns(), sp, &spr).ok());
  sp.set_name("bad name!");
  EXPECT_EQ(SetParam(f.ns(), sp, &spr).code(), Code::kInval);
  // Unknown names and out-of-range values are refused, never stored.
  sp.set_name("osc.*.no_such_tunable");
  sp.set_value("1");
  EXPECT_EQ(SetParam(f.ns(), sp, &spr).code(), Code::kInval);
  sp.set_name("osc.*.max_rpcs_in_flight");
  sp.set_value("0");
  EXPECT_EQ(SetParam(f.ns(), sp, &spr).code(), Code::kInval);
  sp.set_value("257");
  EXPECT_EQ(SetParam(f.ns(), sp, &spr).code(), Code::kInval);
  sp.set_name("jobid_var");
  sp.set_value("NOT A NAME");
  EXPECT_EQ(SetParam(f.ns(), sp, &spr).code(), Code::kInval);

  proto::FsConfig cfg;
  ASSERT_TRUE(GetConfig(f.ns(), proto::GetConfigRequest(), &cfg).ok());
  EXPECT_EQ(cfg.fsname(), "testfs");
  EXPECT_EQ(cfg.osts_size(), 3);
  EXPECT_EQ(cfg.params().size(), 2u);
  EXPECT_EQ(cfg.params().at("osc.*.max_rpcs_in_flight"), "16");
  EXPECT_EQ(cfg.default_layout().stripe_count(), 1);
  EXPECT_EQ(cfg.default_layout().stripe_size(), 4u << 20);
  EXPECT_GT(cfg.config_generation(), 0u);

  proto::GetParamRequest gp;
  gp.set_pattern("osc.*");
  proto::GetParamReply gpr;
  ASSERT_TRUE(GetParam(f.ns(), gp, &gpr).ok());
  ASSERT_EQ(gpr.params().size(), 1u);
  // Empty value deletes; params persist across reopen.
  sp.set_name("llite.*.max_read_ahead_mb");
  sp.set_value("");
  ASSERT_TRUE(SetParam(f.ns(), sp, &spr).ok());
  f.Reopen();
  gpr.Clear();
  ASSERT_TRUE(GetParam(f.ns(), proto::GetParamRequest(), &gpr).ok());
  ASSERT_EQ(gpr.params().size(), 1u);
  EXPECT_EQ(gpr.params().at("osc.*.max_rpcs_in_flight"), "16");
}

}  // namespace
}  // namespace stria::mds
