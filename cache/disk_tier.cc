#include "cache/disk_tier.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <array>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "cache/cache_key.h"
#include "cache/shard_pool.h"
#include "cache/store_guard.h"
#include "rpc/log.h"

namespace nfsedge {
namespace {

// ---- The format (docs/cache-format.md) ----

constexpr uint32_t kFormatVersion = 2;
constexpr std::string_view kMagic = "nfsedge-block-store";
// Sorts after every block key and index record (their first byte is the high
// byte of a handle length, 0 in practice).
const std::string kMetaKey = std::string("\xff") + "nfsedge.meta";
constexpr char kIndexPrefix = '\xfe';
constexpr size_t kValueHeader = 30;                  // version, flags, ChangeId, length
constexpr size_t kValueOverhead = kValueHeader + 4;  // + CRC32C
constexpr size_t kRecordSize = 40;                   // seq, value length, ChangeId
constexpr uint64_t kMinCharge = 4096;                // see Charge()
constexpr uint8_t kFlagEof = 1;

uint32_t ReadU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

uint64_t ReadU64(const char* p) { return (uint64_t{ReadU32(p)} << 32) | ReadU32(p + 4); }

// CRC32C (Castagnoli), reflected, table driven.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

// The CRC32C of `first` followed by `then`.
uint32_t Crc32c(std::string_view first, std::string_view then) {
  uint32_t c = ~0u;
  for (std::string_view bytes : {first, then}) {
    for (char ch : bytes) c = kCrcTable[(c ^ static_cast<unsigned char>(ch)) & 0xff] ^ (c >> 8);
  }
  return ~c;
}

void AppendChangeId(std::string* out, const ChangeId& v) {
  AppendU64(out, v.size);
  AppendU32(out, v.mtime.seconds);
  AppendU32(out, v.mtime.nseconds);
  AppendU32(out, v.ctime.seconds);
  AppendU32(out, v.ctime.nseconds);
}

ChangeId ReadChangeId(const char* p) {
  ChangeId v;
  v.size = ReadU64(p);
  v.mtime = {ReadU32(p + 8), ReadU32(p + 12)};
  v.ctime = {ReadU32(p + 16), ReadU32(p + 20)};
  return v;
}

std::string EncodeMeta(uint32_t block_size) {
  std::string out(kMagic);
  AppendU32(&out, kFormatVersion);
  AppendU32(&out, block_size);
  return out;
}

// The value of block `b` stored under `key`: its CRC covers the key too, so
// a value found under another key (another block's, another file's) is not
// intact.
std::string EncodeValue(std::string_view key, const Block& b) {
  std::string out;
  out.reserve(kValueOverhead + b.data.size());
  out.push_back(static_cast<char>(kFormatVersion));
  out.push_back(static_cast<char>(b.eof ? kFlagEof : 0));
  AppendChangeId(&out, b.version);
  AppendU32(&out, static_cast<uint32_t>(b.data.size()));
  out.append(b.data);
  AppendU32(&out, Crc32c(key, out));
  return out;
}

// Returns true iff `v` is an intact value of a well-formed block, stored
// under `key`.
bool DecodeValue(std::string_view key, std::string_view v, uint32_t block_size, Block* b) {
  if (v.size() < kValueOverhead) return false;
  const size_t len = ReadU32(v.data() + 26);
  if (v.size() != kValueOverhead + len) return false;
  if (ReadU32(v.data() + kValueHeader + len) != Crc32c(key, v.substr(0, kValueHeader + len))) {
    return false;
  }
  const auto flags = static_cast<uint8_t>(v[1]);
  if (static_cast<uint8_t>(v[0]) != kFormatVersion || (flags & ~kFlagEof) != 0) return false;
  b->eof = (flags & kFlagEof) != 0;
  if (len > block_size || (len < block_size && !b->eof)) return false;
  b->version = ReadChangeId(v.data() + 2);
  b->data.assign(v.substr(kValueHeader, len));
  return true;
}

std::string IndexKey(std::string_view key) {
  std::string out(1, kIndexPrefix);
  out.append(key);
  return out;
}

std::string EncodeRecord(uint64_t seq, uint64_t value_size, const ChangeId& version) {
  std::string out;
  out.reserve(kRecordSize);
  AppendU64(&out, seq);
  AppendU64(&out, value_size);
  AppendChangeId(&out, version);
  return out;
}

// What the index charges for a block: its key and value, and its index
// record under its own key; at least kMinCharge, so that the index in
// memory (about 500 bytes an entry) stays under an eighth of max_bytes
// however small the files (one short EOF block each).
uint64_t Charge(size_t key_size, uint64_t value_size) {
  return std::max<uint64_t>(key_size + value_size + 1 + key_size + kRecordSize, kMinCharge);
}

// Returns the smallest string greater than every string starting with `p`.
// REQUIRES: `p` has a byte other than 0xff.
std::string Successor(std::string p) {
  while (!p.empty() && static_cast<unsigned char>(p.back()) == 0xff) p.pop_back();
  p.back() = static_cast<char>(static_cast<unsigned char>(p.back()) + 1);
  return p;
}

rocksdb::Options StoreOptions(rocksdb::Env* env) {
  rocksdb::Options o;
  if (env != nullptr) o.env = env;
  o.paranoid_checks = true;
  o.max_background_jobs = 2;
  o.max_open_files = 256;
  o.keep_log_file_num = 2;
  o.max_log_file_size = 1 << 20;
  o.compression = rocksdb::kNoCompression;  // file data is often compressed already
  // RocksDB holds recent writes in memory (write buffers) until it flushes
  // them: bounded here, 2 x 8 MiB, outside cache.memory_bytes
  // (docs/robustness.md, "Load": memory).
  o.write_buffer_size = 8 << 20;
  o.max_write_buffer_number = 2;
  o.level_compaction_dynamic_level_bytes = true;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(8 << 20);  // the memory tier caches the data
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

}  // namespace

// ---- The store: what the pool threads do (rocksdb::DB is thread-safe) ----

class DiskTier::Store {
 public:
  struct Record {
    std::string key;  // BlockKey()
    uint64_t seq;
    uint64_t value_size;
    ChangeId version;
  };

  // Opens the store in o.dir, rebuilding it if it is not usable as is, and
  // fills `records` with its index records.
  static StatusOr<std::unique_ptr<Store>> Open(const DiskTierOptions& o, bool* rebuilt,
                                               std::vector<Record>* records);
  ~Store();

  ReadResult Read(const std::string& key, const ChangeId& version, uint64_t touch_seq,
                  std::optional<Block>* out);
  // Each returns true iff the store did it.
  bool Write(const std::string& key, const Block& b, uint64_t seq);
  bool Delete(const std::string& key);
  bool DeleteFile(std::string_view handle);
  // Times the store was opened again (any thread).
  uint64_t reopened() const { return reopened_.load(std::memory_order_relaxed); }

  // A marker left in the directory when a deletion failed: the store may
  // hold blocks the index no longer counts (over disk_bytes) and that a
  // restart would index again, of a version a write through the proxy
  // replaced without changing it (coarse server timestamps). The next open
  // rebuilds it; so does the close, if the marker could not be made.
  static constexpr const char* kRebuildMarker = "NFSEDGE-REBUILD";

 private:
  Store(std::unique_ptr<rocksdb::DB> db, const DiskTierOptions& o);
  // A deletion failed (any thread): the marker, and the rebuild at close.
  void Untrusted();
  // Writes the batch; returns true iff the store took it. After a failed
  // write RocksDB refuses every later one (a failed log write is not
  // cleared by Resume(); a failed flush stops the store too): the store is
  // marked broken, and the next write resumes it or else closes it and
  // opens it again (never made anew; read-only for reads while that fails),
  // at most once per reopen_delay. Blocks written without the log since the
  // last flush are lost by a close: their reads are misses.
  bool Apply(const rocksdb::WriteOptions& wo, rocksdb::WriteBatch* batch);
  // Returns true iff the store is usable for a write: not broken, or opened
  // again now.
  bool Reopen();
  // Each returns why the store cannot be used as is, or "" iff it can.
  static std::string CheckMeta(rocksdb::DB* db, uint32_t block_size);
  static std::string ScanIndex(rocksdb::DB* db, uint32_t block_size, std::vector<Record>* records);

  // Shared by reads and writes; held alone to close and open the store.
  SharedMutex mu_;
  std::unique_ptr<rocksdb::DB> db_ NFSEDGE_GUARDED_BY(mu_);  // null: an opening failed
  bool broken_ NFSEDGE_GUARDED_BY(mu_) = false;  // a write failed: open it again first
  bool read_only_ NFSEDGE_GUARDED_BY(mu_) = false;  // db_ opened read-only (broken_ too)
  uint64_t generation_ NFSEDGE_GUARDED_BY(mu_) = 0;  // times broken_ was cleared
  std::chrono::steady_clock::time_point retry_at_ NFSEDGE_GUARDED_BY(mu_);
  const std::chrono::milliseconds reopen_delay_;
  std::atomic<uint64_t> reopened_{0};
  const uint32_t block_size_;
  const std::string dir_;
  rocksdb::Env* const env_;
  std::atomic<bool> untrusted_{false};
  rocksdb::WriteOptions write_;
  // Deletions go through the write-ahead log: a block deleted because a
  // write replaced its bytes must not come back after a crash of the
  // process, if it was already flushed to a table file. A file's blocks
  // dropped for a write (or drop-cache) are synced too: after a crash of
  // the machine they would come back under a version the write may not
  // have changed (coarse server timestamps). One sync per file written
  // while the tier holds its blocks; evictions are not synced (an evicted
  // block that comes back is still its version's).
  rocksdb::WriteOptions delete_;
  rocksdb::WriteOptions drop_;
  rocksdb::ReadOptions read_;
};

DiskTier::Store::Store(std::unique_ptr<rocksdb::DB> db, const DiskTierOptions& o)
    : db_(std::move(db)),
      reopen_delay_(o.reopen_delay),
      block_size_(o.block_size),
      dir_(o.dir),
      env_(o.env) {
  write_.disableWAL = true;  // a cache: a crash may lose the latest writes
  delete_.disableWAL = false;
  drop_.disableWAL = false;
  drop_.sync = true;
  read_.fill_cache = false;  // the memory tier holds what is hot
}

DiskTier::Store::~Store() {
  WriterLock l(&mu_);
  if (db_ && !broken_) {
    rocksdb::Status s = db_->Flush(rocksdb::FlushOptions());
    if (s.ok()) s = db_->Close();
    if (!s.ok()) NFSEDGE_LOG(kWarn) << "disk tier: closing the store: " << s.ToString();
  }
  if (!untrusted_.load()) return;
  db_.reset();
  // Deleting files works on a full disk, where the failed deletions did not.
  const rocksdb::Status s = rocksdb::DestroyDB(dir_, StoreOptions(env_));
  std::error_code ec;
  if (s.ok()) std::filesystem::remove(std::filesystem::path(dir_) / kRebuildMarker, ec);
  NFSEDGE_LOG(kWarn) << "disk tier: " << dir_ << ": emptied at close after a failed deletion"
                     << (s.ok() ? "" : ": " + s.ToString() + " (rebuilt at the next start)");
}

void DiskTier::Store::Untrusted() {
  if (untrusted_.exchange(true)) return;
  const std::string marker = (std::filesystem::path(dir_) / kRebuildMarker).string();
  const int fd = ::open(marker.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  NFSEDGE_LOG(kWarn) << "disk tier: " << dir_ << ": a deletion failed; the store is "
                     << "emptied at close and rebuilt at the next start"
                     << (fd >= 0 ? "" : " (if it closes: the marker could not be made)");
}

std::string DiskTier::Store::CheckMeta(rocksdb::DB* db, uint32_t block_size) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kMetaKey, &v);
  if (s.IsNotFound()) return "it has no metadata key (a foreign or unfinished store)";
  if (!s.ok()) return "its metadata cannot be read (" + s.ToString() + ")";
  if (v.size() != kMagic.size() + 8 || !std::string_view(v).starts_with(kMagic)) {
    return "its metadata is not this program's";
  }
  const uint32_t version = ReadU32(v.data() + kMagic.size());
  const uint32_t size = ReadU32(v.data() + kMagic.size() + 4);
  if (version != kFormatVersion) {
    return "it has format version " + std::to_string(version) + ", not " +
           std::to_string(kFormatVersion);
  }
  if (size != block_size) {
    return "its block size is " + std::to_string(size) + ", not the configured " +
           std::to_string(block_size);
  }
  return "";
}

std::string DiskTier::Store::ScanIndex(rocksdb::DB* db, uint32_t block_size,
                                       std::vector<Record>* records) {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  const std::string end(1, static_cast<char>(kIndexPrefix + 1));
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  for (it->Seek(std::string(1, kIndexPrefix)); it->Valid(); it->Next()) {
    const std::string_view key = it->key().ToStringView().substr(1);
    const std::string_view v = it->value().ToStringView();
    std::string_view handle;
    uint64_t index = 0;
    if (!ParseBlockKey(key, &handle, &index) || v.size() != kRecordSize) {
      return "it holds a malformed index record";
    }
    Record r{std::string(key), ReadU64(v.data()), ReadU64(v.data() + 8),
             ReadChangeId(v.data() + 16)};
    if (r.value_size < kValueOverhead || r.value_size > kValueOverhead + block_size) {
      return "it holds an index record of impossible size";
    }
    records->push_back(std::move(r));
  }
  if (!it->status().ok()) return "its index cannot be read (" + it->status().ToString() + ")";
  return "";
}

StatusOr<std::unique_ptr<DiskTier::Store>> DiskTier::Store::Open(const DiskTierOptions& o,
                                                                 bool* rebuilt,
                                                                 std::vector<Record>* records) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) return IoError("cannot create " + o.dir + ": " + ec.message());
  if (!fs::is_directory(o.dir, ec)) return InvalidArgument(o.dir + " is not a directory");

  std::unique_ptr<rocksdb::DB> db;
  std::string why;  // why the directory must be rebuilt
  const fs::path marker = fs::path(o.dir) / kRebuildMarker;
  if (fs::exists(marker, ec)) {
    why = "a deletion failed while it was in use";
  } else if (fs::exists(fs::path(o.dir) / "CURRENT", ec)) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(StoreOptions(o.env), o.dir, &raw);
    db.reset(raw);
    if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
      return IoError("cannot use " + o.dir + ", it is in use: " + s.ToString());
    }
    if (s.ok() && HoldsEdgeJournal(db.get())) {
      return InvalidArgument(o.dir + " holds the edge journal (write.journal_dir); left alone");
    }
    if (!s.ok()) {
      why = "it cannot be opened (" + s.ToString() + ")";
    } else {
      why = CheckMeta(db.get(), o.block_size);
      if (why.empty()) why = ScanIndex(db.get(), o.block_size, records);
    }
  } else if (!fs::is_empty(o.dir, ec) || ec) {
    why = "it holds files but no store";
  }

  if (!why.empty()) {
    NFSEDGE_LOG(kWarn) << "disk tier: " << o.dir << ": " << why << "; rebuilding it empty";
    db.reset();
    records->clear();
    rocksdb::Status s = rocksdb::DestroyDB(o.dir, StoreOptions(o.env));
    if (!s.ok()) return IoError("cannot rebuild the store in " + o.dir + ": " + s.ToString());
    fs::remove(marker, ec);
    if (ec) return IoError("cannot remove " + marker.string() + ": " + ec.message());
    *rebuilt = true;
  }
  if (!db) {
    rocksdb::Options opts = StoreOptions(o.env);
    opts.create_if_missing = true;
    opts.error_if_exists = true;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(opts, o.dir, &raw);
    db.reset(raw);
    if (!s.ok()) return IoError("cannot create a store in " + o.dir + ": " + s.ToString());
    rocksdb::WriteOptions durable;
    durable.sync = true;
    s = db->Put(durable, kMetaKey, EncodeMeta(o.block_size));
    if (!s.ok()) return IoError("cannot write the metadata in " + o.dir + ": " + s.ToString());
  }
  return std::unique_ptr<Store>(new Store(std::move(db), o));
}

DiskTier::ReadResult DiskTier::Store::Read(const std::string& key, const ChangeId& version,
                                           uint64_t touch_seq, std::optional<Block>* out) {
  std::string value;
  rocksdb::Status s;
  {
    ReaderLock l(&mu_);
    if (!db_) return ReadResult::kError;
    s = db_->Get(read_, key, &value);
  }
  if (s.IsNotFound()) return ReadResult::kAbsent;
  if (!s.ok() && !s.IsCorruption()) return ReadResult::kError;
  Block b;
  if (!s.ok() || !DecodeValue(key, value, block_size_, &b)) {
    Delete(key);
    return ReadResult::kCorrupt;
  }
  if (b.version != version) {
    Delete(key);
    return ReadResult::kStale;
  }
  // The new LRU stamp, for the order after a restart; losing it is harmless.
  {
    ReaderLock l(&mu_);
    if (db_ && !broken_) {
      db_->Put(write_, IndexKey(key), EncodeRecord(touch_seq, value.size(), b.version))
          .PermitUncheckedError();
    }
  }
  *out = std::move(b);
  return ReadResult::kHit;
}

bool DiskTier::Store::Reopen() {
  WriterLock l(&mu_);
  if (!broken_) return true;  // another thread did
  const auto now = std::chrono::steady_clock::now();
  if (now < retry_at_) return false;
  retry_at_ = now + reopen_delay_;
  if (db_ && !read_only_ && db_->Resume().ok()) {  // a failed flush, the disk better now
    broken_ = false;
    generation_++;
    reopened_.fetch_add(1, std::memory_order_relaxed);
    NFSEDGE_LOG(kInfo) << "disk tier: " << dir_ << ": writing again after a failed write";
    return true;
  }
  if (db_) {
    db_->Close().PermitUncheckedError();  // refused writes are why it closes
    db_.reset();
  }
  rocksdb::Options o = StoreOptions(env_);
  o.create_if_missing = false;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::Open(o, dir_, &raw);
  if (!s.ok()) {
    // Reads go on from a read-only opening (a full disk cannot take the
    // new log and manifest); writes wait for the next try.
    raw = nullptr;
    const bool ro = rocksdb::DB::OpenForReadOnly(o, dir_, &raw).ok();
    db_.reset(ro ? raw : nullptr);
    read_only_ = ro;
    NFSEDGE_LOG(kWarn) << "disk tier: " << dir_ << ": cannot open the store again ("
                       << s.ToString() << "); "
                       << (ro ? "reads go on, read-only," : "reads miss") << " until it opens";
    return false;
  }
  db_.reset(raw);
  read_only_ = false;
  broken_ = false;
  generation_++;
  reopened_.fetch_add(1, std::memory_order_relaxed);
  NFSEDGE_LOG(kInfo) << "disk tier: " << dir_ << ": opened again after a failed write";
  return true;
}

bool DiskTier::Store::Apply(const rocksdb::WriteOptions& wo, rocksdb::WriteBatch* batch) {
  rocksdb::Status s;
  uint64_t generation = 0;  // of the store the write failed on
  for (;;) {
    {
      ReaderLock l(&mu_);
      if (!broken_) {
        if (!db_) return false;
        s = db_->Write(wo, batch);
        if (s.ok()) return true;
        generation = generation_;
        break;
      }
    }
    if (!Reopen()) return false;
  }
  WriterLock l(&mu_);
  // Opened again by another thread since: that store is not the one that
  // failed (this write is lost, as any failed one).
  if (generation_ != generation) return false;
  if (!broken_) {
    // A full or failing disk: reads go on from memory and the upstream.
    NFSEDGE_LOG(kWarn) << "disk tier: " << dir_ << ": a write failed (" << s.ToString()
                       << "); the store is opened again for the next";
  }
  broken_ = true;
  return false;
}

bool DiskTier::Store::Write(const std::string& key, const Block& b, uint64_t seq) {
  const std::string value = EncodeValue(key, b);
  rocksdb::WriteBatch batch;
  batch.Put(key, value);
  batch.Put(IndexKey(key), EncodeRecord(seq, value.size(), b.version));
  return Apply(write_, &batch);
}

bool DiskTier::Store::Delete(const std::string& key) {
  rocksdb::WriteBatch batch;
  batch.Delete(key);
  batch.Delete(IndexKey(key));
  if (Apply(delete_, &batch)) return true;
  Untrusted();
  return false;
}

bool DiskTier::Store::DeleteFile(std::string_view handle) {
  std::string begin;
  AppendPrefixed(&begin, handle);  // a length's first byte is never 0xff
  const std::string end = Successor(begin);
  rocksdb::WriteBatch batch;
  batch.DeleteRange(begin, end);
  batch.DeleteRange(IndexKey(begin), IndexKey(end));
  if (Apply(drop_, &batch)) return true;
  Untrusted();
  return false;
}

// ---- DiskTier: the index, on the loop thread ----

StatusOr<std::unique_ptr<DiskTier>> DiskTier::Open(const DiskTierOptions& options,
                                                   PostFunction post) {
  const uint32_t bs = options.block_size;
  if (options.dir.empty()) return InvalidArgument("disk tier: no directory");
  if (bs == 0 || (bs & (bs - 1)) != 0) {
    return InvalidArgument("disk tier: block size " + std::to_string(bs) +
                           " is not a power of two");
  }
  if (options.threads < 1) return InvalidArgument("disk tier: threads must be at least 1");
  if (!post) return InvalidArgument("disk tier: no post function");

  bool rebuilt = false;
  std::vector<Store::Record> records;
  StatusOr<std::unique_ptr<Store>> store = Store::Open(options, &rebuilt, &records);
  if (!store.ok()) return store.status();
  std::unique_ptr<DiskTier> tier(new DiskTier(options, std::move(post), std::move(*store)));
  tier->stats_.rebuilt = rebuilt ? 1 : 0;
  // Oldest stamp first: each insertion becomes the most recently used.
  std::sort(records.begin(), records.end(),
            [](const Store::Record& a, const Store::Record& b) { return a.seq < b.seq; });
  for (const Store::Record& r : records) {
    tier->Index(r.key, Entry{r.version, r.seq}, Charge(r.key.size(), r.value_size));
    tier->next_seq_ = std::max(tier->next_seq_, r.seq + 1);
  }
  tier->EvictToLimit();  // the limit may be lower than last time
  tier->UpdateGauges();
  return tier;
}

DiskTier::DiskTier(const DiskTierOptions& options, PostFunction post, std::unique_ptr<Store> store)
    : options_(options),
      post_(std::move(post)),
      store_(std::move(store)),
      pool_(std::make_unique<ShardPool>(options.threads)),
      max_bytes_(options.max_bytes),
      self_(std::make_shared<DiskTier*>(this)) {}

DiskTier::~DiskTier() {
  self_.reset();  // what the pool posts from now on finds no tier
  pool_.reset();
  store_.reset();
}

void DiskTier::Submit(std::string_view handle, std::function<void()> work) {
  pool_->Submit(std::hash<std::string_view>{}(handle), std::move(work));
}

DiskTierStats DiskTier::stats() const {
  DiskTierStats s = stats_;
  s.reopened = store_->reopened();
  return s;
}

void DiskTier::UpdateGauges() {
  stats_.bytes = index_.charge();
  stats_.entries = index_.size();
}

void DiskTier::Index(std::string_view key, const Entry& e, uint64_t charge) {
  std::string_view handle;
  uint64_t index = 0;
  if (!ParseBlockKey(key, &handle, &index)) return;
  index_.Put(key, e, charge);
  auto f = files_.find(handle);
  if (f == files_.end())
    f = files_.emplace(std::string(handle), std::unordered_set<uint64_t>{}).first;
  f->second.insert(index);
}

void DiskTier::Unindex(const std::string& key) {
  std::string_view handle;
  uint64_t index = 0;
  if (!ParseBlockKey(key, &handle, &index)) return;
  auto f = files_.find(handle);
  if (f != files_.end()) {
    f->second.erase(index);
    if (f->second.empty()) files_.erase(f);
  }
  index_.Erase(key);
}

void DiskTier::EraseAndDelete(const std::string& key) {
  std::string_view handle;
  uint64_t index = 0;
  if (!ParseBlockKey(key, &handle, &index)) return;
  Submit(handle, [this, weak = std::weak_ptr<DiskTier*>(self_), key] {
    if (store_->Delete(key)) return;
    post_([weak] {
      if (auto self = weak.lock()) (*self)->stats_.errors++;
    });
  });
  Unindex(key);
}

void DiskTier::SetMaxBytes(uint64_t max_bytes) {
  max_bytes_ = max_bytes;
  EvictToLimit();
  UpdateGauges();
}

void DiskTier::EvictToLimit() {
  while (index_.charge() > max_bytes_) {
    const std::string key = index_.Oldest()->key;
    EraseAndDelete(key);
    stats_.evictions++;
  }
}

bool DiskTier::MayContain(std::string_view handle, uint64_t index) const {
  // Peek() changes nothing; LruMap offers it only on a mutable map.
  return const_cast<LruMap<Entry>&>(index_).Peek(BlockKey(handle, index)) != nullptr;
}

bool DiskTier::MayContain(std::string_view handle, uint64_t index, const ChangeId& version) const {
  const Entry* e = const_cast<LruMap<Entry>&>(index_).Peek(BlockKey(handle, index));
  return e != nullptr && e->version == version;
}

void DiskTier::Get(std::string_view handle, uint64_t index, const ChangeId& version,
                   std::function<void(std::optional<Block>)> done) {
  std::string key = BlockKey(handle, index);
  Entry* e = index_.Find(key);
  if (e == nullptr || e->version != version) {
    if (e == nullptr) {
      stats_.misses++;
    } else {
      stats_.stale++;
      EraseAndDelete(key);
      UpdateGauges();
    }
    post_([done = std::move(done)] { done(std::nullopt); });
    return;
  }
  const uint64_t put_id = e->put_id;
  const uint64_t touch_seq = next_seq_++;
  Submit(handle, [this, weak = std::weak_ptr<DiskTier*>(self_), key = std::move(key), version,
                  put_id, touch_seq, done = std::move(done)]() mutable {
    std::optional<Block> block;
    const ReadResult r = store_->Read(key, version, touch_seq, &block);
    post_([weak, key, put_id, r, block = std::move(block), done = std::move(done)]() mutable {
      if (auto self = weak.lock(); self && !(*self)->FinishGet(key, put_id, r)) block.reset();
      done(std::move(block));
    });
  });
}

bool DiskTier::FinishGet(const std::string& key, uint64_t put_id, ReadResult r) {
  Entry* e = index_.Peek(key);
  const bool same = e != nullptr && e->put_id == put_id;
  switch (r) {
    case ReadResult::kHit:
      // Dropped (drop-cache, a write), evicted or replaced while it was read:
      // what was read is no longer what the tier holds.
      if (!same) {
        stats_.misses++;
        return false;
      }
      stats_.hits++;
      return true;
    case ReadResult::kError:  // maybe passing: keep the entry
      stats_.errors++;
      stats_.misses++;
      return false;
    case ReadResult::kAbsent:  // lost (a crash, a failed write): forget it
      stats_.misses++;
      break;
    case ReadResult::kStale:  // deleted by the pool
      stats_.stale++;
      break;
    case ReadResult::kCorrupt:  // deleted by the pool
      stats_.corrupt++;
      stats_.misses++;
      break;
  }
  // Unless a later Put() replaced the entry meanwhile.
  if (same) Unindex(key);
  UpdateGauges();
  return false;
}

void DiskTier::Put(std::string_view handle, uint64_t index, Block block) {
  const size_t size = block.data.size();
  std::string key = BlockKey(handle, index);
  const uint64_t charge = Charge(key.size(), kValueOverhead + size);
  if (size > options_.block_size || (size < options_.block_size && !block.eof) ||
      charge > max_bytes_ || block.unconfirmed) {
    stats_.rejected++;
    return;
  }
  if (Entry* e = index_.Find(key); e != nullptr && e->version == block.version) {
    stats_.unchanged++;
    return;
  }
  const size_t queued = queued_puts_.load(std::memory_order_relaxed);
  if (queued >= options_.max_queued ||
      (queued > 0 &&
       queued_bytes_.load(std::memory_order_relaxed) + size > options_.max_queued_bytes)) {
    stats_.dropped_puts++;
    return;
  }
  const uint64_t put_id = next_seq_++;
  Index(key, Entry{block.version, put_id}, charge);
  stats_.puts++;
  queued_puts_.fetch_add(1, std::memory_order_relaxed);
  queued_bytes_.fetch_add(size, std::memory_order_relaxed);
  Submit(handle,
         [this, weak = std::weak_ptr<DiskTier*>(self_), key, put_id, size,
          block = std::move(block)] {
           queued_puts_.fetch_sub(1, std::memory_order_relaxed);
           queued_bytes_.fetch_sub(size, std::memory_order_relaxed);
           const bool ok = store_->Write(key, block, put_id);
           if (ok) return;
           post_([weak, key, put_id] {
             if (auto self = weak.lock()) (*self)->FinishWrite(key, put_id);
           });
         });
  EvictToLimit();
  UpdateGauges();
}

void DiskTier::FinishWrite(const std::string& key, uint64_t put_id) {
  stats_.errors++;
  // The store may still hold an older version of the block: delete it too.
  if (Entry* e = index_.Peek(key); e != nullptr && e->put_id == put_id) EraseAndDelete(key);
  UpdateGauges();
}

void DiskTier::DropFile(std::string_view handle) {
  auto f = files_.find(handle);
  if (f == files_.end()) return;
  for (uint64_t index : f->second) index_.Erase(BlockKey(handle, index));
  files_.erase(f);
  Submit(handle, [this, weak = std::weak_ptr<DiskTier*>(self_), h = std::string(handle)] {
    if (store_->DeleteFile(h)) return;
    post_([weak] {
      if (auto self = weak.lock()) (*self)->stats_.errors++;
    });
  });
  UpdateGauges();
}

void DiskTier::DropAll() {
  std::vector<std::string> handles;
  for (const auto& f : files_) handles.push_back(f.first);
  for (const std::string& h : handles) DropFile(h);
}

}  // namespace nfsedge
