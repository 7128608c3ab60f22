// DiskTier: the persistent tier of file data, a RocksDB store on local disk.
//
// Holds blocks like BlockCache (block_cache.h), typically those it evicts,
// and keeps them across restarts. Each block is stored with the ChangeId it
// was read under and is returned only under the caller's current ChangeId
// (DESIGN rule 5), and only intact: every value carries a CRC32C of its
// header and data. The format is in docs/cache-format.md.
//
// The event loop never blocks on the store (DESIGN rule 9): Get(), Put() and
// DropFile() queue the RocksDB work on a small pool of threads, and every
// callback comes back through the owner's `post` function, on the loop
// thread, never on a pool thread. All the work of one file goes to the same
// pool thread in call order: a Get() after a Put() of the same block finds
// it, and a DropFile() is never overtaken by an earlier Put().
//
// What is stored is known without disk I/O: an in-memory index (block ->
// version, bytes, LRU order), rebuilt by Open() from small index records
// kept next to the blocks, so that start-up does not read the data.
//
// Bounded (DESIGN rule 8): in bytes (the keys, values and index records
// written; RocksDB's own overhead comes on top), least recently used blocks
// evicted; and in queued writes: while max_queued puts, or max_queued_bytes
// of their blocks, wait for the pool, further puts are dropped and counted
// (it is a cache; each holds a copy of its block outside the memory tier's
// bound). Reads are not
// dropped (each has a caller waiting, bounded by the caller's reads in
// flight), nor are deletions (each removes an entry the index counted).
//
// It is a cache: writes skip the WAL and are not synced, so a crash may lose
// the latest puts (harmless); deletions go through the WAL, so a crash of
// the process does not bring back a block dropped for a write (DropFile)
// once it ran, and DropFile's are synced, so neither does a crash of the
// machine; a torn or altered value fails its checksum and is
// a miss. A directory holding anything but a store of this format and
// block size is rebuilt empty, never trusted. After a failed write (a full
// or failing disk) the store is resumed or opened again by a later write,
// so the tier recovers with the disk, without a restart.
//
// Thread-safety: every method, including the destructor, runs on the
// owner's event loop thread. The pool threads touch only the store.
#ifndef NFSEDGE_CACHE_DISK_TIER_H_
#define NFSEDGE_CACHE_DISK_TIER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "cache/block_cache.h"
#include "cache/change_id.h"
#include "cache/lru_map.h"
#include "rpc/status.h"

namespace rocksdb {
class Env;
}

namespace nfsedge {

class ShardPool;

struct DiskTierOptions {
  std::string dir;  // dedicated to the store
  uint64_t max_bytes = 4ull << 30;
  int threads = 2;
  uint32_t block_size = 128 << 10;  // a power of two; part of the store's format
  size_t max_queued = 256;          // puts waiting for the pool
  uint64_t max_queued_bytes = 32ull << 20;  // ... and their blocks' bytes (one always may)
  rocksdb::Env* env = nullptr;  // RocksDB's environment (tests); null: the default
  // After a failed write RocksDB refuses every later one: the next write
  // resumes the store or closes and opens it again, at most once per this
  // delay (docs/cache-format.md).
  std::chrono::milliseconds reopen_delay{1000};
};

struct DiskTierStats {
  uint64_t hits = 0;
  uint64_t misses = 0;        // including corrupt values and read errors
  uint64_t stale = 0;         // found under another version: deleted
  uint64_t corrupt = 0;       // values failing their checksum or shape: deleted
  uint64_t puts = 0;          // writes queued
  uint64_t unchanged = 0;     // puts of a block already stored with that version: skipped
  uint64_t rejected = 0;      // puts of a block of the wrong shape, too big, or unconfirmed
  uint64_t dropped_puts = 0;  // puts dropped because max_queued (or max_queued_bytes) waited
  uint64_t evictions = 0;
  uint64_t errors = 0;   // RocksDB reads or writes that failed
  uint64_t reopened = 0;  // times the store took writes again after a failed one
  uint64_t rebuilt = 0;  // 1 iff Open() found the directory unusable and rebuilt it
  uint64_t bytes = 0;    // current, as the index counts them
  uint64_t entries = 0;  // current number of blocks
};

// Runs a closure on the owner's event loop thread. Must be callable from any
// thread.
using PostFunction = std::function<void(std::function<void()>)>;

class DiskTier {
 public:
  // Opens or creates the store in options.dir, creating the directory if
  // needed, and rebuilds the index from it (synchronous I/O: call it at
  // start-up). A store of another format version or block size, a foreign
  // RocksDB, other files, or anything corrupt is logged (kWarn, with the
  // reason) and rebuilt empty; files that are not RocksDB's are left alone.
  // Returns an error iff the options are invalid or the directory cannot be
  // used at all (not a directory, not writable, locked by another process,
  // holding the edge journal: see store_guard.h).
  // REQUIRES: `post` outlives the tier's pool work (the destructor).
  static StatusOr<std::unique_ptr<DiskTier>> Open(const DiskTierOptions& options,
                                                  PostFunction post);
  // Runs the queued work, stops the pool and closes the store. Callbacks of
  // Get()s still queued are posted after the tier is gone; they only call
  // `done`.
  ~DiskTier();
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Returns true iff the index says the block is stored (under any version).
  // No disk I/O, not a use.
  bool MayContain(std::string_view handle, uint64_t index) const;
  // Returns true iff the index says the block is stored under `version`:
  // the only copy a read can use (a copy of another version never answers).
  bool MayContain(std::string_view handle, uint64_t index, const ChangeId& version) const;

  // Reads the block on the pool and calls `done` (through `post`, always
  // exactly once while the owner's loop runs) with it iff it is stored,
  // intact and of `version`, and still stored when the read completes: a
  // block dropped (DropFile(), DropAll()), evicted or replaced while it was
  // read is a miss. A use for the LRU order. A block stored under another
  // version or failing its checksum is deleted. A block the index does not
  // know is a miss without I/O.
  void Get(std::string_view handle, uint64_t index, const ChangeId& version,
           std::function<void(std::optional<Block>)> done);

  // Writes the block on the pool (fire and forget), replacing any, and evicts
  // least recently used blocks so that bytes <= max_bytes. The index is
  // updated at once. Dropped (and counted) while max_queued puts (or
  // max_queued_bytes) wait. A
  // block already stored with the same version is not written again. A block
  // longer than block_size, or shorter without eof, or `unconfirmed`, is
  // rejected.
  void Put(std::string_view handle, uint64_t index, Block block);

  // Deletes every block of the file.
  void DropFile(std::string_view handle);
  // Deletes every block of every file (nfsedge drop-cache).
  void DropAll();
  // Sets the byte bound (config reload): a lower one deletes the least
  // recently used blocks down to it at once (counted as evictions).
  void SetMaxBytes(uint64_t max_bytes);

  uint32_t block_size() const { return options_.block_size; }
  DiskTierStats stats() const;

 private:
  class Store;  // the RocksDB database and the work the pool does on it
  struct Entry {
    ChangeId version;
    uint64_t put_id;  // tells a later Put() of the same block apart
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using FileIndex =
      std::unordered_map<std::string, std::unordered_set<uint64_t>, StringHash, std::equal_to<>>;
  enum class ReadResult { kHit, kAbsent, kStale, kCorrupt, kError };

  DiskTier(const DiskTierOptions& options, PostFunction post, std::unique_ptr<Store> store);

  // Queues `work` on the pool thread of `handle`.
  void Submit(std::string_view handle, std::function<void()> work);
  void Index(std::string_view key, const Entry& e, uint64_t charge);
  void Unindex(const std::string& key);
  // Removes the entry and queues the deletion of the block.
  void EraseAndDelete(const std::string& key);
  void EvictToLimit();
  // Returns true iff the block read may be handed to the caller: a hit on
  // the entry the read was started for, still indexed.
  bool FinishGet(const std::string& key, uint64_t put_id, ReadResult r);
  void FinishWrite(const std::string& key, uint64_t put_id);
  void UpdateGauges();

  // Constant after construction; read by pool threads too.
  const DiskTierOptions options_;
  const PostFunction post_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ShardPool> pool_;  // its threads, one FIFO queue each
  std::atomic<size_t> queued_puts_{0};    // puts queued and not yet started
  std::atomic<uint64_t> queued_bytes_{0};  // ... their blocks' bytes

  // Loop thread only.
  uint64_t max_bytes_;     // options_.max_bytes until SetMaxBytes()
  LruMap<Entry> index_;    // by BlockKey(), charged as stored
  FileIndex files_;        // handle -> indexes of its stored blocks
  uint64_t next_seq_ = 1;  // put ids and LRU stamps, increasing
  DiskTierStats stats_;
  // Posted closures hold a weak_ptr to it: they find it empty once the tier
  // is gone (both happen on the loop thread).
  std::shared_ptr<DiskTier*> self_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_DISK_TIER_H_
