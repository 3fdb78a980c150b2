// MetricsServer: serves GET /metrics in the Prometheus text format over HTTP, with the
// embedded civetweb library (Debian's libcivetweb-dev), for a daemon's --metrics-addr.
// Each scrape calls the page function on one of civetweb's threads (2 of them: scrapes are
// rare); the function must be thread-safe. Anything but GET /metrics answers 404.
// Thread-safety: Start/Stop from one thread; the page function runs concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

struct mg_context;
struct mg_connection;

namespace stria {

class MetricsServer {
 public:
  using PageFn = std::function<std::string()>;

  MetricsServer() = default;
  ~MetricsServer();  // Stop()s
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Listens on `addr`, "HOST:PORT" or "PORT" (all addresses); port 0 picks a free one.
  // EINVAL for a malformed address, EADDRINUSE-like kIO when it cannot listen.
  Status Start(const std::string& addr, PageFn page);
  void Stop();

  // The bound port (after Start).
  uint16_t port() const { return port_; }

 private:
  static int Handle(::mg_connection* conn, void* self);
  mg_context* ctx_ = nullptr;
  PageFn page_;
  uint16_t port_ = 0;
};

}  // namespace stria
