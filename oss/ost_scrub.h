// ScrubOst: the OST side of `lctl scrub` (OP_OST_SCRUB): every object of one OST read and
// checked against its on-disk checksums (ObjectStore::ScrubObject), summed up in the reply.
//
// Memory is bounded whatever the OST holds: the object walk reads one directory entry at a
// time, one read buffer of ObjectStore::ScrubObject's step (1 MiB) is in use, and at most
// `max_listed` corrupt objects are listed (all are counted). Each corrupt object is logged
// once, naming the OST, the object and the offset. No lock is held across objects, and an
// object's lock only for one 1 MiB piece, so clients' I/O goes on during a scrub.
//
// Thread-safety: runs on the calling thread (an RPC worker); OssService allows one scrub per
// OST at a time.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "oss/object_store.h"
#include "proto/stria.pb.h"

namespace stria::oss {

inline constexpr size_t kDefaultScrubListed = 1000;

Result<proto::OstScrubReply> ScrubOst(ObjectStore& store, size_t max_listed);

}  // namespace stria::oss
