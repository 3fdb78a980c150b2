// OST pools as the MGS keeps them (T<name> keys, mds/schema.h): named sets of OSTs that
// `lfs setstripe -p NAME` restricts allocation to. Thread-safety: reads of the DB only.
#pragma once

#include <rocksdb/db.h>

#include <optional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proto/stria.pb.h"

namespace stria::mds {

inline constexpr size_t kMaxPoolName = 15;  // Lustre's LOV_MAXPOOLNAME

bool ValidPoolName(std::string_view name);

// The pool, or nullopt when there is none of that name.
Result<std::optional<proto::PoolInfo>> ReadPool(rocksdb::DB* db, std::string_view name);

// Every pool, by name.
Result<std::vector<proto::PoolInfo>> ListPools(rocksdb::DB* db);

}  // namespace stria::mds
