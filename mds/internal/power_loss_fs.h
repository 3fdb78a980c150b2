// PowerLossFs: a RocksDB FileSystem that simulates a machine losing power, for crash tests
// of the MDS over a real RocksDB on real files.
//
// Every file written through it is tracked: how many bytes were appended and how many of
// them a Sync/Fsync made durable. CutPower() is the moment the power goes: from then on
// nothing reaches the disk (appends, syncs, renames and deletes succeed and do nothing;
// files created afterwards are removed later). After the database is closed,
// DropUnsynced() applies the loss: each tracked file is cut back to what was synced before
// the cut, as a disk would have it after the machine came back (a conservative model: an
// unsynced write is lost whole; directory entries are taken as durable). Open the database
// again, with or without this file system, to see what survived.
//
// Thread-safety: all methods are thread-safe (RocksDB calls them from its own threads).
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace stria::mds::internal {

class PowerLossFs : public rocksdb::FileSystemWrapper {
 public:
  explicit PowerLossFs(std::shared_ptr<rocksdb::FileSystem> base)
      : rocksdb::FileSystemWrapper(std::move(base)) {}

  // An Env over a new PowerLossFs on the default file system; *fs gets the file system.
  static std::unique_ptr<rocksdb::Env> NewEnv(std::shared_ptr<PowerLossFs>* fs);

  const char* Name() const override { return "StriaPowerLossFs"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& s, const std::string& t,
                               const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;

  // The power goes now.
  void CutPower() { cut_.store(true); }
  bool power_cut() const { return cut_.load(); }
  // REQUIRES: the database closed. Cuts every tracked file back to its synced length and
  // removes files created after the cut; returns the bytes dropped.
  uint64_t DropUnsynced();

  // Called by the tracked files.
  void NoteWrite(const std::string& f, uint64_t end);
  void NoteTruncate(const std::string& f, uint64_t size);
  void NoteSync(const std::string& f);

 private:
  struct FileState {
    uint64_t size = 0;     // bytes written (the file's length as the writer sees it)
    uint64_t synced = 0;   // of which durable
    bool after_cut = false;
  };
  rocksdb::IOStatus Track(const std::string& f, uint64_t initial_size,
                          rocksdb::IOStatus st, std::unique_ptr<rocksdb::FSWritableFile>* r);

  std::atomic<bool> cut_{false};
  std::mutex mu_;
  std::map<std::string, FileState> files_;  // GUARDED_BY(mu_)
};

}  // namespace stria::mds::internal
