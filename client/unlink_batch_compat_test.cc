// Metadata::UnlinkBatch against MDSes that answer a batch otherwise than this one does. Each
// stand-in is a real RpcServer that a real Client connects to; it answers the way an MDS built
// before batches answers (it reads `name`, ignores `more_names` as an unknown field, and
// replies without `codes`), or the way a broken one would (a wrong number of codes). The
// current MDS's own answers are covered by mds/ops_test.cc and the mount's tests.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/metadata.h"
#include "client/testing/stand_in_mgs.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::client {
namespace {

constexpr uint64_t kParent = 7;

class StandInMds {
 public:
  // codes_per_batch -1: the MDS predates batches (no codes); -2: it is shutting down for
  // every batch (a transport error, kShutdown, retried until the deadline); else it answers
  // every request that carries more_names with that many codes, all 0.
  explicit StandInMds(int codes_per_batch) : codes_per_batch_(codes_per_batch) {
    mgs_.server().Register<proto::UnlinkRequest, proto::UnlinkReply>(
        proto::OP_MDS_UNLINK,
        [this](lnet::RpcContext&, const proto::UnlinkRequest& req, proto::UnlinkReply* rep) {
          std::lock_guard lock(mu_);
          seen_.push_back(req);
          if (req.parent() != kParent) return Status(Code::kNoEnt, "no such directory");
          if (codes_per_batch_ == -2 && req.more_names_size() > 0) {
            return Status(Code::kShutdown, "stopping");
          }
          if (codes_per_batch_ >= 0 && req.more_names_size() > 0) {
            for (int i = 0; i < codes_per_batch_; ++i) rep->add_codes(0);
            return Status::Ok();
          }
          // As before batches: `name` alone. "missing" is not there.
          if (req.name() == "missing") return Status(Code::kNoEnt, "no such file");
          rep->mutable_parent_attr()->set_ino(kParent);
          rep->mutable_parent_attr()->set_nlink(2 + seen_.size());  // marks the latest reply
          return Status::Ok();
        });
    mgs_.Start();
  }

  std::unique_ptr<Client> Connect() { return mgs_.Connect(/*retry_deadline_ms=*/1000); }

  std::vector<proto::UnlinkRequest> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  const int codes_per_batch_;
  std::mutex mu_;
  std::vector<proto::UnlinkRequest> seen_;
  testing::StandInMgs mgs_{/*worker_threads=*/2};  // last: stopped before the rest goes
};

proto::Credentials Root() {
  proto::Credentials c;
  c.set_uid(0);
  c.set_gid(0);
  return c;
}

TEST(UnlinkBatchCompatTest, AnMdsFromBeforeBatchesGetsTheRestOneByOne) {
  StandInMds mds(/*codes_per_batch=*/-1);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  Metadata md(client.get());
  auto rep = md.UnlinkBatch(Root(), kParent, {"a", "b", "missing", "c"}, false);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  // One result per name, in order: the first from the batch's reply, the rest from their own.
  ASSERT_EQ(rep->codes_size(), 4);
  EXPECT_EQ(rep->codes(0), 0);
  EXPECT_EQ(rep->codes(1), 0);
  EXPECT_EQ(rep->codes(2), static_cast<int32_t>(Code::kNoEnt));
  EXPECT_EQ(rep->codes(3), 0);
  // The batch went once, and each name after the first alone, without more_names.
  const std::vector<proto::UnlinkRequest> seen = mds.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].name(), "a");
  ASSERT_EQ(seen[0].more_names_size(), 3);
  const char* const rest[] = {"b", "missing", "c"};
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].name(), rest[i - 1]) << i;
    EXPECT_EQ(seen[i].more_names_size(), 0) << i;
    EXPECT_EQ(seen[i].parent(), kParent) << i;
  }
  // The parent's attributes are those of the last unlink that succeeded ("c", the 4th).
  EXPECT_EQ(rep->parent_attr().nlink(), 2u + 4u);
}

// An MDS from before batches that fails the first name answers the whole request with that
// error: it is the first name's result, and the rest still go. A last name that fails leaves
// the parent's attributes of the last one that succeeded.
TEST(UnlinkBatchCompatTest, AFirstNameThatFailsIsOnlyItsOwnResult) {
  StandInMds mds(/*codes_per_batch=*/-1);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  Metadata md(client.get());
  auto rep = md.UnlinkBatch(Root(), kParent, {"missing", "a", "missing"}, false);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->codes_size(), 3);
  EXPECT_EQ(rep->codes(0), static_cast<int32_t>(Code::kNoEnt));
  EXPECT_EQ(rep->codes(1), 0);
  EXPECT_EQ(rep->codes(2), static_cast<int32_t>(Code::kNoEnt));
  const std::vector<proto::UnlinkRequest> seen = mds.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].name(), "a");
  EXPECT_EQ(seen[2].name(), "missing");
  ASSERT_TRUE(rep->has_parent_attr());
  EXPECT_EQ(rep->parent_attr().nlink(), 2u + 2u) << "from the unlink of a, the 2nd request";
}

// A batch refused as a whole (here the parent is not there, which this MDS checks before any
// name) gives each name its own answer, asked alone; a transport error gives none.
TEST(UnlinkBatchCompatTest, ABatchRefusedAsAWholeIsAnsweredNameByName) {
  StandInMds mds(/*codes_per_batch=*/3);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  Metadata md(client.get());
  auto rep = md.UnlinkBatch(Root(), kParent + 1, {"a", "b", "c"}, false);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->codes_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rep->codes(i), static_cast<int32_t>(Code::kNoEnt)) << i;
  EXPECT_FALSE(rep->has_parent_attr());
  EXPECT_EQ(mds.seen().size(), 3u);
}

// A batch that fails in transport leaves nothing known about any name: the error is the
// answer, and no name is sent alone (each could have been unlinked by the batch).
TEST(UnlinkBatchCompatTest, ATransportErrorIsTheAnswerAndNoNameGoesAlone) {
  StandInMds mds(/*codes_per_batch=*/-2);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  Metadata md(client.get());
  auto rep = md.UnlinkBatch(Root(), kParent, {"a", "b", "c"}, false);
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.status().code(), Code::kShutdown) << rep.status().ToString();
  const std::vector<proto::UnlinkRequest> seen = mds.seen();
  ASSERT_FALSE(seen.empty());
  for (const proto::UnlinkRequest& r : seen) {
    EXPECT_EQ(r.more_names_size(), 2) << "only the batch, resent: " << r.name();
  }
}

TEST(UnlinkBatchCompatTest, AReplyWithTheWrongNumberOfResultsIsAProtocolError) {
  StandInMds mds(/*codes_per_batch=*/2);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  Metadata md(client.get());
  auto rep = md.UnlinkBatch(Root(), kParent, {"a", "b", "c"}, false);
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.status().code(), Code::kProtocol) << rep.status().ToString();
  EXPECT_EQ(mds.seen().size(), 1u) << "nothing is sent again one by one";
  // A batch of one name is a plain unlink, answered without codes by any MDS: one result.
  auto one = md.UnlinkBatch(Root(), kParent, {"d"}, false);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->codes_size(), 1);
  EXPECT_EQ(one->codes(0), 0);
  EXPECT_EQ(md.UnlinkBatch(Root(), kParent, {}, false).status().code(), Code::kInval);
}

}  // namespace
}  // namespace stria::client
