// Shared bulk: reply bulk that a server on the same host puts straight into the client's
// memory, as the o2ib LND's RDMA writes do across hosts.
//
// A client process keeps one arena: a sealed memfd (it can neither shrink nor grow), mapped
// once. Over each local-socket connection (lnet/socket.h) the client passes the memfd once
// (OP_LNET_SHARE_BULK, SCM_RIGHTS); the server maps it too. A request whose reply bulk is to
// land in arena memory then carries a descriptor of that memory (kFlagBulkShared, frame.h);
// a handler that can produce its bulk in place (the OSS reading an object with O_DIRECT)
// writes it there, and the reply says how many bytes it put (kFlagBulkShared, no bytes in
// the stream, no crc: nothing crossed a wire). A cold read then costs the client no copy and
// no checksum pass, and the OSS no copy either: the disk writes the client's pages.
//
// Only memory the client chose to share is reachable: the arena, not the rest of the
// process. The client allocates from it the buffers that replies land in (the FUSE read
// buffers); everything else goes over the socket as before.
//
// A request whose exchange fails after it was sent (a timeout, a lost connection) may still
// be served later by a server that is only slow, and write into the buffer after the caller
// reused it. Detach gives that range fresh private pages first, so such a late write lands
// in pages no one reads.
//
// Request bulk goes the same way the other direction (kFlagRequestBulkShared, frame.h): a
// write whose bytes the client keeps in arena memory (its write-behind copies,
// lnet::Buffer::Shareable) sends only a descriptor, and the server reads the bytes from its
// mapping, by O_DIRECT straight to disk when aligned: no copy into or out of the socket and
// no wire crc on either side. A server offers it in its OP_LNET_SHARE_BULK reply and takes
// it in place only for the opcodes it names (RpcServer::ReadsBulkInPlace, the OSS's writes);
// any other request's bulk is copied out of the arena before its handler runs. The client
// does not touch such a buffer until the exchange returns; one that fails unanswered is
// retired (Retire): the client's view gets private pages with the same bytes, the shared
// ones stay as they are and are never handed out again, so a late read by a slow server
// reads what the request meant whatever the caller does next. A client that changes a buffer while a write
// of it is in flight can only garble its own write: the OSS sums the bytes it reads for the
// object's chunk checksums, so a later read of bytes that changed under the sum fails with
// kCorrupt rather than returning them.
//
// LndConfig::local_shared_bulk (STRIA_LNET_SHARED=0 in the environment) turns it off.
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "common/status.h"

namespace stria::lnet {

// The unit of shared bulk: descriptors, arena blocks and Offset ranges are whole pages.
inline constexpr size_t kSharedBulkPage = 4096;

class BulkArena {
 public:
  // The arena's address space: sparse, so only pages in use cost memory.
  static constexpr size_t kDefaultBytes = size_t{1} << 30;

  // Creates the process's arena (once) and returns it: a process that will receive bulk
  // into arena buffers (stria-fuse) calls it before it connects anywhere, since connections
  // share the arena when they open. Null when shared bulk is off or the memfd could not be
  // made: then every buffer is private and bulk goes over the socket.
  static BulkArena* Create();
  // The arena if Create made one, else null.
  static BulkArena* Get();

  // A page-aligned block of at least `size` bytes from the arena, or null when it is full
  // (the caller then allocates private memory). Blocks are kept by power-of-two size class
  // when freed and handed out again, except one that was detached or retired (in part),
  // which is never shared again; past 64 MiB of freed blocks, the pages of those freed
  // longest ago go back to the system.
  uint8_t* Allocate(size_t size, size_t* capacity);
  void Free(uint8_t* p, size_t capacity);

  // Where [p, p+len) lies in the arena when the whole range does, both ends on page
  // boundaries, and it was not detached: the descriptor a request carries. nullopt otherwise.
  std::optional<uint64_t> Offset(const void* p, size_t len) const;

  // Replaces the pages of [p, p+len) (page-aligned, inside the arena) with private zero
  // pages and stops sharing them: see the file comment.
  void Detach(void* p, size_t len);
  // For request bulk a server may still read (see the file comment): stops sharing
  // [p, p+len) (page-aligned, inside the arena), gives it private pages holding the same
  // bytes, and leaves the shared pages as they are, for that server; the blocks it lies in
  // are retired when freed. Their shared pages stay allocated: the price of a failure.
  void Retire(void* p, size_t len);

  // A server took this arena's request bulk in place (ShareBulkReply.request_bulk): from
  // then on lnet::Buffer::Shareable hands out arena blocks. Before, and in a process that
  // talks to no such server, request bulk buffers stay private (BufferPool), so that an
  // o2ib client's registrations of pool memory stay cached and the arena stays small.
  void NoteRequestBulkTaken();
  bool RequestBulkTaken() const;

  int fd() const { return fd_; }
  size_t size() const { return size_; }
  uint8_t* base() const { return base_; }

 private:
  // The offset of [p, p+len) when it lies in the arena on page boundaries, detached or not.
  std::optional<uint64_t> PagesAt(const void* p, size_t len) const;

  BulkArena(int fd, uint8_t* base, size_t size);
  struct State;
  const int fd_;
  uint8_t* const base_;
  const size_t size_;
  State* state_;  // allocator and detached ranges, behind a mutex (never freed: process-wide)
};

// Backs the huge-page-aligned 2 MiB ranges inside [p, p+len) with huge pages, keeping their
// bytes (MADV_COLLAPSE, Linux 6.1; also for memfd pages where shmem huge pages are off, as
// Debian has them); the bytes so backed, 0 where the kernel cannot. Why: a buffer that
// O_DIRECT reads land in is then physically contiguous, and a 1 MiB read goes to the disk
// as one request. In 4 KiB pages scattered over memory it takes a segment per page, past
// the 254 a virtio disk takes per request, so it went as two, and the disk read such
// buffers 40% slower (docs/performance.md, "Ring entries in huge pages").
size_t PreferHugePages(void* p, size_t len);

// A page-aligned block of memory that replies may land in: from the process's arena where
// there is one with room, else from the BufferPool (then private, and bulk comes over the
// socket). For buffers a client receives into for as long as it likes: FUSE READ replies,
// FUSE ring entries. Movable, not copyable.
class BulkBlock {
 public:
  BulkBlock() = default;
  explicit BulkBlock(size_t size);
  ~BulkBlock() { Release(); }
  BulkBlock(BulkBlock&& o) noexcept { *this = std::move(o); }
  BulkBlock& operator=(BulkBlock&& o) noexcept;
  BulkBlock(const BulkBlock&) = delete;
  BulkBlock& operator=(const BulkBlock&) = delete;

  uint8_t* data() const { return p_; }
  size_t size() const { return size_; }
  bool shared() const { return arena_ != nullptr; }
  // Backs the block's huge-page-aligned parts with huge pages (lnet::PreferHugePages); the
  // bytes so backed.
  size_t PreferHugePages();

 private:
  void Release();
  BulkArena* arena_ = nullptr;  // null: from the BufferPool
  uint8_t* p_ = nullptr;
  size_t cap_ = 0;
  size_t size_ = 0;
};

// The descriptor of shared reply bulk, packed in a request header's last_committed field
// (unused in requests): the byte offset in the arena in bits 0-39 and the length in pages
// in bits 40-63. Up to 1 TiB of arena and 64 GiB per reply.
uint64_t PackSharedBulk(uint64_t offset, size_t len);
// Unpacks it; kProtocol when it is not page-aligned or does not fit a region of
// region_size bytes.
Result<std::span<uint8_t>> UnpackSharedBulk(uint64_t packed, uint8_t* region, size_t region_size);

// A server's mapping of one client's arena. One per arena in the process, however many
// connections of that client share it: on this host's VM every (mapping, page) pair pays a
// slow first touch, so eight mappings of one arena would pay it eight times.
class SharedRegion {
 public:
  // Maps the memfd the client passed, or finds the mapping of it this process has already:
  // kInval unless it is a memfd sealed against shrinking (a peer could otherwise truncate it
  // and fault the server) of at most max_size bytes. Takes ownership of fd (closes it).
  static Result<std::shared_ptr<SharedRegion>> Map(int fd, size_t max_size);

  SharedRegion(uint8_t* base, size_t size) : base_(base), size_(size) {}
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  uint8_t* const base_;
  const size_t size_;
};

}  // namespace stria::lnet
