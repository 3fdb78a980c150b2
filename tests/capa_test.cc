// OSS capabilities against real daemons (docs/security.md, "OSS capabilities"): a cluster
// with a key, a separate capability key and 2-second capabilities. I/O through the FUSE
// mount and libstria works and renews as it goes; raw requests from a client that holds
// the cluster key but no (fitting) capability are refused while the OSS serves everyone else.
#include "lnet/capa.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "client/capa.h"
#include "client/metadata.h"
#include "client/native.h"
#include "lnet/rpc_client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kCapaTimeoutS = 2;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class CapaClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("STRIA_KEY_FILE");
    char tmpl[] = "/tmp/stria-capa-key.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    key_dir_ = tmpl;
    const std::string capa_key = key_dir_ + "/capa.key";
    ASSERT_TRUE(lnet::WriteNewKeyFile(capa_key, false).ok());
    ClusterOptions o;
    o.tag = "capa";
    o.fsname = "capafs";
    o.num_oss = 1;
    o.osts_per_oss = 2;
    o.num_mounts = 1;
    o.cluster_key = true;
    o.mds_args = {"--capa-key-file", capa_key, "--capa-timeout", std::to_string(kCapaTimeoutS)};
    o.oss_args = {"--capa-key-file", capa_key};
    cluster_ = new Cluster(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    std::filesystem::remove_all(key_dir_);
  }

  // A raw RPC client with the cluster key and a chosen client uuid.
  static std::unique_ptr<lnet::RpcClient> Raw(const std::string& nid, const std::string& uuid) {
    auto n = lnet::Nid::Parse(nid);
    EXPECT_TRUE(n.ok());
    lnet::ClientOptions opts;
    opts.client_uuid = uuid;
    opts.fsname = "capafs";
    opts.retry_deadline_ms = 5'000;
    opts.keys = *lnet::LoadKeyRing({cluster_->key_file()});
    return std::make_unique<lnet::RpcClient>(*n, opts);
  }
  static std::string OssNid(uint32_t ost) {
    auto c = ConnectClient(*cluster_);
    EXPECT_TRUE(c.ok());
    auto cfg = (*c)->GetConfig();
    for (const proto::OstInfo& o : cfg->osts()) {
      if (o.index() == ost) return o.nid();
    }
    ADD_FAILURE() << "no OST " << ost;
    return "";
  }

  // Creates and opens /NAME through a raw MDS connection of client `uuid`.
  static proto::EntryReply RawCreate(lnet::RpcClient& mds, const std::string& name) {
    proto::CreateRequest req;
    req.mutable_cred()->set_uid(0);
    req.set_parent(1);
    req.set_name(name);
    req.set_mode(S_IFREG | 0644);
    req.set_open(true);
    proto::EntryReply rep;
    Status st = mds.Call(proto::OP_MDS_CREATE, req, &rep);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return rep;
  }

  static proto::Capability CapaOf(const proto::CapaGrant& g, int i) {
    proto::Capability c;
    c.set_ino(g.ino());
    c.set_ops(g.ops());
    c.set_expiry_ms(g.expiry_ms());
    c.set_mac(g.objects(i).mac());
    return c;
  }

  static Status RawWrite(lnet::RpcClient& oss, const proto::ObjectId& obj,
                         const proto::Capability* capa, std::string_view data) {
    proto::OstIoRequest req;
    *req.mutable_object() = obj;
    req.set_length(data.size());
    if (capa) *req.mutable_capa() = *capa;
    iovec iov{const_cast<char*>(data.data()), data.size()};
    lnet::CallBulk bulk;
    bulk.out = std::span<const iovec>(&iov, 1);
    proto::OstIoReply rep;
    return oss.Call(proto::OP_OST_WRITE, req, &rep, bulk);
  }

  static Result<std::string> RawRead(lnet::RpcClient& oss, const proto::ObjectId& obj,
                                     const proto::Capability* capa, bool* missing = nullptr) {
    proto::OstIoRequest req;
    *req.mutable_object() = obj;
    req.set_length(4096);
    if (capa) *req.mutable_capa() = *capa;
    std::string buf(4096, '\0');
    size_t got = 0;
    lnet::CallBulk bulk;
    bulk.in = std::span<uint8_t>(reinterpret_cast<uint8_t*>(buf.data()), buf.size());
    bulk.in_len = &got;
    proto::OstIoReply rep;
    STRIA_RETURN_IF_ERROR(oss.Call(proto::OP_OST_READ, req, &rep, bulk));
    if (missing) *missing = rep.missing();
    buf.resize(got);
    return buf;
  }

  static proto::ObjectId ObjectOf(const proto::Layout& l, int i = 0) {
    proto::ObjectId id;
    id.set_ost_idx(l.objects(i).ost_idx());
    id.set_object_id(l.objects(i).object_id());
    id.set_group(l.objects(i).group());
    return id;
  }

  static Cluster* cluster_;
  static std::string key_dir_;
};
Cluster* CapaClusterTest::cluster_ = nullptr;
std::string CapaClusterTest::key_dir_;

TEST_F(CapaClusterTest, FuseMountIoWorks) {
  const std::string path = cluster_->mount_point(0) + "/fuse-file";
  std::string data(3 << 20, '\0');
  std::mt19937 rng(1);
  for (char& c : data) c = static_cast<char>(rng());
  {
    std::ofstream out(path, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    ASSERT_TRUE(out.good());
  }
  EXPECT_EQ(ReadAll(path), data);
  // truncate(2) by path, ftruncate(2), O_TRUNC and a punched hole all reach the OSTs.
  ASSERT_EQ(truncate(path.c_str(), 1 << 20), 0) << strerror(errno);
  EXPECT_EQ(ReadAll(path), data.substr(0, 1 << 20));
  const int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(ftruncate(fd, 4096), 0) << strerror(errno);
  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0)
      << strerror(errno);
  close(fd);
  EXPECT_EQ(ReadAll(path), std::string(4096, '\0'));
  { std::ofstream(path, std::ios::trunc) << "rewritten"; }
  EXPECT_EQ(ReadAll(path), "rewritten");
}

TEST_F(CapaClusterTest, NativeApiIoWorks) {
  client::NativeOptions o;
  o.key_file = cluster_->key_file();
  o.timeout_ms = 5'000;
  auto fs = client::NativeFs::Connect(cluster_->device(), o);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  auto f = (*fs)->Open("/native-file", O_RDWR | O_CREAT, 0644);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const std::string data = "through libstria with capabilities";
  auto w = (*f)->Pwrite(0, std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::string back(data.size(), '\0');
  auto r = (*f)->Pread(0, std::span(reinterpret_cast<uint8_t*>(back.data()), back.size()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(back, data);
  ASSERT_TRUE((*f)->Truncate(7).ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(ReadAll(cluster_->mount_point(0) + "/native-file"), "through");
}

TEST_F(CapaClusterTest, RequestsWithoutAFittingCapabilityAreRefused) {
  auto mds = Raw(cluster_->mgs_nid(), "raw-client-a");
  const proto::EntryReply a = RawCreate(*mds, "raw-a");
  const proto::EntryReply b = RawCreate(*mds, "raw-b");
  ASSERT_TRUE(a.has_capa());
  ASSERT_EQ(a.capa().objects_size(), a.layout().objects_size());
  EXPECT_EQ(a.capa().ops(), proto::CAPA_READ | proto::CAPA_WRITE);
  const proto::ObjectId obj_a = ObjectOf(a.layout());
  auto oss = Raw(OssNid(obj_a.ost_idx()), "raw-client-a");
  const proto::Capability capa_a = CapaOf(a.capa(), 0);
  // The genuine capability works.
  ASSERT_TRUE(RawWrite(*oss, obj_a, &capa_a, "genuine").ok());

  // No capability at all.
  Status st = RawWrite(*oss, obj_a, nullptr, "none");
  EXPECT_EQ(st.code(), Code::kAccess) << st.ToString();
  EXPECT_NE(st.message().find("no capability"), std::string::npos) << st.ToString();
  EXPECT_EQ(RawRead(*oss, obj_a, nullptr).status().code(), Code::kAccess);
  // Another file's capability on this object.
  const proto::Capability capa_b = CapaOf(b.capa(), 0);
  EXPECT_EQ(RawWrite(*oss, obj_a, &capa_b, "other").code(), Code::kAccess);
  // Tampered: ops, expiry, a MAC bit.
  proto::Capability t = capa_a;
  t.set_expiry_ms(t.expiry_ms() + 3'600'000);
  EXPECT_EQ(RawWrite(*oss, obj_a, &t, "later").code(), Code::kAccess);
  t = capa_a;
  t.set_ops(t.ops() | proto::CAPA_ANY_OBJECT);
  EXPECT_EQ(RawWrite(*oss, obj_a, &t, "any").code(), Code::kAccess);
  t = capa_a;
  (*t.mutable_mac())[0] ^= 1;
  EXPECT_EQ(RawWrite(*oss, obj_a, &t, "bit").code(), Code::kAccess);
  // Replayed by another client (it holds the cluster key, not this grant).
  auto thief = Raw(OssNid(obj_a.ost_idx()), "raw-client-b");
  st = RawWrite(*thief, obj_a, &capa_a, "stolen");
  EXPECT_EQ(st.code(), Code::kAccess) << st.ToString();
  // Destroy is the MDS's alone.
  proto::OstDestroyRequest d;
  *d.add_objects() = obj_a;
  *d.mutable_capa() = capa_a;
  proto::OstIoReply drep;
  EXPECT_EQ(oss->Call(proto::OP_OST_DESTROY, d, &drep).code(), Code::kAccess);
  d.clear_capa();
  EXPECT_EQ(oss->Call(proto::OP_OST_DESTROY, d, &drep).code(), Code::kAccess);
  // A capability forged with the key every client holds is not the capability key.
  auto ring = lnet::LoadKeyRing({cluster_->key_file()});
  ASSERT_TRUE(ring.ok());
  lnet::CapaSigner forger(lnet::DeriveCapaKeys(**ring), 60'000);
  const proto::Capability forged = forger.Authority("raw-client-a", proto::CAPA_DESTROY);
  *d.mutable_capa() = forged;
  EXPECT_EQ(oss->Call(proto::OP_OST_DESTROY, d, &drep).code(), Code::kAccess);

  // Garbage in the capability field: a clear error, no crash.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    proto::OstIoRequest req;
    *req.mutable_object() = obj_a;
    req.set_length(16);
    std::string body;
    req.SerializeToString(&body);
    std::string junk(rng() % 64, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    body += static_cast<char>(0xd2);  // field 90, length-delimited: (90 << 3) | 2, varint
    body += static_cast<char>(0x05);
    body += static_cast<char>(junk.size());
    body += junk;
    std::string reply;
    Status g = oss->CallRaw(proto::OP_OST_READ, body, &reply);
    EXPECT_TRUE(g.code() == Code::kAccess || g.code() == Code::kProtocol) << g.ToString();
  }
  // The OSS still serves the genuine capability, and the mount.
  auto back = RawRead(*oss, obj_a, &capa_a);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "genuine");
  const std::string path = cluster_->mount_point(0) + "/still-served";
  { std::ofstream(path) << "yes"; }
  EXPECT_EQ(ReadAll(path), "yes");
}

TEST_F(CapaClusterTest, ReadOnlyOpenCannotWrite) {
  auto mds = Raw(cluster_->mgs_nid(), "raw-client-ro");
  const proto::EntryReply created = RawCreate(*mds, "ro-file");
  proto::OpenRequest open;
  open.mutable_cred()->set_uid(0);
  open.set_ino(created.attr().ino());
  open.set_flags(O_RDONLY);
  proto::OpenReply ro;
  ASSERT_TRUE(mds->Call(proto::OP_MDS_OPEN, open, &ro).ok());
  ASSERT_TRUE(ro.has_capa());
  EXPECT_EQ(ro.capa().ops(), static_cast<uint32_t>(proto::CAPA_READ));
  const proto::ObjectId obj = ObjectOf(ro.layout());
  auto oss = Raw(OssNid(obj.ost_idx()), "raw-client-ro");
  const proto::Capability read_capa = CapaOf(ro.capa(), 0);
  EXPECT_TRUE(RawRead(*oss, obj, &read_capa).ok());
  Status st = RawWrite(*oss, obj, &read_capa, "nope");
  EXPECT_EQ(st.code(), Code::kAccess) << st.ToString();
  EXPECT_NE(st.message().find("needs write"), std::string::npos) << st.ToString();
  proto::OstTruncateRequest tr;
  *tr.mutable_object() = obj;
  *tr.mutable_capa() = read_capa;
  proto::OstIoReply trep;
  EXPECT_EQ(oss->Call(proto::OP_OST_TRUNCATE, tr, &trep).code(), Code::kAccess);
  // Renewing a read-only handle gives read again, never write.
  proto::CapaRenewRequest renew;
  renew.mutable_cred()->set_uid(0);
  renew.set_ino(created.attr().ino());
  renew.set_handle(ro.handle());
  renew.set_flags(O_RDWR);  // claims more than it opened with: ignored
  proto::CapaRenewReply rrep;
  ASSERT_TRUE(mds->Call(proto::OP_MDS_CAPA_RENEW, renew, &rrep).ok());
  EXPECT_EQ(rrep.capa().ops(), static_cast<uint32_t>(proto::CAPA_READ));
  // Another client cannot renew this handle.
  auto other = Raw(cluster_->mgs_nid(), "raw-client-other");
  EXPECT_EQ(other->Call(proto::OP_MDS_CAPA_RENEW, renew, &rrep).code(), Code::kBadF);
}

TEST_F(CapaClusterTest, ExpiredCapabilitiesAreRefusedAndRenewed) {
  auto mds = Raw(cluster_->mgs_nid(), "raw-client-exp");
  const proto::EntryReply e = RawCreate(*mds, "exp-file");
  const proto::ObjectId obj = ObjectOf(e.layout());
  auto oss = Raw(OssNid(obj.ost_idx()), "raw-client-exp");
  const proto::Capability capa = CapaOf(e.capa(), 0);
  ASSERT_TRUE(RawWrite(*oss, obj, &capa, "fresh").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(kCapaTimeoutS * 1000 + 300));
  Status st = RawWrite(*oss, obj, &capa, "stale");
  EXPECT_EQ(st.code(), Code::kCapaExpired) << st.ToString();
  proto::CapaRenewRequest renew;
  renew.mutable_cred()->set_uid(0);
  renew.set_ino(e.attr().ino());
  renew.set_handle(e.handle());
  proto::CapaRenewReply rrep;
  ASSERT_TRUE(mds->Call(proto::OP_MDS_CAPA_RENEW, renew, &rrep).ok());
  const proto::Capability renewed = CapaOf(rrep.capa(), 0);
  EXPECT_TRUE(RawWrite(*oss, obj, &renewed, "renewed").ok());
}

// libstria renews on its own: ahead of expiry during a long write, and when an OSS answers
// kCapaExpired (a grant whose renewal time we push past its expiry).
TEST_F(CapaClusterTest, LongWritesRenewTransparently) {
  auto c = ConnectClient(*cluster_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  client::Metadata md(c->get());
  proto::Credentials cred;  // root
  client::Metadata::CreateArgs a;
  a.parent = 1;
  a.name = "long-write";
  a.mode = S_IFREG | 0644;
  a.open = true;
  auto created = md.Create(cred, a);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE(created->has_capa());
  auto capas = client::OpenCapas::FromReply(
      {cred, created->attr().ino(), created->handle(), O_RDWR}, &created->capa());
  const proto::Layout layout = created->layout();
  std::string chunk(64 << 10, 'x');
  uint64_t off = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3 * kCapaTimeoutS);
  while (std::chrono::steady_clock::now() < until) {
    Status st = (*c)->Write(layout, off,
                            std::span(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size()),
                            false, capas.get());
    ASSERT_TRUE(st.ok()) << st.ToString();
    off += chunk.size();
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GE(capas->renewals(), 2u);
  std::string back(off, '\0');
  auto r = (*c)->Read(layout, off, 0, std::span(reinterpret_cast<uint8_t*>(back.data()), off),
                      nullptr, capas.get());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(back, std::string(off, 'x'));

  // Reactive: a grant the client believes fresh for an hour meets the OSS after it expired.
  proto::CapaGrant lazy = created->capa();
  lazy.set_lifetime_ms(3'600'000);
  auto stale = client::OpenCapas::FromReply({cred, created->attr().ino(), created->handle(),
                                              O_RDWR}, &lazy);
  std::this_thread::sleep_for(std::chrono::milliseconds(kCapaTimeoutS * 1000 + 300));
  ASSERT_FALSE(stale->RenewDue());
  Status st = (*c)->Write(layout, 0, std::span(reinterpret_cast<const uint8_t*>("y"), 1), false,
                          stale.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(stale->renewals(), 1u);
}

// A write through the mount that lasts several capability lifetimes.
TEST_F(CapaClusterTest, LongWriteThroughTheMount) {
  const std::string path = cluster_->mount_point(0) + "/slow-writer";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  std::string chunk(32 << 10, 'z');
  size_t total = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3 * kCapaTimeoutS);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(write(fd, chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()))
        << strerror(errno);
    total += chunk.size();
    std::this_thread::sleep_for(150ms);
  }
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0) << strerror(errno);
  EXPECT_EQ(ReadAll(path), std::string(total, 'z'));
}

// The MDS's own authority: unlinked files' objects are destroyed; lctl scrub works.
TEST_F(CapaClusterTest, MdsDestroysAndLctlScrubs) {
  auto mds = Raw(cluster_->mgs_nid(), "raw-client-d");
  const proto::EntryReply e = RawCreate(*mds, "doomed");
  const proto::ObjectId obj = ObjectOf(e.layout());
  auto oss = Raw(OssNid(obj.ost_idx()), "raw-client-d");
  const proto::Capability capa = CapaOf(e.capa(), 0);
  ASSERT_TRUE(RawWrite(*oss, obj, &capa, "doomed bytes").ok());
  proto::CloseRequest close;
  close.set_ino(e.attr().ino());
  close.set_handle(e.handle());
  proto::AttrReply crep;
  ASSERT_TRUE(mds->Call(proto::OP_MDS_CLOSE, close, &crep).ok());
  proto::UnlinkRequest un;
  un.set_parent(1);
  un.set_name("doomed");
  proto::UnlinkReply urep;
  ASSERT_TRUE(mds->Call(proto::OP_MDS_UNLINK, un, &urep).ok());
  bool missing = false;
  for (int i = 0; i < 100 && !missing; ++i) {
    auto r = RawRead(*oss, obj, &capa, &missing);
    if (r.ok() && missing) break;
    if (!r.ok() && r.status().code() == Code::kNoEnt) missing = true;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(missing) << "the MDS did not destroy the object";
  CommandResult scrub = RunCommand({BinPath("lctl"), "--key-file", cluster_->key_file(), "--mgs",
                                    cluster_->mgs_nid(), "scrub", "--ost", "0"});
  EXPECT_EQ(scrub.exit_code, 0) << scrub.out << scrub.err;
}

// After an MDS restart the MDS no longer knows what a reopened handle was granted: a renewal
// is checked again as an open with the caller's credentials and flags. (Last: it restarts
// the MDS under the suite's cluster.)
TEST_F(CapaClusterTest, RenewalAfterAnMdsRestartChecksPermissionAgain) {
  auto mds = Raw(cluster_->mgs_nid(), "raw-client-restart");
  const proto::EntryReply e = RawCreate(*mds, "restart-file");  // root's, 0644
  ASSERT_TRUE(cluster_->KillMds().ok());
  ASSERT_TRUE(cluster_->StartMds().ok());
  proto::ReopenRequest reopen;
  reopen.set_ino(e.attr().ino());
  reopen.set_handle(e.handle());
  proto::ReopenReply rrep;
  Status st;
  for (int i = 0; i < 50; ++i) {
    st = mds->Call(proto::OP_MDS_REOPEN, reopen, &rrep);
    if (st.ok() || !st.retryable()) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  proto::CapaRenewRequest renew;
  renew.mutable_cred()->set_uid(1000);
  renew.mutable_cred()->set_gid(1000);
  renew.set_ino(e.attr().ino());
  renew.set_handle(e.handle());
  renew.set_flags(O_RDWR);  // uid 1000 may not write root's 0644 file
  proto::CapaRenewReply cap;
  EXPECT_EQ(mds->Call(proto::OP_MDS_CAPA_RENEW, renew, &cap).code(), Code::kAccess);
  renew.set_flags(O_RDONLY);
  ASSERT_TRUE(mds->Call(proto::OP_MDS_CAPA_RENEW, renew, &cap).ok());
  EXPECT_EQ(cap.capa().ops(), static_cast<uint32_t>(proto::CAPA_READ));
  // And the mount keeps working across the restart.
  const std::string path = cluster_->mount_point(0) + "/after-restart";
  { std::ofstream(path) << "renewed"; }
  EXPECT_EQ(ReadAll(path), "renewed");
}

}  // namespace
}  // namespace stria::testing
