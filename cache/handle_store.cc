#include "cache/handle_store.h"

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <utility>

#include "cache/cache_key.h"
#include "cache/store_guard.h"
#include "rpc/log.h"

namespace nfsedge {
namespace {

// ---- The format (docs/cache-format.md, "Handle store") ----

constexpr std::string_view kMagic = "nfsedge-handle-store";
constexpr uint32_t kFormatVersion = 1;
constexpr char kMetaKey[] = "m";
constexpr char kHandlePrefix = 'h';
constexpr uint8_t kFlagRoot = 1;
constexpr uint8_t kFlagMounted = 2;
constexpr size_t kMaxExportsPerHandle = 64;
// An export's key: its path and its upstream path (each at most 1024
// bytes, IsCleanAbsolutePath) and a newline.
constexpr uint32_t kMaxExportKey = 2 * 1024 + 1;
constexpr size_t kBatch = 256;  // writes per RocksDB write batch
// After a write RocksDB refused, before the roots' records go again, at
// most so many times in a row.
constexpr auto kRetryPause = std::chrono::seconds(1);
constexpr int kMaxBatchRetries = 30;

std::string MetaValue() {
  std::string v(kMagic);
  AppendU32(&v, kFormatVersion);
  return v;
}

std::string KeyOf(std::string_view handle) {
  std::string k(1, kHandlePrefix);
  k.append(handle);
  return k;
}

rocksdb::Options StoreOptions(rocksdb::Env* env) {
  rocksdb::Options o;
  if (env != nullptr) o.env = env;
  o.paranoid_checks = true;
  o.max_background_jobs = 1;
  o.max_open_files = 64;
  o.write_buffer_size = 4 << 20;  // small records; bounds its memory
  o.max_write_buffer_number = 2;
  o.keep_log_file_num = 2;
  o.max_log_file_size = 1 << 20;
  return o;
}

// Returns why the open store `db` is not a handle store of this format, or
// "" iff it is. An empty store becomes one.
std::string CheckOrInitMeta(rocksdb::DB* db) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kMetaKey, &v);
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) return "it is a foreign RocksDB store (no handle store metadata)";
    if (!it->status().ok()) return "it cannot be read (" + it->status().ToString() + ")";
    rocksdb::WriteOptions w;
    w.sync = true;
    s = db->Put(w, kMetaKey, MetaValue());
    return s.ok() ? "" : "its metadata cannot be written (" + s.ToString() + ")";
  }
  if (!s.ok()) return "its metadata cannot be read (" + s.ToString() + ")";
  if (v != MetaValue()) return "its metadata is not this format's (" + std::string(kMagic) + " v1)";
  return "";
}

}  // namespace

std::string HandleStore::EncodeValue(const std::vector<StoredMembership>& exports) {
  std::string v;
  v.push_back(static_cast<char>(kFormatVersion));
  for (const StoredMembership& m : exports) {
    v.push_back(static_cast<char>((m.root ? kFlagRoot : 0) | (m.mounted ? kFlagMounted : 0)));
    AppendU32(&v, static_cast<uint32_t>(m.export_path.size()));
    v.append(m.export_path);
  }
  return v;
}

bool HandleStore::DecodeValue(std::string_view v, std::vector<StoredMembership>* exports) {
  exports->clear();
  if (v.empty() || static_cast<uint8_t>(v[0]) != kFormatVersion) return false;
  v.remove_prefix(1);
  while (!v.empty()) {
    if (v.size() < 5 || exports->size() >= kMaxExportsPerHandle) return false;
    const auto flags = static_cast<uint8_t>(v[0]);
    const auto* u = reinterpret_cast<const unsigned char*>(v.data() + 1);
    const uint32_t len = (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) |
                         (uint32_t{u[2]} << 8) | uint32_t{u[3]};
    if ((flags & ~(kFlagRoot | kFlagMounted)) != 0 || len == 0 || len > kMaxExportKey ||
        v.size() - 5 < len) {
      return false;
    }
    exports->push_back(StoredMembership{std::string(v.substr(5, len)), (flags & kFlagRoot) != 0,
                                        (flags & kFlagMounted) != 0});
    v.remove_prefix(5 + len);
  }
  return !exports->empty();
}

namespace {

struct Loaded {
  std::string handle;
  std::vector<StoredMembership> exports;
};

// Reads every handle record of `db` into `loaded`, and the keys of those
// that do not decode into `malformed`. Returns why the store cannot be
// read, or "" iff it can.
std::string ScanHandles(rocksdb::DB* db, std::vector<Loaded>* loaded,
                        std::vector<std::string>* malformed) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(std::string(1, kHandlePrefix)); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView();
    if (key.empty() || key[0] != kHandlePrefix) break;
    Loaded l{std::string(key.substr(1)), {}};
    if (l.handle.empty() || l.handle.size() > 64 ||
        !HandleStore::DecodeValue(it->value().ToStringView(), &l.exports)) {
      malformed->emplace_back(key);
      continue;
    }
    loaded->push_back(std::move(l));
  }
  if (it->status().ok()) return "";
  loaded->clear();
  malformed->clear();
  return "its records cannot be read (" + it->status().ToString() + ")";
}

}  // namespace

StatusOr<std::unique_ptr<HandleStore>> HandleStore::Open(const std::string& dir,
                                                         const LoadFunction& each,
                                                         size_t max_queued, rocksdb::Env* env) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("handle store: cannot create " + dir + ": " + ec.message());
  if (!fs::is_directory(dir, ec)) return InvalidArgument("handle store: " + dir + " is not a directory");

  rocksdb::Options opts = StoreOptions(env);
  opts.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, dir, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return IoError("handle store: cannot use " + dir + ", it is in use: " + s.ToString());
  }
  if (s.ok() && HoldsEdgeJournal(db.get())) {
    return InvalidArgument("handle store: " + dir +
                           " holds the edge journal (write.journal_dir); left alone");
  }
  std::string why = s.ok() ? CheckOrInitMeta(db.get()) : "it cannot be opened (" + s.ToString() + ")";
  std::vector<Loaded> loaded;
  std::vector<std::string> malformed;
  if (why.empty()) why = ScanHandles(db.get(), &loaded, &malformed);
  HandleStoreStats st;
  if (!why.empty()) {
    NFSEDGE_LOG(kWarn) << "handle store " << dir << ": " << why
                       << "; rebuilding it empty (handles issued before are forgotten: "
                          "clients holding them get NFS3ERR_STALE and must mount again)";
    db.reset();
    s = rocksdb::DestroyDB(dir, StoreOptions(env));
    if (!s.ok()) return IoError("handle store: cannot rebuild " + dir + ": " + s.ToString());
    s = rocksdb::DB::Open(opts, dir, &raw);
    db.reset(raw);
    if (!s.ok()) return IoError("handle store: cannot create " + dir + ": " + s.ToString());
    why = CheckOrInitMeta(db.get());
    if (!why.empty()) return IoError("handle store " + dir + ": " + why);
    st.rebuilt = true;
  }
  for (Loaded& l : loaded) {
    st.loaded++;
    each(l.handle, std::move(l.exports));
  }
  for (const std::string& k : malformed) (void)db->Delete(rocksdb::WriteOptions(), k);
  if (!malformed.empty()) {
    NFSEDGE_LOG(kWarn) << "handle store " << dir << ": dropped " << malformed.size()
                       << " malformed record(s)";
  }
  st.malformed = malformed.size();
  NFSEDGE_LOG(kInfo) << "handle store " << dir << ": " << st.loaded << " handle(s) loaded";
  std::unique_ptr<HandleStore> store(new HandleStore(dir, std::move(db), max_queued, env));
  {
    std::lock_guard lock(store->mu_);
    store->stats_.loaded = st.loaded;
    store->stats_.malformed = st.malformed;
    store->stats_.rebuilt = st.rebuilt;
  }
  return store;
}

HandleStore::HandleStore(std::string dir, std::unique_ptr<rocksdb::DB> db, size_t max_queued,
                         rocksdb::Env* env)
    : dir_(std::move(dir)),
      max_queued_(max_queued),
      env_(env),
      db_(std::move(db)),
      writer_([this] { WriterLoop(); }) {}

HandleStore::~HandleStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
  if (!db_) return;
  rocksdb::Status s = db_->Close();
  if (!s.ok()) NFSEDGE_LOG(kWarn) << "handle store " << dir_ << ": closing: " << s.ToString();
}

// After a failed write to its log RocksDB refuses every later one, and
// Resume() does not clear such an error (cache/write_journal.cc): the store
// is closed, and opened again (never made anew) by the next batch.
rocksdb::Status HandleStore::WriteBatch(rocksdb::WriteBatch* batch) {
  if (!db_) {
    rocksdb::Options o = StoreOptions(env_);
    o.create_if_missing = false;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir_, &raw);
    if (!s.ok()) return s;
    db_.reset(raw);
    NFSEDGE_LOG(kInfo) << "handle store " << dir_ << ": opened again after a failed write";
  }
  rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), batch);
  if (!s.ok()) {
    (void)db_->Close();
    db_.reset();
  }
  return s;
}

void HandleStore::Put(std::string_view handle, const std::vector<StoredMembership>& exports) {
  const bool marked = std::any_of(exports.begin(), exports.end(),
                                  [](const StoredMembership& m) { return m.root || m.mounted; });
  Enqueue(Write{KeyOf(handle), EncodeValue(exports), marked});
}

void HandleStore::Delete(std::string_view handle) { Enqueue(Write{KeyOf(handle), std::nullopt}); }

void HandleStore::Enqueue(Write w) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= max_queued_ && !w.marked) {
      stats_.dropped++;
      return;
    }
    queue_.push_back(std::move(w));
  }
  wake_.notify_one();
}

void HandleStore::Flush() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

HandleStoreStats HandleStore::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void HandleStore::WriterLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    rocksdb::WriteBatch batch;
    std::vector<Write> taken;  // written again, all of them, if the batch is refused
    bool marked = false;
    while (!queue_.empty() && taken.size() < kBatch) {
      Write& w = queue_.front();
      rocksdb::Status s = w.value ? batch.Put(w.key, *w.value) : batch.Delete(w.key);
      if (!s.ok()) stats_.errors++;
      marked |= w.marked;
      taken.push_back(std::move(w));
      queue_.pop_front();
    }
    const size_t n = taken.size();
    busy_ = true;
    lock.unlock();
    const bool was_closed = !db_;
    rocksdb::Status s = WriteBatch(&batch);
    lock.lock();
    busy_ = false;
    if (s.ok()) {
      stats_.writes += n;
      failed_batches_ = 0;
    } else {
      stats_.errors += n;
      // A batch holding an export root's or mount point's record goes again
      // whole (a later record of the same handle in it stays the last),
      // before anything queued since, after a pause (a full disk does not
      // clear at once) and with the store opened again; kMaxBatchRetries
      // times.
      const bool again = marked && !stopping_ && ++failed_batches_ <= kMaxBatchRetries;
      if (again) {
        NFSEDGE_LOG(kWarn) << "handle store " << dir_ << ": write failed: " << s.ToString()
                           << "; trying again";
        queue_.insert(queue_.begin(), std::make_move_iterator(taken.begin()),
                      std::make_move_iterator(taken.end()));
        wake_.wait_for(lock, kRetryPause, [this] { return stopping_; });
        continue;
      }
      NFSEDGE_LOG(kError) << "handle store " << dir_ << ": write failed: " << s.ToString() << "; "
                          << n << " handle records lost (after a restart their holders get "
                             "NFS3ERR_STALE; a lost export root or mount point: have clients "
                             "mount again)";
      failed_batches_ = 0;
      // A store that could not be opened again is not tried for every batch
      // while the disk stays bad: the writes queued meanwhile wait a pause.
      if (was_closed && !db_ && !stopping_) {
        wake_.wait_for(lock, kRetryPause, [this] { return stopping_; });
      }
    }
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace nfsedge
