// StripedIo: file data over a layout, as OST RPCs: a plain RAID-0 layout (common/layout.h)
// or a composite one (proto/layout_components.h), whose components each stripe their own
// extent of the file. A read of an uninstantiated component reads a hole; a write to one is
// refused (the caller instantiates it first with OP_MDS_LAYOUT_INTENT). A Data-on-MDT
// component's bytes go to the MDS (OP_MDS_DOM_READ/WRITE, named by the layout's ino); its
// truncation is the MDS's own part of SETATTR, so TruncateObjects leaves it alone.
//
// One call (a read, a write, a truncate, ...) becomes at most one RPC per object per
// contiguous object range: the pieces MapExtent yields are merged per object where their
// object offsets are contiguous (PlanStripedIo). A write's request bulk is gathered with
// iovecs straight from the caller's buffer; a read's reply bulk lands straight in the
// caller's buffer, so a read merges only pieces that are contiguous in the buffer too (a
// reply bulk is one span). The RPCs of one call run in parallel on a bounded thread pool.
// Bytes an OST returns short inside the file size are holes and read as zeros.
//
// StripedIo knows nothing of connections: it sends through an OstTransport (the Client,
// which maps OST indexes to peers and refreshes the OST table when an OSS moved).
// With `capas` (an open's OSS capabilities, client/capa.h; null when the cluster has no
// key), each object request carries its object's capability, renewed as needed.
// Thread-safety: all methods are thread-safe if the transport is.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/layout.h"
#include "common/status.h"
#include "lnet/rpc_client.h"
#include "proto/layout_components.h"
#include "proto/stria.pb.h"

namespace stria::client {

namespace internal {
class ThreadPool;
}
class OpenCapas;
class LocalReads;

enum class IoKind { kRead, kWrite };

// One RPC of a striped transfer: `length` bytes at `obj_offset` of object `stripe`, taken
// from (write) or put into (read) the caller's buffer at the segments, in object order.
struct ObjectIo {
  struct Segment {
    uint64_t buf_offset = 0;
    uint64_t length = 0;
    bool operator==(const Segment&) const = default;
  };
  uint32_t stripe = 0;
  uint64_t obj_offset = 0;
  uint64_t length = 0;
  std::vector<Segment> segments;  // lengths sum to `length`; one segment for a read
};

// Plans the RPCs for file range [offset, offset+length): pieces of one object merge while
// their object offsets are contiguous and the RPC stays within max_rpc_bytes; for a read
// they must also be contiguous in the buffer. Order: by first appearance in the file range.
std::vector<ObjectIo> PlanStripedIo(const StripeGeometry& g, uint64_t offset, uint64_t length,
                                    IoKind kind, uint64_t max_rpc_bytes);

// The geometry of a file layout, checked: RAID-0, stripe_count equal to the number of
// objects (>= 1), a valid stripe size. EINVAL with a reason otherwise.
Result<StripeGeometry> LayoutGeometry(const proto::Layout& layout);

// Where OST RPCs go. Implemented by the Client.
class OstTransport {
 public:
  virtual ~OstTransport() = default;
  // One RPC to OST `ost_idx`, retried/redirected as the implementation sees fit.
  // deadline_ms >= 0: the call, its attempts and their waits included, ends within it (a
  // mirror's I/O, client/mirror_io.h); otherwise the client's retry deadline applies.
  virtual Status OstCallRaw(uint32_t ost_idx, uint16_t opcode, std::string_view request,
                            std::string* reply, const lnet::CallBulk& bulk,
                            int deadline_ms = -1) = 0;
  // One MDS RPC with bulk: the Data-on-MDT reads and writes (OP_MDS_DOM_*) and OP_MDS_SYNC.
  virtual Status MdsCallBulk(uint16_t opcode, std::string_view request, std::string* reply,
                             const lnet::CallBulk& bulk, int retry_deadline_ms = -1) = 0;
};

class StripedIo {
 public:
  // pool may be null (everything then runs on the calling thread).
  StripedIo(OstTransport* transport, internal::ThreadPool* pool, uint64_t max_rpc_bytes);

  // Every call takes deadline_ms: >= 0 bounds each of its OST RPCs (OstTransport).
  //
  // *missing_object (when given) becomes true if an OST had no object it was asked for: a
  // hole of a sparse file, or an object a layout change (lfs migrate) destroyed, which the
  // caller may check by fetching the layout again.
  Result<size_t> Read(const proto::Layout& layout, uint64_t file_size, uint64_t offset,
                      std::span<uint8_t> buf, bool* missing_object = nullptr,
                      OpenCapas* capas = nullptr, int deadline_ms = -1);
  Status Write(const proto::Layout& layout, uint64_t offset, std::span<const uint8_t> data,
               bool sync, OpenCapas* capas = nullptr, int deadline_ms = -1);
  Status TruncateObjects(const proto::Layout& layout, uint64_t size, OpenCapas* capas = nullptr,
                         int deadline_ms = -1);
  // Frees file range [offset, end) in every object (fallocate PUNCH_HOLE).
  Status PunchObjects(const proto::Layout& layout, uint64_t offset, uint64_t end,
                      OpenCapas* capas = nullptr, int deadline_ms = -1);
  // OP_OST_SYNC needs no capability (it neither reads nor changes data).
  Status SyncObjects(const proto::Layout& layout, int deadline_ms = -1);
  Result<uint64_t> GlimpseSize(const proto::Layout& layout, OpenCapas* capas = nullptr,
                               int deadline_ms = -1);

  // Small object reads try `local` first (client/local_reads.h); null: none do. Set before use.
  void set_local_reads(LocalReads* local) { local_ = local; }

 private:
  // One RPC of a call, with the plain layout whose object it addresses (on_mdt: the bytes
  // io.obj_offset.. are file bytes of the Data-on-MDT component; io.stripe is 0).
  struct PlannedIo {
    const proto::Layout* plain;
    ObjectIo io;
    bool on_mdt = false;
  };
  // One stripe object of an instantiated extent.
  struct StripeRef {
    LayoutExtent extent;
    StripeGeometry geometry;
    uint32_t stripe;
  };
  // The RPCs for file range [offset, offset+length) over every extent it reaches; for a read,
  // the buffer ranges that are holes (uninstantiated, or past the layout) go to *holes. A
  // write into an uninstantiated component is EINVAL, past the layout's end EFBIG.
  Result<std::vector<PlannedIo>> Plan(const proto::Layout& layout, uint64_t offset,
                                      uint64_t length, IoKind kind,
                                      std::vector<ObjectIo::Segment>* holes);
  Result<std::vector<StripeRef>> Stripes(const proto::Layout& layout);

  template <typename Req, typename Rep>
  Status Call(uint32_t ost_idx, uint16_t opcode, const Req& req, Rep* rep,
              const lnet::CallBulk& bulk = {}, int deadline_ms = -1);
  // Call for a request that names one object (req.object()), with its capability when
  // capas is set: renewed first when due or when the grant lacks the object, and once more
  // when the OSS answers kCapaExpired.
  template <typename Req, typename Rep>
  Status CallObject(OpenCapas* capas, uint16_t opcode, Req& req, Rep* rep,
                    const lnet::CallBulk& bulk = {}, int deadline_ms = -1);
  // Whether a read of `obj` may skip the OSS: always on a cluster without capabilities, else
  // only with a current one for it.
  static bool CapableLocally(OpenCapas* capas, const proto::ObjectId& obj);
  template <typename Req, typename Rep>
  Status CallMds(uint16_t opcode, const Req& req, Rep* rep, const lnet::CallBulk& bulk = {});

  OstTransport* const transport_;
  internal::ThreadPool* const pool_;
  const uint64_t max_rpc_bytes_;
  LocalReads* local_ = nullptr;
};

}  // namespace stria::client
