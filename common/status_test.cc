#include "common/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace stria {
namespace {

TEST(StatusTest, OkHasNoErrno) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToErrno(), 0);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, PosixCodesBecomeTheirErrno) {
  EXPECT_EQ(Status(Code::kNoEnt, "x").ToErrno(), ENOENT);
  EXPECT_EQ(Status(Code::kNotEmpty, "x").ToErrno(), ENOTEMPTY);
  EXPECT_EQ(Status(Code::kTooBig, "x").ToErrno(), E2BIG);
  EXPECT_EQ(Status(Code::kCorrupt, "x").ToErrno(), EIO);
  EXPECT_EQ(Status(Code::kTimeout, "x").ToErrno(), ETIMEDOUT);
}

TEST(StatusTest, FilesystemCallsSeeEioForASilentServer) {
  EXPECT_EQ(Status(Code::kTimeout, "x").ToFsErrno(), EIO);
  EXPECT_EQ(Status(Code::kDisconnected, "x").ToFsErrno(), EIO);
  EXPECT_EQ(Status(Code::kNoSpc, "x").ToFsErrno(), ENOSPC);
  EXPECT_EQ(Status(Code::kAgain, "x").ToFsErrno(), EAGAIN);
}

TEST(StatusTest, OnlyTransportTroubleIsRetryable) {
  EXPECT_TRUE(Status(Code::kTimeout, "").retryable());
  EXPECT_TRUE(Status(Code::kDisconnected, "").retryable());
  EXPECT_FALSE(Status(Code::kNoEnt, "").retryable());
  EXPECT_FALSE(Status(Code::kCorrupt, "").retryable());
}

TEST(StatusTest, ErrnoRoundTrip) {
  EXPECT_EQ(CodeFromErrno(EEXIST), Code::kExist);
  EXPECT_EQ(CodeFromErrno(EDQUOT), Code::kNoSpc);
  EXPECT_EQ(CodeFromErrno(12345), Code::kIO);
  Status s = ErrnoStatus("open /x", ENOENT);
  EXPECT_EQ(s.code(), Code::kNoEnt);
  EXPECT_NE(s.ToString().find("open /x"), std::string::npos);
}

Result<int> Half(int v) {
  if (v % 2) return Status(Code::kInval, "odd");
  return v / 2;
}

Status UseHalf(int v, int* out) {
  STRIA_ASSIGN_OR_RETURN(int h, Half(v));
  *out = h;
  return Status::Ok();
}

// A peer's errno answer is told apart from the transport's failure to carry a request
// (clients retry the one and report the other name by name).
TEST(StatusTest, OnlyPosixCodesAreErrnos) {
  EXPECT_TRUE(IsErrno(Code::kNoEnt));
  EXPECT_TRUE(IsErrno(Code::kNotSup));
  EXPECT_FALSE(IsErrno(Code::kOk));
  EXPECT_FALSE(IsErrno(Code::kTimeout));
  EXPECT_FALSE(IsErrno(Code::kDisconnected));
  EXPECT_FALSE(IsErrno(Code::kCorrupt));
  EXPECT_FALSE(IsErrno(Code::kNotReady));
  EXPECT_FALSE(IsErrno(Code::kInternal));
}

TEST(ResultTest, ValueOrStatus) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseHalf(7, &out).code(), Code::kInval);
}

}  // namespace
}  // namespace stria
