// stria-mds: the metadata server and management service (MGS) of one Stria filesystem.
//
//   stria-mds --fsname NAME --data DIR [--listen NID] [--port-file FILE] [--threads N]
//             [--log-level LVL] [--log-target T] [--log-file FILE] [--root-squash UID:GID]
//             [--client-lease-ms MS] [--lnet-fallback tcp|none] [--o2ib-poll] [--busy-poll-us US]
//             [--key-file FILE]... [--nosquash-nids NIDLIST] [--capa-key-file FILE]...
//             [--capa-timeout S] [--config FILE]
//
// Every option may come from [mds] (or [global]) of the config file instead
// (common/config_cli.h; default /etc/stria/stria.conf); the command line wins.
// Formats DIR on first use; refuses a DIR of another filesystem (exit 1). Stops cleanly on
// SIGTERM/SIGINT: the RPC server stops (handlers in flight finish), the destroy queue stops,
// RocksDB closes.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <chrono>
#include <thread>

#include "common/config_cli.h"
#include "common/log.h"
#include "common/log_config.h"
#include "common/version.h"
#include "common/metrics_server.h"
#include "lnet/capa.h"
#include "lnet/busy_poll.h"
#include "lnet/lnd.h"
#include "lnet/nid.h"
#include "lnet/rpc_server.h"
#include "lnet/stats_service.h"
#include "mds/destroy_queue.h"
#include "mds/lnet_ost_gateway.h"
#include "mds/mirror_resync.h"
#include "mds/size_glimpse.h"
#include "mds/internal/power_loss_fs.h"
#include "mds/mds_service.h"
#include "mds/namespace.h"

namespace {

bool WritePortFile(const std::string& path, uint16_t port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stria-mds: Stria metadata server and management service"};
  app.set_version_flag("--version", std::string("stria-mds ") + stria::kVersion + " (Stria)");
  std::string fsname, data, listen = "0.0.0.0@tcp:9880", port_file;
  stria::LogOptions log;
  int threads = 8;
  std::string root_squash;
  int lease_ms = 60'000;
  // Changes are answered once in the WAL and committed within a second; clients replay what a
  // power loss takes back (docs/durability.md).
  int commit_interval_ms = 1000;
  app.add_option("--fsname", fsname, "filesystem name (1-32 characters)")->required();
  app.add_option("--data", data, "RocksDB directory (formatted when empty)")->required();
  app.add_option("--listen", listen, "NID to listen on")->capture_default_str();
  app.add_option("--port-file", port_file, "write the bound port here after binding");
  app.add_option("--threads", threads, "RPC worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  stria::AddLogOptions(app, &log);
  app.add_option("--root-squash", root_squash,
                 "UID:GID that requests from root run as (e.g. 65534:65534); off when empty");
  app.add_option("--client-lease-ms", lease_ms,
                 "evict a client silent this long (its locks and opens go); also the recovery "
                 "window after a restart")
      ->check(CLI::Range(100, 3'600'000))
      ->capture_default_str();
  app.add_option("--commit-interval-ms", commit_interval_ms,
                 "0: sync every namespace change before its reply; N: answer changes once "
                 "in the WAL and sync it within N ms (fsync of a file or directory waits "
                 "for it; clients replay what a power loss of the MDS takes back)")
      ->check(CLI::Range(0, 10'000))
      ->capture_default_str();
  int md_lease_ms = 30'000;
  app.add_option("--md-lease-ms", md_lease_ms,
                 "metadata leases: clients (FUSE mounts) cache names and attributes this long, "
                 "told before anyone else changes them (docs/consistency.md#leases); 0: none")
      ->check(CLI::Range(0, 600'000))
      ->capture_default_str();
  int md_lease_revoke_ms = 2'000;
  app.add_option("--md-lease-revoke-ms", md_lease_revoke_ms,
                 "a client that has not answered a lease revocation this long loses its leases "
                 "(the change it held up goes on)")
      ->check(CLI::Range(100, 60'000))
      ->capture_default_str();
  std::string lnet_fallback;
  bool o2ib_poll = false;
  std::vector<std::string> key_files;
  app.add_option("--key-file", key_files,
                 "cluster key file (lctl keygen); repeat it during a key rotation: the first "
                 "proves and signs, the others are also accepted (docs/security.md)");
  std::vector<std::string> capa_key_files;
  app.add_option("--capa-key-file", capa_key_files,
                 "OSS capability key file (lctl keygen), shared with the OSSes only; with "
                 "--key-file, capabilities are signed with it instead of a key derived from "
                 "the cluster key (docs/security.md); repeat it during a rotation");
  int capa_timeout_s = stria::lnet::kDefaultCapaTimeoutS;
  app.add_option("--capa-timeout", capa_timeout_s,
                 "lifetime of the OSS capabilities granted with each open, in seconds "
                 "(clients renew them before they expire)")
      ->check(CLI::Range(1, 7 * 24 * 3600))
      ->capture_default_str();
  std::string nosquash_nids;
  app.add_option("--nosquash-nids", nosquash_nids,
                 "NIDs whose root is not squashed (with --root-squash): a space- or comma-"
                 "separated list, each ADDR@NET with * and [a-b] ranges, e.g. '10.0.0.[1-4]@tcp'");
  std::string metrics_addr, metrics_port_file;
  app.add_option("--metrics-addr", metrics_addr,
                 "serve Prometheus /metrics on HOST:PORT (port 0: any free port); off by default");
  app.add_option("--metrics-port-file", metrics_port_file, "write the bound /metrics port here");
  app.add_option("--lnet-fallback", lnet_fallback,
                 "tcp: carry o2ib NIDs over TCP where this host has no RDMA device "
                 "(default none: such a NID is an error)")
      ->check(CLI::IsMember({"tcp", "none"}));
  bool simulate_power_loss = false;
  app.add_flag("--simulate-power-loss", simulate_power_loss,
               "testing: track which RocksDB bytes were synced; SIGUSR2 then cuts the power: "
               "every unsynced write is dropped and the MDS exits at once (status 137)")
      ->group(stria::kCommandLineOnlyGroup);
  app.add_flag("--o2ib-poll", o2ib_poll,
               "busy-poll RDMA completion queues instead of sleeping on their channel");
  int busy_poll_us = stria::lnet::BusyPollUs();
  stria::AddBusyPollOption(app, &busy_poll_us);
  if (auto rc = stria::ParseCommandLineAndConfig(app, argc, argv, "mds")) return *rc;
  if (stria::Status st = stria::ConfigureLogging("stria-mds", log); !st.ok()) {
    fprintf(stderr, "stria-mds: %s\n", st.message().c_str());
    return 1;
  }

  stria::mds::MdsServiceOptions service_options;
  service_options.commit_interval_ms = commit_interval_ms;
  if (!root_squash.empty()) {
    unsigned uid = 0, gid = 0;
    char extra = 0;
    if (sscanf(root_squash.c_str(), "%u:%u%c", &uid, &gid, &extra) != 2) {
      fprintf(stderr, "stria-mds: --root-squash must be UID:GID, not '%s'\n", root_squash.c_str());
      return 1;
    }
    service_options.squash.root_squash = true;
    service_options.squash.squash_uid = uid;
    service_options.squash.squash_gid = gid;
  }
  if (!nosquash_nids.empty()) {
    auto list = stria::mds::ParseNidPatterns(nosquash_nids);
    if (!list.ok()) {
      fprintf(stderr, "stria-mds: --nosquash-nids: %s\n", list.status().message().c_str());
      return 1;
    }
    service_options.squash.nosquash_nids = *list;
  }
  std::shared_ptr<const stria::lnet::KeyRing> keys;
  if (!key_files.empty()) {
    auto ring = stria::lnet::LoadKeyRing(key_files);
    if (!ring.ok()) {
      fprintf(stderr, "stria-mds: --key-file: %s\n", ring.status().message().c_str());
      return 1;
    }
    keys = *ring;
  }
  std::shared_ptr<const stria::lnet::CapaSigner> capa;
  if (!capa_key_files.empty() && !keys) {
    fprintf(stderr, "stria-mds: --capa-key-file needs --key-file\n");
    return 1;
  }
  if (keys) {
    std::shared_ptr<const stria::lnet::KeyRing> capa_keys = stria::lnet::DeriveCapaKeys(*keys);
    if (!capa_key_files.empty()) {
      auto ring = stria::lnet::LoadKeyRing(capa_key_files);
      if (!ring.ok()) {
        fprintf(stderr, "stria-mds: --capa-key-file: %s\n", ring.status().message().c_str());
        return 1;
      }
      capa_keys = *ring;
    }
    capa = std::make_shared<const stria::lnet::CapaSigner>(capa_keys, capa_timeout_s * 1000);
    service_options.capa = capa;
  }

  auto nid = stria::lnet::Nid::Parse(listen);
  if (!nid.ok()) {
    fprintf(stderr, "stria-mds: --listen: %s\n", nid.status().ToString().c_str());
    return 1;
  }
  stria::lnet::SetBusyPollUs(busy_poll_us);
  if (stria::Status st = stria::lnet::ConfigureLndsFromOptions(lnet_fallback, o2ib_poll);
      !st.ok() || !(st = stria::lnet::CheckNids({*nid})).ok()) {
    fprintf(stderr, "stria-mds: %s\n", st.message().c_str());
    return 1;
  }

  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  if (simulate_power_loss) sigaddset(&sigs, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  stria::mds::LnetOstGateway gateway(fsname, keys, /*timeout_ms=*/3000, capa);
  stria::mds::NamespaceOptions nopts;
  nopts.data_dir = data;
  nopts.fsname = fsname;
  nopts.reap_orphans_at_open = false;  // after the recovery window (ClientSessions)
  std::shared_ptr<stria::mds::internal::PowerLossFs> power_fs;
  std::unique_ptr<rocksdb::Env> power_env;
  if (simulate_power_loss) {
    power_env = stria::mds::internal::PowerLossFs::NewEnv(&power_fs);
    nopts.env = power_env.get();
  }
  auto ns = stria::mds::Namespace::Open(nopts, &gateway);
  if (!ns.ok()) {
    fprintf(stderr, "stria-mds: %s\n", ns.status().ToString().c_str());
    LOG_ERROR("cannot open {}: {}", data, ns.status().ToString());
    return 1;
  }
  // Without a commit interval the committer still syncs what is written unsynced (sizes
  // reported at close, destroy queue bookkeeping) within a second.
  (*ns)->StartCommitter(commit_interval_ms > 0 ? commit_interval_ms : 1000);
  stria::mds::DestroyQueue queue(ns->get(), &gateway);
  if (md_lease_ms > 0) {
    auto leases = std::make_shared<stria::mds::LeaseTable>(stria::mds::LeaseOptions{
        .lease_ms = md_lease_ms, .revoke_timeout_ms = md_lease_revoke_ms, .keys = keys,
        .fsname = fsname});
    (*ns)->set_change_listener(
        [leases](stria::mds::MdChanges changes) { leases->RevokeLater(std::move(changes)); });
    service_options.leases = leases;
  }
  // Copies good bytes into stale mirrors, by itself once their OSTs are back.
  stria::mds::MirrorResync resync(ns->get(), &gateway);
  service_options.resync = &resync;
  service_options.gateway = &gateway;  // sizes a dead writer did not report

  auto starts = (*ns)->CountStart();
  if (!starts.ok()) {
    fprintf(stderr, "stria-mds: %s\n", starts.status().ToString().c_str());
    return 1;
  }
  stria::lnet::ServerOptions sopts;
  sopts.generation = *starts;
  sopts.name = "stria-mds";
  sopts.fsname = fsname;
  sopts.server_uuid = fsname + "-MDT0000_UUID";
  sopts.worker_threads = threads;
  sopts.reply_cache_opcodes = stria::mds::MdsService::ReplyCacheOpcodes();
  sopts.keys = keys;
  sopts.role = "mds";
  stria::lnet::RpcServer server(sopts);
  stria::mds::Namespace* const nsp = ns->get();
  stria::mds::ClientSessions sessions(
      nsp, {.lease_ms = lease_ms, .writer_lost = [nsp, &gateway](uint64_t ino) {
              if (auto size = stria::mds::RaiseSizeToObjects(*nsp, gateway, ino);
                  !size.ok() && size.status().code() != stria::Code::kNoEnt) {
                LOG_WARN("inode {} of an evicted writer: size not glimpsed: {}", ino,
                         size.status().ToString());
              }
            }});
  stria::mds::MdsService service(ns->get(), &queue, service_options, &sessions);
  service.Register(&server);
  stria::Status st = server.Start(*nid);
  if (!st.ok()) {
    fprintf(stderr, "stria-mds: listen %s: %s\n", listen.c_str(), st.ToString().c_str());
    return 1;
  }
  LOG_INFO("stria-mds '{}' serving on {}:{} (data {})", fsname, nid->addr, server.port(), data);
  if (!port_file.empty() && !WritePortFile(port_file, server.port())) {
    fprintf(stderr, "stria-mds: cannot write port file %s\n", port_file.c_str());
    server.Stop();
    return 1;
  }
  queue.Start();
  sessions.Start();
  resync.Start();
  stria::MetricsServer metrics;
  if (!metrics_addr.empty()) {
    st = metrics.Start(metrics_addr, [&service, &server] {
      stria::PromText page;
      service.AddMetrics(&page);
      stria::lnet::AddRpcServerMetrics(server, "mds", &page);
      return page.str();
    });
    if (!st.ok() || (!metrics_port_file.empty() && !WritePortFile(metrics_port_file, metrics.port()))) {
      fprintf(stderr, "stria-mds: --metrics-addr %s: %s\n", metrics_addr.c_str(),
              st.ok() ? "cannot write the port file" : st.ToString().c_str());
      server.Stop();
      return 1;
    }
  }

  int sig = 0;
  sigwait(&sigs, &sig);
  if (sig == SIGUSR2 && power_fs) {
    // The machine loses power: nothing more reaches the disk, and what was not synced is
    // gone. In-flight appends see the cut within microseconds; then the files are cut back.
    power_fs->CutPower();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t dropped = power_fs->DropUnsynced();
    LOG_WARN("simulated power loss: {} unsynced bytes dropped", dropped);
    _exit(137);
  }
  LOG_INFO("signal {}: stopping", sig);
  metrics.Stop();
  resync.Stop();  // first: a copy an lfs request runs stops too, so the server stops soon
  server.Stop();
  sessions.Stop();
  queue.Stop();
  ns->reset();  // closes RocksDB
  LOG_INFO("stopped");
  return 0;
}
