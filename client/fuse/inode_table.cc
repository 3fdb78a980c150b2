#include "client/fuse/inode_table.h"

#include <algorithm>

#include "proto/layout_components.h"

namespace stria::client::fuse {

namespace {

void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

void Inode::ObserveMdsSize(uint64_t size, bool held_before) {
  mds_size.store(size);
  if (held_before || HoldsSize()) {
    AtomicMax(known_size, size);
  } else {
    known_size.store(size);
  }
}

void Inode::NoteWrite(uint64_t end) {
  AtomicMax(known_size, end);
  AtomicMax(written_end, end);
}

void Inode::NoteAcked(uint64_t end) { AtomicMax(acked_end, end); }

Status Inode::DrainWrites() { return WritesDrained(write_behind.Drain()); }

Status Inode::WritesDrained(Status drained) {
  if (write_failed.exchange(false)) {
    known_size.store(std::max(mds_size.load(), acked_end.load()));
  }
  return drained;
}

void Inode::NoteTruncate(uint64_t size) {
  DropOpenData();
  known_size.store(size);
  written_end.store(size);
  acked_end.store(size);
}

uint64_t Inode::ReportedSize(uint64_t mds_size) const {
  if (HoldsSize()) return std::max(mds_size, known_size.load());
  return mds_size;
}

std::shared_ptr<const proto::Layout> Inode::layout() const {
  std::lock_guard lock(mu_);
  return layout_;
}

std::shared_ptr<const proto::Attr> Inode::attr() const {
  std::lock_guard lock(mu_);
  return attr_;
}

void Inode::set_attr(const proto::Attr& attr) {
  auto copy = std::make_shared<const proto::Attr>(attr);
  std::lock_guard lock(mu_);
  attr_ = std::move(copy);
}

bool Inode::set_attr_unless_older(const proto::Attr& attr) {
  auto copy = std::make_shared<const proto::Attr>(attr);
  std::lock_guard lock(mu_);
  if (attr_ != nullptr && attr_->ctime_ns() > attr.ctime_ns()) return false;
  attr_ = std::move(copy);
  return true;
}

std::shared_ptr<PreOpen> Inode::TakePreOpen() {
  std::lock_guard lock(mu_);
  return std::move(pre_open_);
}

void Inode::set_pre_open(std::shared_ptr<PreOpen> p) {
  std::lock_guard lock(mu_);
  pre_open_ = std::move(p);
}

std::shared_ptr<const std::string> Inode::open_data() const {
  std::lock_guard lock(mu_);
  return open_data_;
}

void Inode::set_open_data(std::shared_ptr<const std::string> data) {
  std::lock_guard lock(mu_);
  open_data_ = std::move(data);
}

std::shared_ptr<const proto::Layout> Inode::set_layout(const proto::Layout& layout) {
  std::lock_guard lock(mu_);
  if (HasObjects(layout) && (!layout_ || layout_->generation() <= layout.generation())) {
    layout_ = std::make_shared<const proto::Layout>(layout);
  }
  return layout_;
}

InodeTable::InodeTable() {
  // The root is known from the start and never forgotten.
  Entry root;
  root.inode = std::make_shared<Inode>(kRootIno);
  root.nlookup = 1;
  ShardOf(kRootIno).map.emplace(kRootIno, std::move(root));
}

std::shared_ptr<Inode> InodeTable::Get(uint64_t ino) const {
  Shard& s = ShardOf(ino);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(ino);
  return it == s.map.end() ? nullptr : it->second.inode;
}

std::shared_ptr<Inode> InodeTable::Ref(const proto::Attr& attr, const proto::Layout* layout) {
  std::shared_ptr<Inode> inode;
  {
    Shard& s = ShardOf(attr.ino());
    std::lock_guard lock(s.mu);
    Entry& e = s.map[attr.ino()];
    if (!e.inode) e.inode = std::make_shared<Inode>(attr.ino());
    ++e.nlookup;
    inode = e.inode;
  }
  if (!inode->set_attr_unless_older(attr)) return inode;
  inode->ObserveMdsSize(attr.size());
  if (layout != nullptr) inode->set_layout(*layout);
  return inode;
}

void InodeTable::Forget(uint64_t ino, uint64_t nlookup) {
  Shard& s = ShardOf(ino);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(ino);
  if (it == s.map.end()) return;
  Entry& e = it->second;
  e.nlookup = nlookup >= e.nlookup ? 0 : e.nlookup - nlookup;
  EraseIfDoneLocked(s, it);
}

void InodeTable::DropIfForgotten(uint64_t ino) {
  Shard& s = ShardOf(ino);
  std::lock_guard lock(s.mu);
  if (auto it = s.map.find(ino); it != s.map.end()) EraseIfDoneLocked(s, it);
}

void InodeTable::EraseIfDoneLocked(Shard& s, std::unordered_map<uint64_t, Entry>::iterator it) {
  if (it->second.nlookup == 0 && it->first != kRootIno && !it->second.inode->Busy()) {
    s.map.erase(it);
  }
}

size_t InodeTable::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.map.size();
  }
  return n;
}

}  // namespace stria::client::fuse
