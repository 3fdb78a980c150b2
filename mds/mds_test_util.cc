#include "mds/mds_test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace stria::mds::testing {

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/stria-mds-test-XXXXXX";
  char* p = mkdtemp(tmpl.data());
  if (p == nullptr) abort();
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Status RecordingGateway::Destroy(const proto::OstInfo& ost, const proto::OstDestroyRequest& req) {
  std::lock_guard lock(mu_);
  if (fail_osts_.count(ost.index())) return Status(Code::kTimeout, "injected failure");
  for (const auto& o : req.objects()) destroyed_.push_back(o);
  return Status::Ok();
}

Result<proto::OstStatfsReply> RecordingGateway::Statfs(const proto::OstInfo& ost) {
  std::lock_guard lock(mu_);
  if (fail_osts_.count(ost.index())) return Status(Code::kTimeout, "injected failure");
  proto::OstStatfsReply r;
  r.set_ost_idx(ost.index());
  r.set_bsize(1024);
  r.set_blocks(4000);
  r.set_bfree(3000);
  r.set_bavail(2000);
  return r;
}

void RecordingGateway::FailOst(uint32_t idx, bool fail) {
  std::lock_guard lock(mu_);
  if (fail) {
    fail_osts_.insert(idx);
  } else {
    fail_osts_.erase(idx);
  }
}

std::vector<proto::ObjectId> RecordingGateway::destroyed() {
  std::lock_guard lock(mu_);
  return destroyed_;
}

proto::Credentials Root() { return proto::Credentials(); }

proto::Credentials User(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups) {
  proto::Credentials c;
  c.set_uid(uid);
  c.set_gid(gid);
  for (uint32_t g : groups) c.add_groups(g);
  return c;
}

MdsFixture::MdsFixture(std::string fsname) : fsname_(std::move(fsname)) { Reopen(); }

void MdsFixture::Reopen(bool reap_orphans, rocksdb::Env* env) {
  ns_.reset();
  NamespaceOptions o;
  o.env = env;
  o.data_dir = tmp_.path() + "/db";
  o.fsname = fsname_;
  o.reap_orphans_at_open = reap_orphans;
  auto r = Namespace::Open(o, &gateway_);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    abort();
  }
  ns_ = std::move(r).value();
}

void MdsFixture::AddOsts(int n) {
  for (int i = 0; i < n; ++i) {
    proto::RegisterOstRequest req;
    req.set_fsname(fsname_);
    req.set_index(i);
    req.set_uuid("ost" + std::to_string(i));
    req.set_nid("127.0.0.1@tcp:" + std::to_string(9000 + i));
    proto::RegisterOstReply rep;
    Status st = RegisterOst(*ns_, req, &rep);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
}

Status MdsFixture::Create(uint64_t parent, const std::string& name, uint32_t mode,
                          const proto::Credentials& cred, proto::EntryReply* rep) {
  proto::CreateRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(name);
  req.set_mode(mode);
  proto::EntryReply local;
  return stria::mds::Create(*ns_, req, rep ? rep : &local);
}

proto::EntryReply MdsFixture::Mkdir(uint64_t parent, const std::string& name, uint32_t mode,
                                    const proto::Credentials& cred) {
  proto::EntryReply rep;
  Status st = Create(parent, name, S_IFDIR | mode, cred, &rep);
  EXPECT_TRUE(st.ok()) << "mkdir " << name << ": " << st.ToString();
  return rep;
}

proto::EntryReply MdsFixture::Mkfile(uint64_t parent, const std::string& name, uint32_t mode,
                                     const proto::Credentials& cred) {
  proto::EntryReply rep;
  Status st = Create(parent, name, S_IFREG | mode, cred, &rep);
  EXPECT_TRUE(st.ok()) << "create " << name << ": " << st.ToString();
  return rep;
}

Status MdsFixture::Unlink(uint64_t parent, const std::string& name, bool is_dir,
                          const proto::Credentials& cred) {
  proto::UnlinkRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(name);
  req.set_is_dir(is_dir);
  proto::UnlinkReply rep;
  return stria::mds::Unlink(*ns_, req, &rep);
}

Status MdsFixture::Rename(uint64_t op, const std::string& on, uint64_t np, const std::string& nn,
                          uint32_t flags, const proto::Credentials& cred) {
  proto::RenameRequest req;
  *req.mutable_cred() = cred;
  req.set_old_parent(op);
  req.set_old_name(on);
  req.set_new_parent(np);
  req.set_new_name(nn);
  req.set_flags(flags);
  proto::RenameReply rep;
  return stria::mds::Rename(*ns_, req, &rep);
}

Result<proto::Attr> MdsFixture::Lookup(uint64_t parent, const std::string& name,
                                       const proto::Credentials& cred) {
  proto::LookupRequest req;
  *req.mutable_cred() = cred;
  req.set_parent(parent);
  req.set_name(name);
  proto::EntryReply rep;
  STRIA_RETURN_IF_ERROR(stria::mds::Lookup(*ns_, req, &rep));
  return rep.attr();
}

proto::Attr MdsFixture::Getattr(uint64_t ino) {
  proto::GetattrRequest req;
  req.set_ino(ino);
  proto::AttrReply rep;
  Status st = stria::mds::Getattr(*ns_, req, &rep);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return rep.attr();
}

}  // namespace stria::mds::testing
