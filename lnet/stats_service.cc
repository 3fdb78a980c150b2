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

}  // namespace stria::lnet
