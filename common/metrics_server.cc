#include "common/metrics_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "common/log.h"

namespace stria {
namespace {

// "HOST:PORT" or "PORT" -> host and port, checked.
Status ParseAddr(const std::string& addr, std::string* host, int* port) {
  const size_t colon = addr.rfind(':');
  const std::string p = colon == std::string::npos ? addr : addr.substr(colon + 1);
  *host = colon == std::string::npos ? "" : addr.substr(0, colon);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return Status(Code::kInval, "metrics address '" + addr + "' is not HOST:PORT");
  }
  in_addr a{};
  if (!host->empty() && inet_pton(AF_INET, host->c_str(), &a) != 1) {
    return Status(Code::kInval, "metrics address '" + addr + "': host must be an IPv4 address");
  }
  *port = static_cast<int>(v);
  return Status::Ok();
}

// civetweb needs a concrete port; port 0 becomes one the kernel says is free now.
int FreePort(const std::string& host) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, host.empty() ? "0.0.0.0" : host.c_str(), &sa.sin_addr);
  socklen_t len = sizeof(sa);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  close(fd);
  return port;
}

std::once_flag g_init;

}  // namespace

MetricsServer::~MetricsServer() { Stop(); }

int MetricsServer::Handle(::mg_connection* conn, void* self) {
  const mg_request_info* ri = mg_get_request_info(conn);
  if (std::strcmp(ri->request_method, "GET") != 0) {
    mg_send_http_error(conn, 405, "%s", "only GET /metrics");
    return 405;
  }
  const std::string body = static_cast<MetricsServer*>(self)->page_();
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n",
            body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

Status MetricsServer::Start(const std::string& addr, PageFn page) {
  std::string host;
  int port = 0;
  STRIA_RETURN_IF_ERROR(ParseAddr(addr, &host, &port));
  std::call_once(g_init, [] { mg_init_library(0); });
  page_ = std::move(page);
  // A free port picked here may be taken before civetweb binds it: try a few.
  for (int attempt = 0; attempt < (port == 0 ? 5 : 1); ++attempt) {
    const int p = port == 0 ? FreePort(host) : port;
    if (p <= 0) return Status(Code::kIO, "metrics: no free port on " + addr);
    const std::string ports = host.empty() ? std::to_string(p) : host + ":" + std::to_string(p);
    const char* options[] = {"listening_ports", ports.c_str(), "num_threads", "2",
                             "enable_keep_alive", "no", nullptr};
    mg_callbacks callbacks{};
    ctx_ = mg_start(&callbacks, nullptr, options);
    if (ctx_ != nullptr) {
      mg_set_request_handler(ctx_, "/metrics$", &MetricsServer::Handle, this);
      port_ = static_cast<uint16_t>(p);
      LOG_INFO("metrics: serving http://{}:{}/metrics", host.empty() ? "0.0.0.0" : host, p);
      return Status::Ok();
    }
  }
  return Status(Code::kIO, "metrics: cannot listen on " + addr);
}

void MetricsServer::Stop() {
  if (ctx_ != nullptr) {
    mg_stop(ctx_);
    ctx_ = nullptr;
  }
}

}  // namespace stria
