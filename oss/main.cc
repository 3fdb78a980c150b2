// stria-oss: the object storage server.
//
//   stria-oss --mgs NIDLIST --ost INDEX:DIR [--ost INDEX:DIR ...] [--listen NID]
//             [--port-file FILE] [--threads N] [--max-open-files N] [--object-pool N]
//             [--log-level LVL]
//             [--log-target T] [--log-file FILE] [--heartbeat-ms MS]
//             [--lnet-fallback tcp|none] [--o2ib-poll] [--busy-poll-us US] [--key-file FILE]...
//             [--capa-key-file FILE]... [--config FILE] [--instance NAME]
//
// Every option may come from [oss] (or [global]) of the config file instead, and with
// --instance NAME from [oss.NAME] over [oss] (common/config_cli.h; default
// /etc/stria/stria.conf; stria-oss@NAME.service); the command line wins.
// Serves each OST directory (formatted on first use with the MGS's fsname), registers them
// with the MGS every 5 s, and stops cleanly on SIGTERM/SIGINT. Exit 1 on bad options, an
// OST directory that belongs elsewhere (a corrupt ost.meta, another index), or an OST the
// MGS refuses (another filesystem's, or an index another OST directory holds).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/config_cli.h"
#include "common/log.h"
#include "common/log_config.h"
#include "common/version.h"
#include "common/metrics_server.h"
#include "lnet/busy_poll.h"
#include "lnet/lnd.h"
#include "lnet/nid.h"
#include "oss/oss_server.h"

namespace {

using stria::Code;
using stria::ErrnoStatus;
using stria::Status;

// Writes "PORT\n" to path atomically (path.tmp, then rename).
Status WritePortFile(const std::string& path, uint16_t port) {
  const std::string tmp = path + ".tmp";
  const std::string text = fmt::format("{}\n", port);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create " + tmp, errno);
  const ssize_t n = write(fd, text.data(), text.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) return ErrnoStatus("write " + tmp, n < 0 ? err : EIO);
  if (rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus("rename " + tmp, errno);
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stria-oss: Stria object storage server"};
  app.set_version_flag("--version", std::string("stria-oss ") + stria::kVersion + " (Stria)");
  std::string mgs, listen = "127.0.0.1@tcp:0", port_file, instance;
  stria::LogOptions log;
  std::vector<std::string> ost_args;
  int threads = 8;
  size_t max_open_files = 512;
  size_t object_pool = stria::oss::ObjectStoreOptions{}.object_pool;
  bool read_cache = false;
  int heartbeat_ms = 5'000;
  app.add_option("--mgs", mgs, "MGS NID list, e.g. 127.0.0.1@tcp:9880[,NID...]")->required();
  app.add_option("--ost", ost_args, "an OST to serve, INDEX:DIR (repeatable)")->required();
  app.add_option("--listen", listen, "NID to listen on (port 0 = any free port)")
      ->capture_default_str();
  app.add_option("--port-file", port_file, "write the bound port here after binding");
  app.add_option("--threads", threads, "RPC worker threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--max-open-files", max_open_files,
                 "objects kept open per OST (two descriptors each: data and checksums)")
      ->check(CLI::Range(size_t{1}, size_t{16384}))
      ->capture_default_str();
  stria::AddLogOptions(app, &log);
  app.add_option("--heartbeat-ms", heartbeat_ms,
                 "how often each OST re-registers with the MGS, with its free space (ms)")
      ->check(CLI::Range(100, 60'000))
      ->capture_default_str();
  std::string lnet_fallback, metrics_addr, metrics_port_file;
  bool o2ib_poll = false;
  std::vector<std::string> key_files;
  app.add_option("--key-file", key_files,
                 "cluster key file (lctl keygen); repeat it during a key rotation: the first "
                 "proves and signs, the others are also accepted (docs/security.md)");
  std::vector<std::string> capa_key_files;
  app.add_option("--capa-key-file", capa_key_files,
                 "OSS capability key file (lctl keygen), shared with the MDS only; with "
                 "--key-file, capabilities are checked with it instead of a key derived from "
                 "the cluster key (docs/security.md); repeat it during a rotation");
  app.add_option("--metrics-addr", metrics_addr,
                 "serve Prometheus /metrics on HOST:PORT (port 0: any free port); off by default");
  app.add_option("--metrics-port-file", metrics_port_file,
                 "write the bound /metrics port here");
  app.add_option("--lnet-fallback", lnet_fallback,
                 "tcp: carry o2ib NIDs over TCP where this host has no RDMA device "
                 "(default none: such a NID is an error)")
      ->check(CLI::IsMember({"tcp", "none"}));
  app.add_option("--object-pool", object_pool,
                 "empty files each OST keeps for new objects (precreated, or left by destroyed "
                 "objects); 0: none")
      ->check(CLI::Range(size_t{0}, size_t{1} << 20))
      ->capture_default_str();
  app.add_flag("--read-cache", read_cache,
               "read large aligned ranges through the page cache too (by default they come "
               "from disk with O_DIRECT and are not cached)");
  app.add_flag("--o2ib-poll", o2ib_poll,
               "busy-poll RDMA completion queues instead of sleeping on their channel");
  int busy_poll_us = stria::lnet::BusyPollUs();
  stria::AddBusyPollOption(app, &busy_poll_us);
  app.add_option("--instance", instance,
                 "read [oss.NAME] of the config file over [oss] (one of several stria-oss on "
                 "a host: stria-oss@NAME.service)");
  if (auto rc = stria::ParseCommandLineAndConfig(app, argc, argv, "oss", &instance)) return *rc;
  if (Status st = stria::ConfigureLogging("stria-oss", log); !st.ok()) {
    fmt::print(stderr, "stria-oss: {}\n", st.message());
    return 1;
  }

  stria::oss::OssOptions options;
  auto nids = stria::lnet::ParseNidList(mgs);
  if (!nids.ok()) {
    fmt::print(stderr, "stria-oss: --mgs: {}\n", nids.status().ToString());
    return 1;
  }
  options.mgs_nids = *nids;
  auto nid = stria::lnet::Nid::Parse(listen);
  if (!nid.ok()) {
    fmt::print(stderr, "stria-oss: --listen: {}\n", nid.status().ToString());
    return 1;
  }
  options.listen = *nid;
  std::vector<stria::lnet::Nid> all_nids = options.mgs_nids;
  all_nids.push_back(*nid);
  stria::lnet::SetBusyPollUs(busy_poll_us);
  if (Status st = stria::lnet::ConfigureLndsFromOptions(lnet_fallback, o2ib_poll);
      !st.ok() || !(st = stria::lnet::CheckNids(all_nids)).ok()) {
    fmt::print(stderr, "stria-oss: {}\n", st.message());
    return 1;
  }
  for (const std::string& a : ost_args) {
    auto spec = stria::oss::ParseOstSpec(a);
    if (!spec.ok()) {
      fmt::print(stderr, "stria-oss: {}\n", spec.status().ToString());
      return 1;
    }
    options.osts.push_back(*spec);
  }
  if (!key_files.empty()) {
    auto keys = stria::lnet::LoadKeyRing(key_files);
    if (!keys.ok()) {
      fmt::print(stderr, "stria-oss: --key-file: {}\n", keys.status().message());
      return 1;
    }
    options.keys = *keys;
  }
  if (!capa_key_files.empty()) {
    if (key_files.empty()) {
      fmt::print(stderr, "stria-oss: --capa-key-file needs --key-file\n");
      return 1;
    }
    auto capa = stria::lnet::LoadKeyRing(capa_key_files);
    if (!capa.ok()) {
      fmt::print(stderr, "stria-oss: --capa-key-file: {}\n", capa.status().message());
      return 1;
    }
    options.capa_keys = *capa;
  }
  options.threads = threads;
  options.heartbeat_ms = heartbeat_ms;
  options.store.max_open_files = max_open_files;
  options.store.direct_reads = !read_cache;
  options.store.object_pool = object_pool;
  options.store.precreate = std::min(options.store.precreate, object_pool);

  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto oss = stria::oss::OssServer::Start(options);
  if (!oss.ok()) {
    LOG_ERROR("cannot start: {}", oss.status().ToString());
    fmt::print(stderr, "stria-oss: {}\n", oss.status().ToString());
    return 1;
  }
  if (!port_file.empty()) {
    Status st = WritePortFile(port_file, (*oss)->port());
    if (!st.ok()) {
      LOG_ERROR("--port-file: {}", st.ToString());
      (*oss)->Stop();
      return 1;
    }
  }

  stria::MetricsServer metrics;
  if (!metrics_addr.empty()) {
    stria::oss::OssServer* server = oss->get();
    Status st = metrics.Start(metrics_addr, [server] { return server->MetricsPage(); });
    if (st.ok() && !metrics_port_file.empty()) st = WritePortFile(metrics_port_file, metrics.port());
    if (!st.ok()) {
      fmt::print(stderr, "stria-oss: --metrics-addr: {}\n", st.ToString());
      (*oss)->Stop();
      return 1;
    }
  }

  // Wait for a stop signal, checking meanwhile that the MGS has not refused an OST (another
  // filesystem's, or an index another directory holds): such an OSS must not serve.
  int sig = 0;
  for (;;) {
    const timespec tick{0, 200'000'000};
    sig = sigtimedwait(&stop_signals, nullptr, &tick);
    if (sig > 0) break;
    Status fatal = (*oss)->fatal();
    if (!fatal.ok()) {
      LOG_ERROR("{}; stopping", fatal.ToString());
      fmt::print(stderr, "stria-oss: {}\n", fatal.ToString());
      (*oss)->Stop();
      return 1;
    }
  }
  LOG_INFO("signal {} received; stopping", sig);
  metrics.Stop();
  (*oss)->Stop();
  oss->reset();
  LOG_INFO("stopped");
  return 0;
}
