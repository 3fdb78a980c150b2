#include "lnet/stats_service.h"

#include "proto/stria.pb.h"

namespace stria::lnet {

void RegisterStatsService(RpcServer* server, StatsRegistry* registry) {
  server->Register<proto::StatsRequest, proto::StatsReply>(
      proto::OP_STATS_GET,
      [registry](RpcContext&, const proto::StatsRequest& req, proto::StatsReply* rep) {
        if (req.pattern().size() > 256) return Status(Code::kInval, "stats pattern too long");
        for (auto& [name, text] : registry->Get(req.pattern(), req.clear(), req.names_only())) {
          (*rep->mutable_values())[name] = std::move(text);
        }
        return Status::Ok();
      });
}

void AddRpcServerMetrics(const RpcServer& server, std::string_view service, PromText* page) {
  const RpcServer::Load load = server.load();
  const PromLabels l = {{"service", std::string(service)}};
  page->Add("stria_rpc_active_requests", "gauge",
            "requests being handled now (at most the worker threads)", l,
            static_cast<double>(load.active));
  page->Add("stria_rpc_workers", "gauge", "RPC worker threads", l, load.workers);
  page->Add("stria_rpc_requests_total", "counter", "requests received", l,
            static_cast<double>(load.requests));
  for (const auto& [kind, n] : {std::pair<const char*, uint64_t>{"crc32c", load.bulk_checked},
                                {"none", load.bulk_unchecked}}) {
    PromLabels b = l;
    b.emplace_back("checksum", kind);
    page->Add("stria_rpc_bulk_requests_total", "counter",
              "requests with a bulk, by its wire checksum (none: osc.*.checksums=0)", b,
              static_cast<double>(n));
  }
  page->Add("stria_rpc_bulk_requests_shared_total", "counter",
            "request bulks read from a local peer's shared arena, not sent", l,
            static_cast<double>(load.bulk_in_shared));
  page->Add("stria_rpc_bulk_replies_spliced_total", "counter",
            "reply bulks sent to local peers by reference, not copied", l,
            static_cast<double>(load.bulk_spliced));
  page->Add("stria_rpc_bulk_replies_shared_total", "counter",
            "reply bulks put straight into a local peer's shared arena", l,
            static_cast<double>(load.bulk_shared));
}

}  // namespace stria::lnet
