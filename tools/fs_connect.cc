#include "tools/fs_connect.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "client/mount_spec.h"
#include "lnet/auth.h"
#include "lnet/nid.h"

namespace stria::tools {
namespace {

int DeadlineMs() {
  if (const char* env = std::getenv("STRIA_TOOL_TIMEOUT_MS")) {
    int v = std::atoi(env);
    if (v > 0) return v;
  }
  return kToolDeadlineMs;
}

}  // namespace

void UseToolKey(lnet::ClientOptions* opts) {
  static const Result<std::shared_ptr<const lnet::KeyRing>> keys = lnet::DefaultKeyRing();
  if (!keys.ok()) {
    std::fprintf(stderr, "stria: cluster key: %s\n", keys.status().message().c_str());
    std::exit(1);
  }
  opts->keys = *keys;
  opts->role = "tool";
}

Result<std::unique_ptr<client::Client>> ConnectNids(std::string_view nids,
                                                    std::string_view fsname) {
  STRIA_ASSIGN_OR_RETURN(std::vector<lnet::Nid> list, lnet::ParseNidList(nids));
  client::ClientConfig config;
  config.mgs_nids = std::move(list);
  config.fsname = std::string(fsname);
  config.io_threads = 4;
  const int deadline = DeadlineMs();
  config.rpc.retry_deadline_ms = deadline;
  config.rpc.connect_timeout_ms = std::min(deadline, config.rpc.connect_timeout_ms);
  config.rpc.rpc_timeout_ms = std::max(deadline, 1000);
  config.rpc.max_connections = 2;
  config.mds_connections = 2;
  UseToolKey(&config.rpc);
  return client::Client::Connect(std::move(config));
}

int ExitCode(const Status& st) {
  if (st.ok()) return 0;
  int e = st.ToErrno();
  return e > 0 && e < 256 ? e : 1;
}

bool Resolved::is_dir() const { return S_ISDIR(attr.mode()); }
bool Resolved::is_reg() const { return S_ISREG(attr.mode()); }

ToolSession::ToolSession() : cred_(client::ProcessCredentials()) {}

Result<client::Client*> ToolSession::ClientFor(const StriaPath& where) {
  auto it = clients_.find(where.mount.source);
  if (it != clients_.end()) return it->second.get();
  STRIA_ASSIGN_OR_RETURN(client::MountSpec spec, client::ParseMountSpec(where.mount.source));
  (void)spec;  // validated; ConnectNids parses the NIDs again from the text
  STRIA_ASSIGN_OR_RETURN(auto c, ConnectNids(where.device.nids, where.device.fsname));
  client::Client* raw = c.get();
  clients_.emplace(where.mount.source, std::move(c));
  return raw;
}

Result<Resolved> ToolSession::Resolve(client::Client* c, std::string_view fs_path) {
  STRIA_ASSIGN_OR_RETURN(proto::EntryReply e, c->ResolvePath(cred_, fs_path));
  Resolved r;
  r.attr = e.attr();
  r.layout = e.layout();
  return r;
}

Result<proto::Layout> ToolSession::FileLayout(client::Client* c, const proto::Attr& attr) {
  STRIA_ASSIGN_OR_RETURN(proto::AttrReply rep, client::Metadata(c).Getattr(cred_, attr.ino()));
  return rep.layout();
}

Result<ToolSession::PathClient> ToolSession::Locate(const std::string& path) {
  PathClient out;
  STRIA_ASSIGN_OR_RETURN(out.where, LocatePath(path));
  STRIA_ASSIGN_OR_RETURN(out.client, ClientFor(out.where));
  return out;
}

Result<std::vector<proto::DirEntry>> ToolSession::ListDir(client::Client* c, uint64_t ino,
                                                          bool plus) {
  std::vector<proto::DirEntry> out;
  std::string cookie;
  client::Metadata md(c);
  for (int page = 0; page < 1'000'000; ++page) {
    client::Metadata::ReaddirArgs args;
    args.ino = ino;
    args.cookie = cookie;
    args.max_entries = 1024;
    args.want_attrs = plus;
    args.want_layouts = plus;
    STRIA_ASSIGN_OR_RETURN(proto::ReaddirReply rep, md.Readdir(cred_, args));
    for (auto& e : *rep.mutable_entries()) {
      if (e.name() == "." || e.name() == "..") continue;
      out.push_back(std::move(e));
    }
    if (rep.eof() || rep.entries_size() == 0) break;
    if (rep.next_cookie().empty() || rep.next_cookie() == cookie) {
      return Status(Code::kProtocol, "READDIR did not advance its cookie");
    }
    cookie = rep.next_cookie();
  }
  return out;
}

std::pair<std::string, std::string> SplitParent(std::string_view fs_path) {
  size_t slash = fs_path.rfind('/');
  if (slash == std::string_view::npos) return {"/", std::string(fs_path)};
  std::string parent = slash == 0 ? "/" : std::string(fs_path.substr(0, slash));
  return {parent, std::string(fs_path.substr(slash + 1))};
}

}  // namespace stria::tools
