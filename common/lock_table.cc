#include "common/lock_table.h"

#include <algorithm>

namespace stria {

namespace {

bool Overlap(const HeldLock& a, const HeldLock& b) { return a.start <= b.end && b.start <= a.end; }

bool Same(const HeldLock& l, const LockOwner& owner, LockKind kind) {
  return l.kind == kind && l.owner == owner;
}

// Whether `a` ends right where `b` starts (without wrapping at kLockEof).
bool Adjacent(const HeldLock& a, const HeldLock& b) { return a.end != kLockEof && a.end + 1 == b.start; }

}  // namespace

std::optional<HeldLock> LockTable::FindConflict(uint64_t ino, const HeldLock& want) const {
  if (want.mode == LockMode::kUnlock) return std::nullopt;
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return std::nullopt;
  for (const HeldLock& l : it->second) {
    if (l.kind != want.kind || l.owner == want.owner || !Overlap(l, want)) continue;
    if (l.mode == LockMode::kWrite || want.mode == LockMode::kWrite) return l;
  }
  return std::nullopt;
}

std::optional<HeldLock> LockTable::Set(uint64_t ino, const HeldLock& want) {
  if (auto conflict = FindConflict(ino, want)) return conflict;
  Apply(ino, want);
  return std::nullopt;
}

void LockTable::Apply(uint64_t ino, const HeldLock& want) {
  std::vector<HeldLock>& locks = by_ino_[ino];
  // Cut the owner's own locks out of [start, end]; keep what lies outside.
  std::vector<HeldLock> kept;
  kept.reserve(locks.size() + 2);
  for (const HeldLock& l : locks) {
    if (!Same(l, want.owner, want.kind) || !Overlap(l, want)) {
      kept.push_back(l);
      continue;
    }
    if (l.start < want.start) {
      HeldLock left = l;
      left.end = want.start - 1;
      kept.push_back(left);
    }
    if (l.end > want.end) {
      HeldLock right = l;
      right.start = want.end + 1;
      kept.push_back(right);
    }
  }
  if (want.mode != LockMode::kUnlock) {
    HeldLock merged = want;
    // Merge with the owner's adjacent locks of the same mode.
    std::erase_if(kept, [&](const HeldLock& l) {
      if (!Same(l, want.owner, want.kind) || l.mode != want.mode) return false;
      if (Adjacent(l, merged)) {
        merged.start = l.start;
        return true;
      }
      if (Adjacent(merged, l)) {
        merged.end = l.end;
        return true;
      }
      return false;
    });
    kept.push_back(merged);
  }
  if (kept.empty()) {
    by_ino_.erase(ino);
  } else {
    locks = std::move(kept);
  }
}

void LockTable::ReleaseOwner(uint64_t ino, const LockOwner& owner, LockKind kind) {
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return;
  std::erase_if(it->second, [&](const HeldLock& l) { return Same(l, owner, kind); });
  if (it->second.empty()) by_ino_.erase(it);
}

size_t LockTable::ReleaseClient(const std::string& client) {
  size_t n = 0;
  for (auto it = by_ino_.begin(); it != by_ino_.end();) {
    n += std::erase_if(it->second, [&](const HeldLock& l) { return l.owner.client == client; });
    it = it->second.empty() ? by_ino_.erase(it) : std::next(it);
  }
  return n;
}

bool LockTable::Holds(uint64_t ino, const LockOwner& owner, LockKind kind) const {
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const HeldLock& l) { return Same(l, owner, kind); });
}

std::vector<std::pair<uint64_t, HeldLock>> LockTable::All() const {
  std::vector<std::pair<uint64_t, HeldLock>> out;
  for (const auto& [ino, locks] : by_ino_) {
    for (const HeldLock& l : locks) out.emplace_back(ino, l);
  }
  return out;
}

size_t LockTable::size() const {
  size_t n = 0;
  for (const auto& [ino, locks] : by_ino_) n += locks.size();
  return n;
}

}  // namespace stria
