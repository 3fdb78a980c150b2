// OP_MGS_POOL: OST pools (lctl pool_new/pool_add/pool_remove/pool_destroy), kept under T keys
// by the MGS and handed to every client with the configuration. Lustre's errors: EINVAL for
// a bad name, ENOENT for an unknown filesystem, pool or OST, EEXIST for a pool or member
// that exists, ENOTEMPTY for destroying a pool that still has OSTs. Allocation honours them
// (mds/internal/layout_alloc.cc).
#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "mds/ops/ops.h"
#include "mds/pools.h"
#include "mds/schema.h"
#include "mds/txn.h"

namespace stria::mds {

bool ValidPoolName(std::string_view name) {
  if (name.empty() || name.size() > kMaxPoolName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

Result<std::optional<proto::PoolInfo>> ReadPool(rocksdb::DB* db, std::string_view name) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), PoolKey(name), &value);
  if (s.IsNotFound()) return std::optional<proto::PoolInfo>();
  STRIA_RETURN_IF_ERROR(FromRocks(s, "read pool"));
  proto::PoolInfo pool;
  if (!pool.ParseFromString(value)) return Status(Code::kCorrupt, "pool record does not decode");
  return std::optional<proto::PoolInfo>(std::move(pool));
}

Result<std::vector<proto::PoolInfo>> ListPools(rocksdb::DB* db) {
  std::vector<proto::PoolInfo> out;
  const std::string prefix(1, kPrefixPool);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    proto::PoolInfo pool;
    if (!pool.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return Status(Code::kCorrupt, "pool record does not decode");
    }
    out.push_back(std::move(pool));
  }
  STRIA_RETURN_IF_ERROR(FromRocks(it->status(), "list pools"));
  return out;
}

Status PoolOp(Namespace& ns, const proto::PoolRequest& req, proto::PoolReply* rep) {
  const std::string full = req.fsname() + "." + req.pool();
  if (req.fsname() != ns.fsname()) {
    return Status(Code::kNoEnt,
                  "no filesystem '" + req.fsname() + "' here (this is '" + ns.fsname() + "')");
  }
  if (!ValidPoolName(req.pool())) {
    return Status(Code::kInval,
                  "pool name '" + req.pool() + "' must be 1-15 letters, digits, '_' or '-'");
  }
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  STRIA_ASSIGN_OR_RETURN(std::optional<proto::PoolInfo> pool, ReadPool(ns.db(), req.pool()));
  if (req.command() == proto::POOL_NEW) {
    if (pool) return Status(Code::kExist, "pool " + full + " exists");
    pool.emplace();
    pool->set_name(req.pool());
  } else if (!pool) {
    return Status(Code::kNoEnt, "pool " + full + " does not exist");
  }
  std::set<uint32_t> members(pool->osts().begin(), pool->osts().end());
  switch (req.command()) {
    case proto::POOL_NEW:
      break;
    case proto::POOL_ADD:
    case proto::POOL_REMOVE:
      if (req.osts().empty()) return Status(Code::kInval, "no OST given");
      for (uint32_t idx : req.osts()) {
        if (txn.osts().count(idx) == 0) {
          return Status(Code::kNoEnt,
                        "OST index " + std::to_string(idx) + " is not in " + ns.fsname());
        }
        const bool in = members.count(idx) > 0;
        if (req.command() == proto::POOL_ADD && in) {
          return Status(Code::kExist,
                        "OST index " + std::to_string(idx) + " is already in " + full);
        }
        if (req.command() == proto::POOL_REMOVE && !in) {
          return Status(Code::kNoEnt, "OST index " + std::to_string(idx) + " is not in " + full);
        }
        if (req.command() == proto::POOL_ADD) {
          members.insert(idx);
        } else {
          members.erase(idx);
        }
      }
      break;
    case proto::POOL_DESTROY:
      if (!members.empty()) {
        return Status(Code::kNotEmpty, "pool " + full + " is not empty: remove its OSTs first");
      }
      txn.batch().Delete(PoolKey(req.pool()));
      txn.super().config_gen++;
      return txn.Commit();
    default:
      return Status(Code::kInval, "unknown pool command " + std::to_string(req.command()));
  }
  pool->clear_osts();
  for (uint32_t idx : members) pool->add_osts(idx);
  txn.batch().Put(PoolKey(req.pool()), pool->SerializeAsString());
  txn.super().config_gen++;
  *rep->mutable_pool() = *pool;
  return txn.Commit();
}

}  // namespace stria::mds
