// lctl: the operator's command for a Stria filesystem, in Lustre's words (docs/lfs.md).
//
//   lctl [--mgs NID[,NID]] dl [-t]                 the MGS, the MDT and every OST
//   lctl [--mgs NID[,NID]] get_param [-n|-N|-R] NAME...  statistics and tunables (tools/lctl_param.h)
//   lctl [--mgs NID[,NID]] set_param [-P] NAME=VALUE...
//   lctl list_nids                                 this host's NIDs and the LND of each
//   lctl ping NID [TIMEOUT_SECONDS]                one OP_PING round trip, and its LND
//   lctl peers NID                                 the connections of the service at NID
//                                                  and the LND carrying each (lnetctl-like)
//   lctl [--mgs NID[,NID]] scrub [--ost INDEX] [--timeout SECONDS] [--repair]
//                                                  verify on-disk checksums (tools/lctl_scrub.h)
//   lctl --version, lctl help
//
// Without --mgs, lctl talks to the MGS of the first Stria filesystem mounted here.
// --lnet-fallback tcp (before the command) carries o2ib NIDs over TCP on a host without an
// RDMA device (lnet/lnd.h).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/version.h"
#include "lnet/auth.h"
#include "lnet/lnd.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "tools/fs_connect.h"
#include "tools/lctl_param.h"
#include "tools/lctl_scrub.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"
#include "tools/config_view.h"
#include "tools/pool_args.h"

namespace stria::tools {
namespace {

constexpr int kUsage = kUsageError;

void PrintHelp(FILE* out) {
  std::fputs("usage: lctl [--mgs NID[,NID]] [--lnet-fallback tcp|none] [--key-file FILE] COMMAND\n"
             "            [ARGS]   (the key: --key-file, $STRIA_KEY_FILE or /etc/stria/stria.key)\n"
             "Commands:\n"
             "  dl [-t]                      list the devices: MGS, MDT, OSTs (-t: their NIDs)\n"
             "  get_param [-n|-N|-R] NAME... show statistics (live, from the daemons and this\n"
             "                               host's mounts) and tunables (globs allowed;\n"
             "                               -N: names only, -R: everything below NAME)\n"
             "  set_param [-P] NAME=VALUE... set tunables (-P: kept by the MGS for every node;\n"
             "                               without -P a client tunable applies to the mounts\n"
             "                               here); NAME=clear clears statistics\n"
             "  keygen [--force] [FILE]      write a new random cluster key (default\n"
             "                               /etc/stria/stria.key, mode 0600)\n"
             "  list_nids                    show this host's NIDs (@o2ib where RDMA is) and\n"
             "                               the LND that carries each\n"
             "  ping NID [TIMEOUT_SECONDS]   check that a Stria service answers at NID\n"
             "  peers NID                    the connections of the service at NID and the\n"
             "                               LND carrying each\n"
             "  pool_new FSNAME.POOL         create an OST pool (lfs setstripe -p POOL)\n"
             "  pool_add FSNAME.POOL OST...  add OSTs: FSNAME-OST0001, FSNAME-OST[0-3/2], an index\n"
             "  pool_remove FSNAME.POOL OST...\n"
             "                               remove OSTs from a pool\n"
             "  pool_destroy FSNAME.POOL     remove an empty pool\n"
             "  pool_list FSNAME[.POOL]      list the pools, or a pool's OSTs\n"
             "  --device N|OSTNAME deactivate|activate\n"
             "                               stop (resume) allocating new objects on an OST\n"
             "                               (N as in dl; osp.*.active on the MGS)\n"
             "  scrub [--ost INDEX] [--timeout SECONDS] [--repair]\n"
             "                               verify every object's checksums on the OSTs\n"
             "                               (all OSTs by default); exit 5 when corrupt\n"
             "  --version                    show the version\n"
             "Without --mgs, lctl uses the MGS of the first Stria filesystem mounted here.\n",
             out);
}

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lctl: %s\n", why);
  PrintHelp(stderr);
  return kUsage;
}

// The MGS to talk to: --mgs, or the first Stria mount's.
Result<std::unique_ptr<client::Client>> ConnectMgs(const std::string& mgs) {
  if (!mgs.empty()) return ConnectNids(mgs, "");
  STRIA_ASSIGN_OR_RETURN(std::vector<MountEntry> mounts, ListStriaMounts());
  if (mounts.empty()) {
    return Status(Code::kNoEnt, "no Stria filesystem is mounted here; give --mgs NID");
  }
  STRIA_ASSIGN_OR_RETURN(DeviceSpec dev, ParseDevice(mounts.front().source));
  return ConnectNids(dev.nids, dev.fsname);
}

// ConnectMgs, reporting a failure on stderr: 0, or the exit code to return.
int ConnectOrReport(const std::string& mgs, std::unique_ptr<client::Client>* out) {
  auto conn = ConnectMgs(mgs);
  if (!conn.ok()) {
    std::fprintf(stderr, "lctl: cannot reach the MGS: %s\n", conn.status().ToString().c_str());
    return ExitCode(conn.status());
  }
  *out = std::move(conn).value();
  return 0;
}

// lctl --device N|NAME deactivate|activate: osp.FS-OSTxxxx-osc-MDT0000.active=0|1.
int Activate(const std::string& mgs, const std::string& device, bool active) {
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  auto config = conn->GetConfig(/*refresh=*/true);
  if (!config.ok()) {
    std::fprintf(stderr, "lctl: %s\n", config.status().ToString().c_str());
    return ExitCode(config.status());
  }
  std::map<uint32_t, bool> osts;
  for (const proto::OstInfo& o : config->osts()) osts[o.index()] = true;
  std::optional<uint32_t> idx;
  char* end = nullptr;
  const unsigned long n = std::strtoul(device.c_str(), &end, 10);
  if (!device.empty() && *end == '\0') {
    // As in `lctl dl`: 0 is the MGS, 1 the MDT, then the OSTs in index order.
    uint32_t k = 2;
    for (const auto& [i, _] : osts) {
      if (k++ == n) idx = i;
    }
  } else {
    auto list = ParseOstList(device.substr(0, device.find("-osc")), config->fsname());
    if (list.ok() && list->size() == 1 && osts.count(list->front())) idx = list->front();
  }
  if (!idx) {
    std::fprintf(stderr, "lctl: device '%s' is not an OST of %s (see lctl dl)\n",
                 device.c_str(), config->fsname().c_str());
    return ENODEV;
  }
  char name[96];
  std::snprintf(name, sizeof(name), "osp.%s-OST%04x-osc-MDT0000.active", config->fsname().c_str(),
                *idx);
  proto::SetParamRequest req;
  req.set_name(name);
  req.set_value(active ? "1" : "0");
  proto::SetParamReply rep;
  Status st = conn->MdsCall(proto::OP_MGS_SET_PARAM, req, &rep);
  if (!st.ok()) {
    std::fprintf(stderr, "lctl %s: %s\n", active ? "activate" : "deactivate", st.ToString().c_str());
    return ExitCode(st);
  }
  return 0;
}

int Dl(const std::string& mgs, int argc, char** argv) {
  bool show_nids = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-t") == 0 || std::strcmp(argv[i], "--target") == 0) {
      show_nids = true;
    } else {
      return Usage((std::string("dl: unknown option '") + argv[i] + "'").c_str());
    }
  }
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  client::Client* c = conn.get();
  auto config = c->GetConfig(/*refresh=*/true);
  if (!config.ok()) {
    std::fprintf(stderr, "lctl dl: %s\n", config.status().ToString().c_str());
    return ExitCode(config.status());
  }
  const std::string& fs = config->fsname();
  int n = 0;
  auto line = [&](const char* status, const char* type, const std::string& name,
                  const std::string& uuid, const std::string& nid) {
    std::printf("%3d %s %s %s %s %d", n++, status, type, name.c_str(), uuid.c_str(), 1);
    if (show_nids && !nid.empty()) std::printf(" %s", nid.c_str());
    std::printf("\n");
  };
  line("UP", "mgs", "MGS", "MGS", "");
  line("UP", "mdt", fs + "-MDT0000", fs + "-MDT0000_UUID", "");
  std::map<uint32_t, const proto::OstInfo*> osts;
  for (const proto::OstInfo& o : config->osts()) osts[o.index()] = &o;
  for (const auto& [idx, o] : osts) {
    char name[64];
    std::snprintf(name, sizeof(name), "-OST%04x", idx);
    const bool up = OstActive(*config, *o);
    line(up ? "UP" : "IN", "obdfilter", fs + name, fs + name + "_UUID", o->nid());
  }
  return 0;
}

// lctl pool_new / pool_add / pool_remove / pool_destroy (OP_MGS_POOL).
int PoolChange(const std::string& mgs, proto::PoolCommand command, int argc, char** argv) {
  const std::string cmd = argv[0];
  const bool with_osts = command == proto::POOL_ADD || command == proto::POOL_REMOVE;
  if (argc < 2 || (with_osts && argc < 3) || (!with_osts && argc != 2)) {
    return Usage((cmd + ": usage: " + cmd + " FSNAME.POOL" + (with_osts ? " OST..." : "")).c_str());
  }
  auto name = SplitPoolName(argv[1]);
  if (!name.ok()) return Usage((cmd + ": " + name.status().message()).c_str());
  proto::PoolRequest req;
  req.set_command(command);
  req.set_fsname(name->first);
  req.set_pool(name->second);
  for (int i = 2; i < argc; ++i) {
    auto osts = ParseOstList(argv[i], name->first);
    if (!osts.ok()) return Usage((cmd + ": " + osts.status().message()).c_str());
    for (uint32_t idx : *osts) req.add_osts(idx);
  }
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  proto::PoolReply rep;
  Status st = conn->MdsCall(proto::OP_MGS_POOL, req, &rep);
  if (!st.ok()) {
    std::fprintf(stderr, "%s %s: %s\n", cmd.c_str(), argv[1], st.ToString().c_str());
    return ExitCode(st);
  }
  return 0;
}

// lctl pool_list FSNAME: "Pools from FSNAME:" then FSNAME.POOL lines; pool_list FSNAME.POOL:
// "Pool: FSNAME.POOL" then its OSTs' UUIDs, as Lustre prints them.
int PoolList(const std::string& mgs, int argc, char** argv) {
  if (argc != 2) return Usage("pool_list: usage: pool_list FSNAME[.POOL]");
  std::string fs = argv[1], pool;
  if (fs.find('.') != std::string::npos) {
    auto name = SplitPoolName(argv[1]);
    if (!name.ok()) return Usage(("pool_list: " + name.status().message()).c_str());
    fs = name->first;
    pool = name->second;
  }
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  auto config = conn->GetConfig(/*refresh=*/true);
  if (!config.ok()) {
    std::fprintf(stderr, "lctl pool_list: %s\n", config.status().ToString().c_str());
    return ExitCode(config.status());
  }
  if (config->fsname() != fs) {
    std::fprintf(stderr, "lctl pool_list: no filesystem '%s' here\n", fs.c_str());
    return ENOENT;
  }
  if (pool.empty()) {
    std::printf("Pools from %s:\n", fs.c_str());
    for (const proto::PoolInfo& p : config->pools()) std::printf("%s.%s\n", fs.c_str(), p.name().c_str());
    return 0;
  }
  for (const proto::PoolInfo& p : config->pools()) {
    if (p.name() != pool) continue;
    std::printf("Pool: %s.%s\n", fs.c_str(), pool.c_str());
    for (uint32_t idx : p.osts()) std::printf("%s-OST%04x_UUID\n", fs.c_str(), idx);
    return 0;
  }
  std::fprintf(stderr, "lctl pool_list: pool %s.%s does not exist\n", fs.c_str(), pool.c_str());
  return ENOENT;
}

int GetParam(const std::string& mgs, int argc, char** argv) {
  bool any = false;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-' && std::strcmp(argv[i], "-n") != 0 && std::strcmp(argv[i], "-N") != 0 &&
        std::strcmp(argv[i], "-R") != 0 && std::strcmp(argv[i], "-NR") != 0 &&
        std::strcmp(argv[i], "-RN") != 0) {
      return Usage((std::string("get_param: unknown option '") + argv[i] + "'").c_str());
    }
    if (argv[i][0] != '-') any = true;
  }
  if (!any) return Usage("get_param: give a parameter name");
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  return LctlGetParam(conn.get(), argc, argv);
}

int SetParam(const std::string& mgs, int argc, char** argv) {
  bool any = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-P") == 0) continue;
    if (argv[i][0] == '-') {
      return Usage((std::string("set_param: unknown option '") + argv[i] + "'").c_str());
    }
    const char* eq = std::strchr(argv[i], '=');
    if (eq == nullptr || eq == argv[i]) {
      return Usage((std::string("set_param: expected NAME=VALUE, got '") + argv[i] + "'").c_str());
    }
    any = true;
  }
  if (!any) return Usage("set_param: give NAME=VALUE");
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  return LctlSetParam(conn.get(), argc, argv);
}

// The LND that carries `nid` here, for output: "tcp", "o2ib", or why it cannot be carried.
std::string CarriedBy(const lnet::Nid& nid) {
  Result<lnet::Lnd> lnd = lnet::ResolveLnd(nid);
  if (!lnd.ok()) return "unavailable";
  if (*lnd != nid.lnd) return std::string(lnet::LndName(*lnd)) + " (--lnet-fallback)";
  return std::string(lnet::LndName(*lnd));
}

// True when the network interface `ifname` belongs to an RDMA device (IPoIB or RoCE).
bool HasRdmaDevice(const std::string& ifname) {
  std::error_code ec;
  return std::filesystem::exists("/sys/class/net/" + ifname + "/device/infiniband", ec);
}

int ListNids(int argc, char** argv) {
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-v") == 0) {
      verbose = true;
    } else {
      return Usage((std::string("list_nids: unknown option '") + argv[i] + "'").c_str());
    }
  }
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    std::fprintf(stderr, "lctl list_nids: getifaddrs: %s\n", std::strerror(errno));
    return errno;
  }
  std::vector<lnet::Nid> nids;
  for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    char buf[INET_ADDRSTRLEN];
    const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) == nullptr) continue;
    // An interface of an RDMA device is reached over o2ib; any other over tcp.
    nids.push_back({HasRdmaDevice(i->ifa_name) ? lnet::Lnd::kO2ib : lnet::Lnd::kTcp, buf});
  }
  freeifaddrs(ifs);
  if (nids.empty()) nids.push_back({lnet::Lnd::kTcp, "127.0.0.1"});
  for (const lnet::Nid& n : nids) {
    const std::string text = n.addr + "@" + std::string(lnet::LndName(n.lnd));
    if (verbose) {
      std::printf("%-24s lnd %s\n", text.c_str(), CarriedBy(n).c_str());
    } else {
      std::printf("%s\n", text.c_str());
    }
  }
  if (verbose) {
    const std::string why = lnet::O2ibUnavailableReason();
    std::printf("o2ib: %s\n", why.empty() ? "available" : why.c_str());
  }
  return 0;
}

// keygen [--force] [FILE]: a new random cluster key (docs/security.md), mode 0600.
int Keygen(int argc, char** argv) {
  bool force = false;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--force" || a == "-f") {
      force = true;
    } else if (!a.empty() && a[0] != '-' && path.empty()) {
      path = a;
    } else {
      return Usage(("keygen: usage: keygen [--force] [FILE] (default " +
                    std::string(lnet::kDefaultKeyFile) + ")").c_str());
    }
  }
  if (path.empty()) path = lnet::kDefaultKeyFile;
  Status st = lnet::WriteNewKeyFile(path, force);
  if (!st.ok()) {
    std::fprintf(stderr, "lctl keygen: %s\n", st.message().c_str());
    return ExitCode(st);
  }
  std::printf("wrote a new cluster key to %s (mode 0600); copy it to every server and client "
              "over a secure channel\n", path.c_str());
  return 0;
}

// lnetctl-like: what the service at NID is connected to, and over which LND.
int Peers(int argc, char** argv) {
  if (argc != 2) return Usage("peers: usage: peers NID");
  auto nid = lnet::Nid::Parse(argv[1]);
  if (!nid.ok()) return Usage(("peers: " + nid.status().message()).c_str());
  lnet::ClientOptions opts;
  opts.connect_timeout_ms = 5000;
  opts.rpc_timeout_ms = 5000;
  opts.retry_deadline_ms = 5000;
  opts.max_connections = 1;
  UseToolKey(&opts);
  lnet::RpcClient rpc(*nid, opts);
  proto::PeersRequest req;
  proto::PeersReply rep;
  Status st = rpc.Call(proto::OP_LNET_PEERS, req, &rep);
  if (!st.ok()) {
    std::fprintf(stderr, "lctl peers %s: %s\n", nid->ToString().c_str(), st.ToString().c_str());
    return ExitCode(st);
  }
  std::printf("service:\n    - nid: %s\n      lnd: %s\npeer:\n", rep.listen_nid().c_str(),
              rep.lnd().c_str());
  for (const proto::PeerConnection& c : rep.connections()) {
    std::printf("    - address: %s\n      lnd: %s\n      client_uuid: %s\n"
                "      requests: %llu\n      bulk_bytes: %llu\n",
                c.address().c_str(), c.lnd().c_str(),
                c.client_uuid().empty() ? "-" : c.client_uuid().c_str(),
                static_cast<unsigned long long>(c.requests()),
                static_cast<unsigned long long>(c.bulk_bytes()));
  }
  return 0;
}

int Ping(int argc, char** argv) {
  if (argc < 2 || argc > 3) return Usage("ping: usage: ping NID [TIMEOUT_SECONDS]");
  auto nid = lnet::Nid::Parse(argv[1]);
  if (!nid.ok()) return Usage(("ping: " + nid.status().message()).c_str());
  int timeout_s = 5;
  if (argc == 3) {
    char* end = nullptr;
    long v = std::strtol(argv[2], &end, 10);
    if (*end != '\0' || v < 1 || v > 3600) return Usage("ping: bad timeout");
    timeout_s = static_cast<int>(v);
  }
  lnet::ClientOptions opts;
  opts.connect_timeout_ms = timeout_s * 1000;
  opts.rpc_timeout_ms = timeout_s * 1000;
  opts.retry_deadline_ms = timeout_s * 1000;
  opts.max_connections = 1;
  UseToolKey(&opts);
  lnet::RpcClient rpc(*nid, opts);
  proto::Ping req;
  req.set_payload("lctl ping");
  proto::Ping rep;
  Status st = rpc.Call(proto::OP_PING, req, &rep);
  if (st.ok() && rep.payload() != req.payload()) {
    st = Status(Code::kProtocol, "the reply does not echo the ping");
  }
  if (!st.ok()) {
    std::fprintf(stderr, "failed to ping %s: %s\n", nid->ToString().c_str(),
                 st.ToString().c_str());
    return ExitCode(st);
  }
  std::printf("12345-%s lnd %s\n", nid->ToString().c_str(), CarriedBy(*nid).c_str());
  return 0;
}

int Scrub(const std::string& mgs, int argc, char** argv) {
  Result<ScrubArgs> args = ParseScrubArgs(argc, argv);
  if (!args.ok()) return Usage(args.status().message().c_str());
  std::unique_ptr<client::Client> conn;
  if (int rc = ConnectOrReport(mgs, &conn); rc != 0) return rc;
  return LctlScrub(conn.get(), *args);
}

}  // namespace
}  // namespace stria::tools

int main(int argc, char** argv) {
  using namespace stria::tools;
  stria::InitLogging("lctl", "warn");
  std::string mgs, device;
  int i = 1;
  while (i < argc && argv[i][0] == '-') {
    const std::string a = argv[i];
    if (a == "--mgs" && i + 1 < argc) {
      mgs = argv[i + 1];
      i += 2;
    } else if (a.rfind("--mgs=", 0) == 0) {
      mgs = a.substr(6);
      ++i;
    } else if (a == "--lnet-fallback" && i + 1 < argc) {
      if (stria::Status st = stria::lnet::ConfigureLndsFromOptions(argv[i + 1], false); !st.ok()) {
        return Usage(st.message().c_str());
      }
      i += 2;
    } else if (a == "--key-file" && i + 1 < argc) {
      setenv("STRIA_KEY_FILE", argv[i + 1], 1);  // read by UseToolKey (tools/fs_connect.h)
      i += 2;
    } else if (a == "--device" && i + 1 < argc) {
      device = argv[i + 1];
      i += 2;
    } else if (a == "--version") {
      std::printf("lctl %s (Stria)\n", stria::kVersion);
      return 0;
    } else if (a == "--help" || a == "-h") {
      PrintHelp(stdout);
      return 0;
    } else {
      return Usage(("unknown option '" + a + "'").c_str());
    }
  }
  if (i >= argc) return Usage("give a command");
  const std::string cmd = argv[i];
  char** sub = argv + i;
  const int nsub = argc - i;
  if (cmd == "help") {
    PrintHelp(stdout);
    return 0;
  }
  if (cmd == "deactivate" || cmd == "activate") {
    if (device.empty()) return Usage((cmd + ": give --device N|OSTNAME first").c_str());
    if (nsub != 1) return Usage((cmd + " takes no arguments").c_str());
    return Activate(mgs, device, cmd == "activate");
  }
  if (!device.empty()) return Usage(("--device applies to activate/deactivate, not " + cmd).c_str());
  if (cmd == "list_nids") return ListNids(nsub, sub);
  if (cmd == "keygen") return Keygen(nsub, sub);
  if (cmd == "ping") return Ping(nsub, sub);
  if (cmd == "peers" || cmd == "peer_list") return Peers(nsub, sub);
  if (cmd == "dl" || cmd == "device_list") return Dl(mgs, nsub, sub);
  if (cmd == "get_param") return GetParam(mgs, nsub, sub);
  if (cmd == "set_param") return SetParam(mgs, nsub, sub);
  if (cmd == "scrub") return Scrub(mgs, nsub, sub);
  if (cmd == "pool_new") return PoolChange(mgs, stria::proto::POOL_NEW, nsub, sub);
  if (cmd == "pool_add") return PoolChange(mgs, stria::proto::POOL_ADD, nsub, sub);
  if (cmd == "pool_remove") return PoolChange(mgs, stria::proto::POOL_REMOVE, nsub, sub);
  if (cmd == "pool_destroy") return PoolChange(mgs, stria::proto::POOL_DESTROY, nsub, sub);
  if (cmd == "pool_list") return PoolList(mgs, nsub, sub);
  return Usage(("unknown command '" + cmd + "'").c_str());
}
