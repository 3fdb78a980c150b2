// OP_MGS_SET_PARAM / GET_PARAM: persistent tunables (lctl set_param -P / get_param) under P
// keys. An empty value deletes the param. get_param's pattern is an fnmatch(3) glob; empty
// means all. Names: 1-256 bytes of [A-Za-z0-9._-*]; values at most 4096 bytes.
#include <fnmatch.h>
#include <rocksdb/db.h>

#include <memory>
#include <mutex>

#include "mds/params.h"
#include "mds/ops/ops.h"
#include "mds/schema.h"
#include "mds/txn.h"

namespace stria::mds {
namespace {

bool ValidParamName(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  for (char c : name) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '*')) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status SetParam(Namespace& ns, const proto::SetParamRequest& req, proto::SetParamReply* rep) {
  if (!ValidParamName(req.name())) {
    return Status(Code::kInval, "param name must be 1-256 bytes of letters, digits, '.', '_', '-'");
  }
  if (req.value().size() > 4096) return Status(Code::kInval, "param value over 4096 bytes");
  // Tunables the MDS itself reads are checked here, so a bad value is never stored.
  STRIA_RETURN_IF_ERROR(CheckParamValue(req.name(), req.value()));
  std::lock_guard lock(ns.mutex());
  Txn txn(&ns);
  if (req.value().empty()) {
    txn.batch().Delete(ParamKey(req.name()));
  } else {
    txn.batch().Put(ParamKey(req.name()), req.value());
  }
  txn.super().config_gen++;
  return txn.Commit();
}

Status GetParam(Namespace& ns, const proto::GetParamRequest& req, proto::GetParamReply* rep) {
  if (req.pattern().size() > 256) return Status(Code::kInval, "param pattern too long");
  const std::string prefix = ParamKey("");
  std::unique_ptr<rocksdb::Iterator> it(ns.db()->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string name(it->key().data() + 1, it->key().size() - 1);
    if (!req.pattern().empty() && fnmatch(req.pattern().c_str(), name.c_str(), 0) != 0) continue;
    (*rep->mutable_params())[name] = it->value().ToString();
  }
  return FromRocks(it->status(), "get_param");
}

}  // namespace stria::mds
