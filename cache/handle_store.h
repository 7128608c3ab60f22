// HandleStore: the persistent side of the HandleRegistry, a RocksDB store in
// a directory of its own, so that the file handles the proxy handed out stay
// valid across a restart (clients need not remount, handles do not grow).
//
// One record per handle: key "h" + handle bytes, value the exports the handle
// was handed out for, by export path (so that a config whose exports moved
// keeps only what still applies). A metadata record names the format. The
// format is in docs/cache-format.md.
//
// The event loop never blocks on the store (DESIGN rule 9): Open() reads the
// store once at start-up; Put() and Delete() queue the write for one writer
// thread and return. Bounded (DESIGN rule 8): at most max_queued writes wait;
// further writes are dropped and counted (the handle stays valid in memory;
// after a restart a client holding it gets NFS3ERR_STALE and looks it up
// again), except the record of an export's root or mount point (one per
// MNT path), which is never dropped for a full queue, and whose batch is
// written again (30 times at most, a second apart) after a write RocksDB
// refused: lost, a restart would not know that handle as the export's
// root, and a client holding a handle below it could reach ".." of the
// root through a LOOKUP of ".." (a loss is logged as an error). Writes go through RocksDB's write-ahead log without fsync: a
// process crash loses nothing, a machine crash may lose the latest handles.
//
// A directory holding a foreign RocksDB, a store of another format, or a
// store that cannot be opened or read is logged (kWarn, with the reason) and
// rebuilt empty, never trusted; records that do not decode are dropped.
//
// Thread-safety: Put(), Delete(), Flush() and the accessors may be called
// from any thread; the writer thread touches only the store.
#ifndef NFSEDGE_CACHE_HANDLE_STORE_H_
#define NFSEDGE_CACHE_HANDLE_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rpc/status.h"

namespace rocksdb {
class DB;
class Env;
class WriteBatch;
class Status;
}

namespace nfsedge {

// One export a stored handle belongs to.
struct StoredMembership {
  std::string export_path;
  bool root = false;     // the handle is that export's root (MNT's answer)
  bool mounted = false;  // MNT's answer for a path below an export
  bool operator==(const StoredMembership&) const = default;
};

struct HandleStoreStats {
  uint64_t loaded = 0;     // records read by Open()
  uint64_t malformed = 0;  // records that did not decode: dropped
  uint64_t writes = 0;     // puts and deletes done
  uint64_t dropped = 0;    // writes dropped because max_queued were waiting
  uint64_t errors = 0;     // writes RocksDB refused
  bool rebuilt = false;    // Open() found the directory unusable and rebuilt it
};

class HandleStore {
 public:
  using LoadFunction =
      std::function<void(std::string_view handle, std::vector<StoredMembership> exports)>;

  // Opens or creates the store in `dir` (creating the directory), calling
  // `each` for every stored handle. Returns an error iff the directory cannot
  // be used at all (not a directory, not writable, in use by another
  // process, holding the edge journal: see store_guard.h). A store whose
  // records cannot all be read is rebuilt empty and `each` is not called.
  // Synchronous I/O: call it at start-up. `env`: RocksDB's environment
  // (tests inject disk errors); null is the default one.
  static StatusOr<std::unique_ptr<HandleStore>> Open(const std::string& dir,
                                                     const LoadFunction& each,
                                                     size_t max_queued = 65536,
                                                     rocksdb::Env* env = nullptr);
  // Writes what is queued, then closes the store.
  ~HandleStore();
  HandleStore(const HandleStore&) = delete;
  HandleStore& operator=(const HandleStore&) = delete;

  // Queue the record of `handle` to be written / deleted.
  void Put(std::string_view handle, const std::vector<StoredMembership>& exports);
  void Delete(std::string_view handle);
  // Returns once every write queued before the call is done.
  void Flush();

  HandleStoreStats stats() const;
  const std::string& dir() const { return dir_; }

  // The record format, exposed for tests. DecodeValue returns false iff
  // `value` is not a well-formed record.
  static std::string EncodeValue(const std::vector<StoredMembership>& exports);
  static bool DecodeValue(std::string_view value, std::vector<StoredMembership>* exports);

 private:
  struct Write {
    std::string key;
    std::optional<std::string> value;  // nullopt = delete
    bool marked = false;  // an export's root or mount point: never dropped
  };

  HandleStore(std::string dir, std::unique_ptr<rocksdb::DB> db, size_t max_queued,
              rocksdb::Env* env);
  void Enqueue(Write w);
  void WriterLoop();
  // Writes `batch`, opening the store again first if a failed write closed
  // it (writer thread only).
  rocksdb::Status WriteBatch(rocksdb::WriteBatch* batch);

  // Constant after construction.
  const std::string dir_;
  const size_t max_queued_;
  rocksdb::Env* const env_;

  // The writer thread's (and the destructor's once it has joined): null
  // after a failed write, until opened again.
  std::unique_ptr<rocksdb::DB> db_;

  mutable std::mutex mu_;
  std::condition_variable wake_;  // work queued, or stopping
  std::condition_variable idle_;  // the queue drained
  // Guarded by mu_.
  std::deque<Write> queue_;
  bool busy_ = false;  // the writer holds writes taken from queue_
  bool stopping_ = false;
  int failed_batches_ = 0;  // refused in a row, with a root's record (WriterLoop)
  HandleStoreStats stats_;

  std::thread writer_;  // last: starts after everything above exists
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_HANDLE_STORE_H_
