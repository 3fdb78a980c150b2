// OP_MGS_GET_CONFIG: what a client needs to mount: the filesystem name, the OST table, the
// filesystem default layout (the root's effective default), the tunables and the config
// generation (which bumps on every OST table or param change).
#include "mds/internal/layout_alloc.h"
#include "mds/ops/ops.h"
#include "mds/pools.h"
#include "mds/schema.h"

namespace stria::mds {

Status GetConfig(Namespace& ns, const proto::GetConfigRequest& req, proto::FsConfig* rep) {
  rep->set_fsname(ns.fsname());
  rep->set_config_generation(ns.ConfigGeneration());
  for (proto::OstInfo& ost : ns.OstTable()) *rep->add_osts() = std::move(ost);
  STRIA_ASSIGN_OR_RETURN(InodeRecord root, ns.GetInode(kRootIno));
  *rep->mutable_default_layout() = MergeDefaults(root, nullptr);
  proto::GetParamReply params;
  STRIA_RETURN_IF_ERROR(GetParam(ns, proto::GetParamRequest(), &params));
  *rep->mutable_params() = params.params();
  STRIA_ASSIGN_OR_RETURN(std::vector<proto::PoolInfo> pools, ListPools(ns.db()));
  for (proto::PoolInfo& p : pools) *rep->add_pools() = std::move(p);
  return Status::Ok();
}

}  // namespace stria::mds
