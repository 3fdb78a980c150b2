// Test helpers for the MDS unit tests: a temporary directory, a real Namespace in it, a
// recording OstGateway with failure injection, and request builders.
// Thread-safety: RecordingGateway is thread-safe; the rest are for one test thread.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "mds/namespace.h"
#include "mds/ops/ops.h"
#include "mds/ost_gateway.h"

namespace stria::mds::testing {

// A fresh directory under $TMPDIR, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Records every Destroy; fails those for OSTs in fail_osts. Statfs answers fixed numbers.
class RecordingGateway : public OstGateway {
 public:
  Status Destroy(const proto::OstInfo& ost, const proto::OstDestroyRequest& req) override;
  Result<proto::OstStatfsReply> Statfs(const proto::OstInfo& ost) override;

  void FailOst(uint32_t idx, bool fail);
  std::vector<proto::ObjectId> destroyed();

 private:
  std::mutex mu_;
  std::set<uint32_t> fail_osts_;
  std::vector<proto::ObjectId> destroyed_;
};

proto::Credentials Root();
proto::Credentials User(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups = {});

// An MDS over a temp dir with a RecordingGateway; Reopen() closes and opens the same data.
class MdsFixture {
 public:
  explicit MdsFixture(std::string fsname = "testfs");
  Namespace& ns() { return *ns_; }
  RecordingGateway& gateway() { return gateway_; }
  const std::string& dir() const { return tmp_.path() ; }
  // reap_orphans=false leaves files unlinked while open for ReapOrphans (as stria-mds does).
  // env: the RocksDB Env for this open (null: the default file system).
  void Reopen(bool reap_orphans = true, rocksdb::Env* env = nullptr);
  // Closes the namespace (Reopen opens it again).
  void Close() { ns_.reset(); }
  // Registers OSTs 0..n-1 (uuid "ost<i>", nid "127.0.0.1@tcp:<9000+i>").
  void AddOsts(int n);

  // Shorthands that fail the test on error and return the new inode's reply.
  proto::EntryReply Mkdir(uint64_t parent, const std::string& name, uint32_t mode = 0755,
                          const proto::Credentials& cred = Root());
  proto::EntryReply Mkfile(uint64_t parent, const std::string& name, uint32_t mode = 0644,
                           const proto::Credentials& cred = Root());
  // Status-returning forms.
  Status Create(uint64_t parent, const std::string& name, uint32_t mode,
                const proto::Credentials& cred, proto::EntryReply* rep = nullptr);
  Status Unlink(uint64_t parent, const std::string& name, bool is_dir,
                const proto::Credentials& cred = Root());
  Status Rename(uint64_t op, const std::string& on, uint64_t np, const std::string& nn,
                uint32_t flags = 0, const proto::Credentials& cred = Root());
  Result<proto::Attr> Lookup(uint64_t parent, const std::string& name,
                             const proto::Credentials& cred = Root());
  proto::Attr Getattr(uint64_t ino);

 private:
  std::string fsname_;
  TempDir tmp_;
  RecordingGateway gateway_;
  std::unique_ptr<Namespace> ns_;
};

}  // namespace stria::mds::testing
