// CreateBatches (client/entry_batches.h) against stand-in MDSes: real RpcServers that a real
// Client connects to, which hold requests back to make creates wait, and answer batches as
// this MDS does (codes and one reply per create) or as an MDS from before batches does (the
// first create alone). The MDS's own batches are covered by mds/ops_test.cc, and their
// replay after a power loss by tests/fault_power_loss_test.cc.
#include "client/entry_batches.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/metadata.h"
#include "client/testing/stand_in_mgs.h"
#include "lnet/rpc_server.h"
#include "proto/stria.pb.h"

namespace stria::client {
namespace {

constexpr uint64_t kParent = 7;

// The inode a stand-in gives name "fN": 1000 + N. Names starting with 'x' exist already.
uint64_t InoOf(const std::string& name) { return 1000 + std::stoull(name.substr(1)); }

// How a stand-in answers a request that carries `more`.
enum class Batches {
  kAnswered,   // as this MDS: codes and one reply per create
  kIgnored,    // as an MDS from before batches: the first create alone
  kShutdown,   // it is stopping for every batch: a transport error (retried to the deadline)
  kWrongCount  // broken: one code fewer than creates
};

class StandInMds {
 public:
  explicit StandInMds(Batches batches) : batches_(batches) {
    mgs_.server().Register<proto::CreateRequest, proto::EntryReply>(
        proto::OP_MDS_CREATE,
        [this](lnet::RpcContext&, const proto::CreateRequest& req, proto::EntryReply* rep) {
          std::unique_lock lock(mu_);
          seen_.push_back(req);
          Arrived(lock);
          if (req.parent() != kParent) return Status(Code::kNoEnt, "no such directory");
          auto one = [](const proto::CreateRequest& c, proto::EntryReply* r) {
            if (c.name()[0] == 'x') return Code::kExist;
            r->mutable_attr()->set_ino(InoOf(c.name()));
            r->mutable_attr()->set_mode(c.mode());
            return Code::kOk;
          };
          if (batches_ == Batches::kIgnored || req.more_size() == 0) {
            const Code c = one(req, rep);
            return c == Code::kOk ? Status::Ok() : Status(c, "exists");
          }
          if (batches_ == Batches::kShutdown) return Status(Code::kShutdown, "stopping");
          rep->add_codes(static_cast<int32_t>(one(req, rep)));
          for (const proto::CreateRequest& item : req.more()) {
            EXPECT_FALSE(item.has_cred()) << "an item's credentials are the batch's";
            rep->add_codes(static_cast<int32_t>(one(item, rep->add_more())));
          }
          if (batches_ == Batches::kWrongCount) rep->mutable_codes()->RemoveLast();
          rep->mutable_parent_attr()->set_ino(kParent);
          return Status::Ok();
        });
    // Names starting with 'x' do not exist.
    mgs_.server().Register<proto::LookupRequest, proto::EntryReply>(
        proto::OP_MDS_LOOKUP,
        [this](lnet::RpcContext&, const proto::LookupRequest& req, proto::EntryReply* rep) {
          std::unique_lock lock(mu_);
          lookups_.push_back(req);
          Arrived(lock);
          if (req.parent() != kParent) {
            if (batches_ == Batches::kIgnored || req.more_names_size() == 0) {
              return Status(Code::kNoEnt, "no such directory");
            }
            // As this MDS answers a batch in a directory it cannot search: each name's why.
            for (int i = 0; i <= req.more_names_size(); ++i) {
              rep->add_codes(static_cast<int32_t>(Code::kNoEnt));
              if (i > 0) rep->add_more();
            }
            return Status::Ok();
          }
          auto one = [&](const std::string& name, proto::EntryReply* r) {
            if (name[0] == 'x') return req.negative_ok() ? Code::kOk : Code::kNoEnt;
            r->mutable_attr()->set_ino(InoOf(name));
            if (req.open()) {  // the open intent: handle 10 x the inode
              r->mutable_open()->set_handle(InoOf(name) * 10);
              r->mutable_open()->mutable_attr()->set_ino(InoOf(name));
            }
            return Code::kOk;
          };
          if (batches_ == Batches::kIgnored || req.more_names_size() == 0) {
            const Code c = one(req.name(), rep);
            return c == Code::kOk ? Status::Ok() : Status(c, "no entry");
          }
          rep->add_codes(static_cast<int32_t>(one(req.name(), rep)));
          for (const std::string& name : req.more_names()) {
            rep->add_codes(static_cast<int32_t>(one(name, rep->add_more())));
          }
          if (batches_ == Batches::kWrongCount) rep->mutable_codes()->RemoveLast();
          return Status::Ok();
        });
    mgs_.server().Register<proto::CloseRequest, proto::AttrReply>(
        proto::OP_MDS_CLOSE,
        [this](lnet::RpcContext&, const proto::CloseRequest& req, proto::AttrReply*) {
          std::lock_guard lock(mu_);
          closed_.insert(req.handle());
          return Status::Ok();
        });
    mgs_.Start();
  }
  ~StandInMds() { Release(); }  // held handlers return before mgs_ stops

  std::unique_ptr<Client> Connect(int retry_deadline_ms = 5000) {
    return mgs_.Connect(retry_deadline_ms);
  }
  // The next n requests wait for Release(); returns how many came before them.
  size_t Hold(size_t n) {
    std::lock_guard lock(mu_);
    released_ = false;
    hold_until_ = arrived_ + n;
    return arrived_;
  }
  void WaitSeen(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return arrived_ >= n; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<proto::CreateRequest> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::vector<proto::LookupRequest> lookups() {
    std::lock_guard lock(mu_);
    return lookups_;
  }
  std::set<uint64_t> closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }

 private:
  // A request came: held while it is one of those Hold() asked for. REQUIRES mu_.
  void Arrived(std::unique_lock<std::mutex>& lock) {
    ++arrived_;
    cv_.notify_all();
    if (arrived_ <= hold_until_) cv_.wait(lock, [&] { return released_; });
  }

  const Batches batches_;
  size_t hold_until_ = 0;  // requests up to this many in all wait for Release()
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  size_t arrived_ = 0;  // requests of any kind
  std::vector<proto::CreateRequest> seen_;
  std::vector<proto::LookupRequest> lookups_;
  std::set<uint64_t> closed_;                      // handles an OP_MDS_CLOSE named
  testing::StandInMgs mgs_{/*worker_threads=*/4};  // last: stopped before the rest goes
};

proto::Credentials Root() {
  proto::Credentials c;
  c.set_uid(0);
  c.set_gid(0);
  return c;
}

// Runs op(i) for each of `names`, each from its own thread, once the first kMaxInFlight are
// at the stand-in and the rest wait in `batches`; returns each one's result.
template <typename Queues, typename Op>
std::vector<Result<proto::EntryReply>> AtOnce(StandInMds& mds, const Queues& batches,
                                              const std::vector<std::string>& names, Op op) {
  std::vector<Result<proto::EntryReply>> results(names.size(), Status(Code::kInternal, ""));
  std::vector<std::thread> threads;
  auto run = [&](size_t i) { results[i] = op(names[i]); };
  const size_t first = Queues::kMaxInFlight;
  const size_t before = mds.Hold(first);
  for (size_t i = 0; i < first; ++i) threads.emplace_back(run, i);
  mds.WaitSeen(before + first);
  for (size_t i = first; i < names.size(); ++i) threads.emplace_back(run, i);
  // Every later one waits for a request of the directory to come back.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (batches.counters().waiting < names.size() - first &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(batches.counters().waiting, names.size() - first);
  mds.Release();
  for (std::thread& t : threads) t.join();
  return results;
}

// Creates `names` in `parent` at once (AtOnce).
std::vector<Result<proto::EntryReply>> CreateAtOnce(StandInMds& mds, Client* client,
                                                    const std::vector<std::string>& names,
                                                    uint64_t parent = kParent) {
  return AtOnce(mds, client->create_batches(), names, [&](const std::string& name) {
    Metadata::CreateArgs args;
    args.parent = parent;
    args.name = name;
    args.mode = S_IFREG | 0644;
    return Metadata(client).Create(Root(), args);
  });
}

// Looks `names` up in `parent` at once (AtOnce).
std::vector<Result<proto::EntryReply>> LookupAtOnce(StandInMds& mds, Client* client,
                                                    const std::vector<std::string>& names,
                                                    bool negative_ok = false,
                                                    uint64_t parent = kParent) {
  return AtOnce(mds, client->lookup_batches(), names, [&](const std::string& name) {
    return Metadata(client).Lookup(Root(), parent, name, negative_ok);
  });
}

// What the requests seen[from..] carried: how many items in all, and the most any carried
// after its first.
int MoreOf(const proto::CreateRequest& r) { return r.more_size(); }
int MoreOf(const proto::LookupRequest& r) { return r.more_names_size(); }
struct Tally {
  size_t items = 0;
  int largest = 0;
};
template <typename R>
Tally TallyOf(const std::vector<R>& seen, size_t from = 0) {
  Tally t;
  for (size_t i = from; i < seen.size(); ++i) {
    t.items += 1 + MoreOf(seen[i]);
    t.largest = std::max(t.largest, MoreOf(seen[i]));
  }
  return t;
}

// Each of `names` answered as the stand-in answers it alone: a name starting with 'x' with
// `refused`, any other with its inode.
void ExpectAnswers(const std::vector<Result<proto::EntryReply>>& results,
                   const std::vector<std::string>& names, Code refused) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i][0] == 'x') {
      EXPECT_EQ(results[i].status().code(), refused) << names[i];
    } else {
      ASSERT_TRUE(results[i].ok()) << names[i] << ": " << results[i].status().ToString();
      EXPECT_EQ(results[i]->attr().ino(), InoOf(names[i])) << names[i];
    }
  }
}

// After the held creates went alone, each later one of `names` was the own create of exactly one
// request (the first of a batch, or alone after a batch was answered for its first only),
// and at least one of those requests carried others behind it.
void ExpectEachSentOnceAsItsOwn(const std::vector<proto::CreateRequest>& seen,
                                const std::vector<std::string>& names) {
  constexpr size_t kHeld = CreateBatches::kMaxInFlight;
  const std::multiset<std::string> later(names.begin() + kHeld, names.end());
  ASSERT_GE(seen.size(), kHeld);
  for (size_t i = 0; i < kHeld; ++i) EXPECT_EQ(seen[i].more_size(), 0);
  std::multiset<std::string> own;
  for (size_t i = kHeld; i < seen.size(); ++i) own.insert(seen[i].name());
  EXPECT_EQ(own, later);
  EXPECT_GE(TallyOf(seen, kHeld).largest, 1);
}

TEST(CreateBatchesTest, CreatesThatWaitGoAsOneBatchAndEachGetsItsOwnAnswer) {
  StandInMds mds(Batches::kAnswered);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "f3", "x4", "f5", "f6", "x7", "f8"};
  auto results = CreateAtOnce(mds, client.get(), names);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i][0] == 'x') {
      EXPECT_EQ(results[i].status().code(), Code::kExist) << names[i];
      continue;
    }
    ASSERT_TRUE(results[i].ok()) << names[i] << ": " << results[i].status().ToString();
    EXPECT_EQ(results[i]->attr().ino(), InoOf(names[i])) << names[i];
    EXPECT_EQ(results[i]->codes_size(), 0);
    EXPECT_EQ(results[i]->more_size(), 0);
  }
  // The held creates went alone. The others waited, and went in the slots the held ones
  // freed: as many batches as slots at most (fewer when a slot's leader took the whole
  // queue before the next slot came free).
  constexpr size_t kHeld = CreateBatches::kMaxInFlight;
  const std::vector<proto::CreateRequest> seen = mds.seen();
  ASSERT_GE(seen.size(), kHeld + 1);
  ASSERT_LE(seen.size(), 2 * kHeld);
  for (size_t i = 0; i < kHeld; ++i) EXPECT_EQ(seen[i].more_size(), 0);
  size_t batched = 0;
  for (size_t i = kHeld; i < seen.size(); ++i) {
    if (seen[i].more_size() > 0) batched += 1 + seen[i].more_size();
  }
  const Tally t = TallyOf(seen, kHeld);
  EXPECT_EQ(t.items, names.size() - kHeld);
  EXPECT_GE(t.largest, 2);
  const CreateBatches::Counters c = client->create_batches().counters();
  EXPECT_EQ(c.requests, seen.size());
  EXPECT_EQ(c.batched, batched);
  EXPECT_EQ(c.waiting, 0u);
}

// The creates a batch carried after its first are sent again alone when the MDS answered
// only the first (it reads `more` as an unknown field), each exactly once.
TEST(CreateBatchesTest, AnMdsFromBeforeBatchesGetsTheRestOneByOne) {
  StandInMds mds(Batches::kIgnored);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "f3", "x4", "f5"};
  ExpectAnswers(CreateAtOnce(mds, client.get(), names), names, Code::kExist);
  ExpectEachSentOnceAsItsOwn(mds.seen(), names);
}

// A batch the MDS refuses as a whole (its parent's check) cannot be told from its first
// create's own error, as an MDS from before batches answers: the others are asked alone,
// and each gets the error.
TEST(CreateBatchesTest, ABatchRefusedAsAWholeIsAskedCreateByCreate) {
  StandInMds mds(Batches::kAnswered);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "f3", "f4", "f5"};
  auto results = CreateAtOnce(mds, client.get(), names, kParent + 1);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(results[i].status().code(), Code::kNoEnt) << names[i];
  }
  ExpectEachSentOnceAsItsOwn(mds.seen(), names);

  // Once this MDS has answered a batch with codes, its refusal of a whole batch is every
  // create's answer: none is sent again.
  const std::vector<std::string> good = {"f11", "f12", "f13", "f14"};
  for (const auto& r : CreateAtOnce(mds, client.get(), good)) EXPECT_TRUE(r.ok());
  const size_t before = mds.seen().size();
  const std::vector<std::string> more = {"f21", "f22", "f23", "f24"};
  for (const auto& r : CreateAtOnce(mds, client.get(), more, kParent + 1)) {
    EXPECT_EQ(r.status().code(), Code::kNoEnt);
  }
  EXPECT_EQ(TallyOf(mds.seen(), before).items, more.size());
}

// A batch that fails in transport leaves nothing known about any create: the error is each
// one's answer, and none is sent alone (each could have been made by the batch).
TEST(CreateBatchesTest, ATransportErrorIsEveryCreatesAnswerAndNoneGoesAlone) {
  StandInMds mds(Batches::kShutdown);
  auto client = mds.Connect(/*retry_deadline_ms=*/1000);
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "f3", "f4"};
  auto results = CreateAtOnce(mds, client.get(), names);
  constexpr size_t kHeld = CreateBatches::kMaxInFlight;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i < kHeld) {
      EXPECT_TRUE(results[i].ok()) << names[i] << ": went alone";
    } else {
      EXPECT_EQ(results[i].status().code(), Code::kShutdown) << names[i];
    }
  }
  const std::vector<proto::CreateRequest> seen = mds.seen();
  for (size_t i = kHeld; i < seen.size(); ++i) {
    EXPECT_GT(seen[i].more_size(), 0) << "only batches, resent: " << seen[i].name();
  }
}

// A reply with the wrong number of results answers no create: each gets a protocol error,
// and none is sent again.
TEST(CreateBatchesTest, AReplyWithTheWrongNumberOfResultsIsAProtocolError) {
  StandInMds mds(Batches::kWrongCount);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "f3", "f4"};
  auto results = CreateAtOnce(mds, client.get(), names);
  constexpr size_t kHeld = CreateBatches::kMaxInFlight;
  size_t failed = 0;
  for (size_t i = kHeld; i < names.size(); ++i) {
    if (!results[i].ok()) {
      EXPECT_EQ(results[i].status().code(), Code::kProtocol) << names[i];
      ++failed;
    }
  }
  EXPECT_GE(failed, 2u) << "at least one batch of two or more";
  EXPECT_EQ(TallyOf(mds.seen()).items, names.size()) << "nothing is sent again one by one";
}

// A batch of lookups with an open intent answered with the wrong number of results: each
// gets a protocol error, and every file its reply says was opened is closed again (the MDS
// would keep them open, and unlinked ones as orphans, for the mount's whole session).
TEST(LookupBatchesTest, AReplyWithTheWrongNumberOfResultsClosesTheOpensItBrought) {
  StandInMds mds(Batches::kWrongCount);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "f3", "f4", "f5", "f6"};
  auto results = AtOnce(mds, client->lookup_batches(), names, [&](const std::string& name) {
    return Metadata(client.get()).LookupOpen(Root(), kParent, name, O_RDONLY);
  });
  std::set<uint64_t> refused;
  for (size_t i = 0; i < names.size(); ++i) {
    if (results[i].ok()) {
      EXPECT_EQ(results[i]->open().handle(), InoOf(names[i]) * 10) << names[i];
    } else {
      EXPECT_EQ(results[i].status().code(), Code::kProtocol) << names[i];
      refused.insert(InoOf(names[i]) * 10);
    }
  }
  EXPECT_GE(refused.size(), 2u) << "at least one batch of two or more";
  EXPECT_EQ(mds.closed(), refused) << "exactly the handles of the batches refused";
}

// Metadata::LookupMany (statahead's request: client/fuse/statahead.h) against each kind
// of MDS: one request whatever the MDS; each name its own answer from an MDS that answers
// batches; the first name's answer alone from one before batches; and a reply that does
// not answer the batch is an error that leaves none of its opens at the MDS.
TEST(LookupManyTest, EachKindOfMdsGetsOneRequestAndLeavesNoOpenBehind) {
  const std::vector<std::string> names = {"f1", "x2", "f3"};
  auto ask = [&](StandInMds& mds) {
    auto client = mds.Connect();
    EXPECT_NE(client, nullptr);
    return Metadata(client.get()).LookupMany(Root(), kParent, names, /*open=*/true);
  };
  {
    StandInMds mds(Batches::kAnswered);
    auto got = ask(mds);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), 3u);
    ASSERT_TRUE((*got)[0].ok());
    EXPECT_EQ((*got)[0]->open().handle(), InoOf("f1") * 10);
    EXPECT_EQ((*got)[1].status().code(), Code::kNoEnt);
    ASSERT_TRUE((*got)[2].ok());
    EXPECT_EQ((*got)[2]->attr().ino(), InoOf("f3"));
    EXPECT_EQ(mds.lookups().size(), 1u);
    EXPECT_TRUE(mds.closed().empty());
  }
  {
    StandInMds mds(Batches::kIgnored);
    auto got = ask(mds);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), 3u);
    ASSERT_TRUE((*got)[0].ok());
    EXPECT_EQ((*got)[0]->attr().ino(), InoOf("f1"));
    EXPECT_EQ((*got)[1].status().code(), Code::kNotSup);
    EXPECT_EQ((*got)[2].status().code(), Code::kNotSup);
    EXPECT_EQ(mds.lookups().size(), 1u) << "the others are not asked again";
  }
  {
    StandInMds mds(Batches::kWrongCount);
    auto got = ask(mds);
    EXPECT_EQ(got.status().code(), Code::kProtocol);
    EXPECT_EQ(mds.closed(), (std::set<uint64_t>{InoOf("f1") * 10, InoOf("f3") * 10}))
        << "the opens the broken reply brought are closed";
  }
}

// A kept batch replays only what it created, each under the inode and layout it got.
TEST(CreateBatchesTest, AReplayedBatchCarriesOnlyWhatItCreated) {
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kParent);
  req.set_name("a");
  for (const char* n : {"b", "c", "d"}) req.add_more()->set_name(n);
  proto::EntryReply rep;
  auto ok = [](proto::EntryReply* r, uint64_t ino) {
    r->mutable_attr()->set_ino(ino);
    r->mutable_layout()->add_objects()->set_object_id(ino * 10);
  };
  // a and c failed (never replayed: they must not succeed then); b and d were created.
  for (Code code : {Code::kExist, Code::kOk, Code::kExist, Code::kOk}) {
    rep.add_codes(static_cast<int32_t>(code));
  }
  for (int i = 0; i < 3; ++i) rep.add_more();
  ok(rep.mutable_more(0), 21);
  ok(rep.mutable_more(2), 23);
  proto::CreateRequest patched = req;
  PatchCreateReplay(&patched, rep);
  EXPECT_EQ(patched.name(), "b");
  EXPECT_EQ(patched.parent(), kParent);
  EXPECT_TRUE(patched.has_cred());
  EXPECT_EQ(patched.replay_ino(), 21u);
  EXPECT_EQ(patched.replay_layout().objects(0).object_id(), 210u);
  ASSERT_EQ(patched.more_size(), 1);
  EXPECT_EQ(patched.more(0).name(), "d");
  EXPECT_EQ(patched.more(0).replay_ino(), 23u);
  EXPECT_EQ(patched.more(0).replay_layout().objects(0).object_id(), 230u);
  EXPECT_FALSE(patched.more(0).has_cred());
  // A reply that does not answer the request leaves it as it was.
  rep.mutable_more()->RemoveLast();
  patched = req;
  PatchCreateReplay(&patched, rep);
  EXPECT_EQ(patched.SerializeAsString(), req.SerializeAsString());
}

// An MDS from before batches made the batch's first create alone (no codes): the batch is
// replayed as that create, under its inode and layout (the others went alone, and replay
// as such).
TEST(CreateBatchesTest, ABatchAnsweredWithoutCodesReplaysAsItsFirstCreate) {
  proto::CreateRequest req;
  *req.mutable_cred() = Root();
  req.set_parent(kParent);
  req.set_name("a");
  for (const char* n : {"b", "c"}) req.add_more()->set_name(n);
  proto::EntryReply rep;
  rep.mutable_attr()->set_ino(31);
  rep.mutable_layout()->add_objects()->set_object_id(310);
  PatchCreateReplay(&req, rep);
  EXPECT_EQ(req.name(), "a");
  EXPECT_EQ(req.more_size(), 0);
  EXPECT_EQ(req.replay_ino(), 31u);
  EXPECT_EQ(req.replay_layout().objects(0).object_id(), 310u);
  EXPECT_EQ(req.parent(), kParent);
}

// Lookups of one directory that wait go as one request; each gets its own answer, a
// missing name its own ENOENT (or, asked with negative_ok, its empty reply).
TEST(LookupBatchesTest, LookupsThatWaitGoAsOneBatchAndEachGetsItsOwnAnswer) {
  StandInMds mds(Batches::kAnswered);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  for (bool negative_ok : {false, true}) {
    const size_t before = mds.lookups().size();
    const std::vector<std::string> names = {"f1", "f2", "x3", "f4", "f5", "x6"};
    auto results = LookupAtOnce(mds, client.get(), names, negative_ok);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i][0] == 'x' && !negative_ok) {
        EXPECT_EQ(results[i].status().code(), Code::kNoEnt) << names[i];
        continue;
      }
      ASSERT_TRUE(results[i].ok()) << names[i] << ": " << results[i].status().ToString();
      EXPECT_EQ(results[i]->attr().ino(), names[i][0] == 'x' ? 0 : InoOf(names[i])) << names[i];
      EXPECT_EQ(results[i]->codes_size(), 0);
      EXPECT_EQ(results[i]->more_size(), 0);
    }
    const std::vector<proto::LookupRequest> seen = mds.lookups();
    for (size_t i = before; i < seen.size(); ++i) EXPECT_EQ(seen[i].negative_ok(), negative_ok);
    const Tally t = TallyOf(seen, before);
    EXPECT_EQ(t.items, names.size());
    EXPECT_GE(t.largest, 2);
    EXPECT_LE(seen.size() - before, 2 * LookupBatches::kMaxInFlight);
  }
  EXPECT_EQ(client->lookup_batches().counters().waiting, 0u);
  EXPECT_GE(client->lookup_batches().counters().batched, 6u);
}

// An MDS from before batches answers a batch's first name alone: the others are asked
// again one by one, each once.
TEST(LookupBatchesTest, AnMdsFromBeforeBatchesGetsTheRestOneByOne) {
  StandInMds mds(Batches::kIgnored);
  auto client = mds.Connect();
  ASSERT_NE(client, nullptr);
  const std::vector<std::string> names = {"f1", "f2", "x3", "f4", "f5"};
  ExpectAnswers(LookupAtOnce(mds, client.get(), names), names, Code::kNoEnt);
  std::multiset<std::string> own;
  for (const proto::LookupRequest& r : mds.lookups()) own.insert(r.name());
  EXPECT_EQ(own, std::multiset<std::string>(names.begin(), names.end()));
  EXPECT_GE(TallyOf(mds.lookups()).largest, 1);
}

// A directory that cannot be searched: this MDS answers each name of a batch with why,
// so each lookup gets its error from the batch, and none is sent again; an MDS from before
// batches refuses the batch as its first name, and the others are asked alone.
TEST(LookupBatchesTest, ADirectoryThatCannotBeSearchedIsEachNamesAnswer) {
  for (Batches kind : {Batches::kAnswered, Batches::kIgnored}) {
    StandInMds mds(kind);
    auto client = mds.Connect();
    ASSERT_NE(client, nullptr);
    const std::vector<std::string> names = {"f1", "f2", "f3", "f4", "f5"};
    for (const auto& r : LookupAtOnce(mds, client.get(), names, false, kParent + 1)) {
      EXPECT_EQ(r.status().code(), Code::kNoEnt);
    }
    const Tally t = TallyOf(mds.lookups());
    EXPECT_GE(t.largest, 1);
    if (kind == Batches::kAnswered) {
      EXPECT_EQ(t.items, names.size()) << "none sent again";
    } else {
      EXPECT_GT(t.items, names.size()) << "the batch's later names asked alone";
    }
  }
}

}  // namespace
}  // namespace stria::client
