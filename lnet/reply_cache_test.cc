#include "lnet/reply_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "lnet/rpc_client.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::lnet {
namespace {

TEST(ReplyCacheTest, SecondBeginGetsTheFirstReply) {
  ReplyCache cache;
  EXPECT_FALSE(cache.Begin("c1", 7).has_value());
  cache.Complete("c1", 7, {Status(Code::kExist, "x"), "body"});
  auto again = cache.Begin("c1", 7);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status.code(), Code::kExist);
  EXPECT_EQ(again->body, "body");
  // Another client's same xid is a different request.
  EXPECT_FALSE(cache.Begin("c2", 7).has_value());
}

TEST(ReplyCacheTest, ResendWaitsForTheRunningOriginal) {
  ReplyCache cache;
  ASSERT_FALSE(cache.Begin("c", 1).has_value());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cache.Complete("c", 1, {Status::Ok(), "done"});
  });
  auto r = cache.Begin("c", 1);
  t.join();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "done");
}

TEST(ReplyCacheTest, ForgetsTheOldestBeyondCapacity) {
  ReplyCache cache(2);
  for (uint64_t x = 1; x <= 3; ++x) {
    ASSERT_FALSE(cache.Begin("c", x).has_value());
    cache.Complete("c", x, {Status::Ok(), std::to_string(x)});
  }
  EXPECT_FALSE(cache.Begin("c", 1).has_value());  // evicted: would run again
  EXPECT_TRUE(cache.Begin("c", 3).has_value());
}

// A request whose first attempt times out on the client is resent with the same xid; the
// server runs it once and answers the resend from the cache.
TEST(ReplyCacheTest, TimedOutRequestRunsOnceOverRpc) {
  ServerOptions so;
  so.reply_cache_opcodes = {proto::OP_MDS_CREATE};
  RpcServer server(so);
  std::atomic<int> runs{0};
  server.Register<proto::CreateRequest, proto::EntryReply>(
      proto::OP_MDS_CREATE,
      [&](RpcContext&, const proto::CreateRequest& req, proto::EntryReply* rep) {
        if (runs.fetch_add(1) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(700));
        rep->mutable_attr()->set_ino(42);
        return Status::Ok();
      });
  Nid nid;
  nid.addr = "127.0.0.1";
  nid.port = 0;
  ASSERT_TRUE(server.Start(nid).ok());
  nid.port = server.port();
  ClientOptions co;
  co.rpc_timeout_ms = 300;
  co.retry_deadline_ms = 5000;
  RpcClient client(nid, co);
  proto::CreateRequest req;
  req.set_name("f");
  proto::EntryReply rep;
  Status st = client.Call(proto::OP_MDS_CREATE, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rep.attr().ino(), 42u);
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace stria::lnet
