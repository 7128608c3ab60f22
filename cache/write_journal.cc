#include "cache/write_journal.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "rpc/log.h"

namespace nfsedge {
namespace {

// ---- The format (docs/cache-format.md, "Write journal") ----

constexpr std::string_view kMagic = "nfsedge-write-journal 1";
const std::string kMetaKey = "m";
constexpr char kRecordPrefix = 'r';
constexpr uint8_t kRecordVersion = 1;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  PutU32(out, static_cast<uint32_t>(v >> 32));
  PutU32(out, static_cast<uint32_t>(v));
}
void PutBytes(std::string* out, std::string_view b) {
  PutU32(out, static_cast<uint32_t>(b.size()));
  out->append(b);
}

// Reads big-endian fields off the front of a byte string; fails sticky.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint64_t U(size_t n) {
    if (in_.size() < n) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(in_[i]);
    in_.remove_prefix(n);
    return v;
  }
  std::string Bytes() {
    const uint64_t n = U(4);
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return std::string();
    }
    std::string out(in_.substr(0, n));
    in_.remove_prefix(n);
    return out;
  }
  std::string Rest() {
    std::string out(in_);
    in_ = {};
    return out;
  }
  bool ok() const { return ok_; }

 private:
  std::string_view in_;
  bool ok_ = true;
};

std::string RecordKey(uint64_t seq) {
  std::string k(1, kRecordPrefix);
  PutU64(&k, seq);
  return k;
}

std::string EncodeRecord(const JournalRecord& r) {
  std::string v;
  v.reserve(r.data.size() + r.fh.size() + r.export_path.size() + r.cred.body.size() + 32);
  v.push_back(static_cast<char>(kRecordVersion));
  PutBytes(&v, r.fh);
  PutBytes(&v, r.export_path);
  PutU32(&v, r.cred.flavor);
  PutBytes(&v, r.cred.body);
  PutU64(&v, r.offset);
  v.append(r.data);
  return v;
}

bool DecodeRecord(uint64_t seq, std::string_view value, JournalRecord* r) {
  Reader in(value);
  if (in.U(1) != kRecordVersion) return false;
  r->seq = seq;
  r->fh = in.Bytes();
  r->export_path = in.Bytes();
  r->cred.flavor = static_cast<uint32_t>(in.U(4));
  r->cred.body = in.Bytes();
  r->offset = in.U(8);
  r->data = in.Rest();
  // Bytes past the largest offset would wrap around to the file's start.
  return in.ok() && !r->fh.empty() && r->offset <= UINT64_MAX - r->data.size();
}

// True iff `dir` holds nothing but a file system's lost+found (the root of
// a disk of its own, newly made). A directory that is not there is empty.
bool EmptyButLostFound(const std::string& dir, std::error_code& ec) {
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename() != "lost+found") return false;
  }
  if (ec == std::errc::no_such_file_or_directory) ec.clear();
  return !ec;
}

// fsync of the directory `dir` (a rename in it made durable).
bool SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// Writes the marker (synced, then renamed into place). False if it cannot.
bool WriteMarker(const std::string& marker, const std::array<char, 8>& verifier) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "nfsedge write journal, verifier ";
  for (char c : verifier) {
    text += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
    text += kHex[static_cast<unsigned char>(c) & 0xf];
  }
  text += "\n";
  const std::string tmp = marker + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), marker.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return SyncDirectory(std::filesystem::path(marker).parent_path().string());
}

std::array<char, 8> NewVerifier() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                     static_cast<uint64_t>(
                         std::chrono::system_clock::now().time_since_epoch().count());
  std::array<char, 8> out{};
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  out[7] |= 1;  // never all zero
  return out;
}

}  // namespace

// The database, and one thread that applies queued work in order: appends
// and removals queued together go in one synced WriteBatch (group commit).
class WriteJournal::Store {
 public:
  struct Op {
    std::string key;
    std::string value;  // empty with remove = true
    bool remove = false;
    std::function<void(Status)> done;  // may be empty
  };

  Store(rocksdb::Options options, std::string dir, std::unique_ptr<rocksdb::DB> db)
      : options_(std::move(options)), dir_(std::move(dir)), db_(std::move(db)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Store() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  void Queue(Op op) {
    {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(std::move(op));
    }
    cv_.notify_one();
  }

  // Set before the first Queue(); called on the writer thread with the
  // result of each batch and its callbacks.
  std::function<void(Status, std::vector<std::function<void(Status)>>)> on_batch;

 private:
  void Run() {
    for (;;) {
      std::deque<Op> ops;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        ops.swap(queue_);
      }
      rocksdb::WriteBatch batch;
      std::vector<std::function<void(Status)>> done;
      for (Op& op : ops) {
        if (op.remove) {
          batch.Delete(op.key);
        } else if (!op.key.empty()) {
          batch.Put(op.key, op.value);
        }
        if (op.done) done.push_back(std::move(op.done));
      }
      rocksdb::WriteOptions w;
      w.sync = true;
      // A failed batch dropped at stop leaves records on disk that later
      // removals must not overtake (a newer record of a file gone, an older
      // one left to be replayed over it): nothing more is written.
      rocksdb::Status s = dropped_ ? rocksdb::Status::Aborted("stopped after a failed write")
                                   : Reopen();
      if (s.ok()) s = batch.Count() > 0 ? db_->Write(w, &batch) : db_->FlushWAL(/*sync=*/true);
      Status st = s.ok() ? Status::Ok()
                         : Status(StatusCode::kIoError, "write journal: " + s.ToString());
      on_batch(std::move(st), std::move(done));
      if (!s.ok()) Recover(ops);
    }
  }

  // Opens the database again if a failed write closed it.
  rocksdb::Status Reopen() {
    if (db_) return rocksdb::Status::OK();
    // Never made anew: a journal directory lost with the disk's error must
    // not become an empty journal that takes writes under the old verifier.
    rocksdb::Options o = options_;
    o.create_if_missing = false;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir_, &raw);
    if (!s.ok()) {
      return rocksdb::Status::IOError("closed after a disk error and cannot be opened again",
                                      s.ToString());
    }
    db_.reset(raw);
    return s;
  }

  // After a failed write to its log RocksDB refuses every later one, and
  // Resume() does not clear such an error: the database is closed, and
  // opened again by the next batch (what was written before the error is
  // read back from the log). Its removals, lost with the failed batch,
  // would leave their records on disk, to be replayed at the next start
  // over newer data: they go again, first in the next batch, after a pause
  // (a disk that keeps failing is not retried in a loop). Not once
  // stopping: the records then stay, as after a crash. If the disk still
  // fails, the next batch fails too, and this comes again. (Nor is any
  // later batch written then: dropped_.) A record whose
  // append failed keeps its place (sizes_) and is removed as any other, in
  // case part of it reached the disk.
  void Recover(std::deque<Op>& ops) {
    std::deque<Op> again;
    for (Op& op : ops) {
      // The verifier's new value too: lost data must not come back to the
      // old one at the next start.
      if (op.remove || op.key == kMetaKey) {
        again.push_back(Op{std::move(op.key), std::move(op.value), op.remove, {}});
      }
    }
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, kRetryPause, [this] { return stopping_; });
      if (stopping_) {
        dropped_ = true;
        return;
      }
    }
    db_.reset();
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = again.rbegin(); it != again.rend(); ++it) queue_.push_front(std::move(*it));
  }

  static constexpr auto kRetryPause = std::chrono::milliseconds(100);

  const rocksdb::Options options_;
  const std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;  // null after a failed write, until reopened
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stopping_ = false;
  bool dropped_ = false;  // writer thread only
  std::thread thread_;
};

// On another file system than a journal on a disk of its own (mounted at
// `dir`), so that an empty mount point is not taken for a place to make a
// new journal. It names the verifier the journal had when it was written.
std::string WriteJournal::MarkerOf(const std::string& dir) {
  std::string d = std::filesystem::path(dir).lexically_normal().string();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + ".nfsedge-journal";
}

bool WriteJournal::MayHoldJournal(const std::string& dir, std::error_code& ec) {
  if (std::filesystem::exists(MarkerOf(dir), ec)) return true;
  if (ec) return true;  // cannot tell: the caller says why (ec)
  const bool empty = EmptyButLostFound(dir, ec);
  return ec || !empty;
}

StatusOr<std::unique_ptr<WriteJournal>> WriteJournal::Open(const std::string& dir,
                                                           PostFunction post, rocksdb::Env* env) {
  std::error_code ec;
  const std::string marker = MarkerOf(dir);
  const bool had_journal = std::filesystem::exists(marker, ec);
  if (ec) return Status(StatusCode::kIoError, "write journal " + marker + ": " + ec.message());
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kIoError, "write journal " + dir + ": " + ec.message());
  const bool empty_dir = EmptyButLostFound(dir, ec);
  if (ec) return Status(StatusCode::kIoError, "write journal " + dir + ": " + ec.message());
  if (empty_dir && had_journal) {
    return Status(StatusCode::kUnavailable,
                  "write journal " + dir + " is empty, but " + marker +
                      " says a journal was made there, which may hold acknowledged writes: if "
                      "the disk that holds it is not mounted, mount it and start again; to "
                      "begin a new, empty journal (what the old one held is lost), remove " +
                      marker);
  }
  rocksdb::Options o;
  o.create_if_missing = empty_dir;
  o.paranoid_checks = true;
  // A damaged record in the middle of the write-ahead log stops the open;
  // RocksDB's default (point-in-time recovery) would end the replay there
  // and open without every acknowledged record after it. A torn last record
  // is accepted: every append is synced before it is acknowledged, so it
  // was never answered.
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  if (env != nullptr) o.env = env;
  o.max_background_jobs = 1;
  o.keep_log_file_num = 2;
  o.compression = rocksdb::kNoCompression;
  // Records live until their bytes are stable upstream: the write buffers
  // (memory) stay small, flushed to disk beyond 2 x 8 MiB.
  o.write_buffer_size = 8 << 20;
  o.max_write_buffer_number = 2;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir, &raw);
  if (!s.ok()) {
    return Status(StatusCode::kIoError,
                  "write journal " + dir + " cannot be opened (" + s.ToString() +
                      "); it may hold acknowledged writes: move it aside only after checking "
                      "(and " + marker + " with it, to begin a new journal)");
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string meta;
  std::array<char, 8> verifier{};
  s = db->Get(rocksdb::ReadOptions(), kMetaKey, &meta);
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) {
      return Status(StatusCode::kInvalidArgument,
                    "write journal " + dir + " holds a database that is not nfsedge's journal");
    }
    verifier = NewVerifier();
    meta = std::string(kMagic) + std::string(verifier.data(), verifier.size());
    rocksdb::WriteOptions w;
    w.sync = true;
    s = db->Put(w, kMetaKey, meta);
    if (!s.ok()) return Status(StatusCode::kIoError, "write journal " + dir + ": " + s.ToString());
  } else if (!s.ok()) {
    return Status(StatusCode::kIoError, "write journal " + dir + ": " + s.ToString());
  } else if (meta.size() != kMagic.size() + 8 || meta.compare(0, kMagic.size(), kMagic) != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "write journal " + dir + " is of another format (not \"" +
                      std::string(kMagic) + "\")");
  } else {
    std::copy(meta.end() - 8, meta.end(), verifier.begin());
  }
  if (!had_journal && !WriteMarker(marker, verifier)) {
    NFSEDGE_LOG(kWarn) << "write journal " << dir << ": cannot write " << marker
                       << ": were this directory found empty at a later start (its disk not "
                          "mounted), a new journal would be made there";
  }

  std::vector<JournalRecord> records;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(std::string(1, kRecordPrefix)); it->Valid() && it->key()[0] == kRecordPrefix;
       it->Next()) {
    const rocksdb::Slice k = it->key();
    Reader key(std::string_view(k.data() + 1, k.size() - 1));
    const uint64_t seq = key.U(8);
    JournalRecord r;
    if (!key.ok() || k.size() != 9 ||
        !DecodeRecord(seq, std::string_view(it->value().data(), it->value().size()), &r)) {
      return Status(StatusCode::kInvalidArgument,
                    "write journal " + dir + ": record " + std::to_string(seq) +
                        " is unreadable; the journal is left as it is");
    }
    records.push_back(std::move(r));
  }
  if (!it->status().ok()) {
    return Status(StatusCode::kIoError, "write journal " + dir + ": " + it->status().ToString());
  }
  it.reset();

  std::unique_ptr<WriteJournal> j(
      new WriteJournal(std::make_unique<Store>(o, dir, std::move(db)), std::move(post)));
  j->verifier_ = verifier;
  for (const JournalRecord& r : records) {
    j->next_seq_ = std::max(j->next_seq_, r.seq + 1);
    j->sizes_[r.seq] = r.data.size();
    j->stats_.bytes += r.data.size();
  }
  j->stats_.recovered = records.size();
  j->stats_.records = records.size();
  j->recovered_ = std::move(records);
  return j;
}

WriteJournal::WriteJournal(std::unique_ptr<Store> store, PostFunction post)
    : store_(std::move(store)), post_(std::move(post)), self_(std::make_shared<WriteJournal*>(this)) {
  std::weak_ptr<WriteJournal*> weak = self_;
  store_->on_batch = [post = post_, weak](Status s, std::vector<std::function<void(Status)>> done) {
    post([weak, s, done = std::move(done)] {
      if (auto self = weak.lock()) {
        (*self)->stats_.syncs++;
        if (!s.ok()) {
          (*self)->stats_.errors++;
          NFSEDGE_LOG(kError) << s.ToString();
        }
      }
      for (const auto& d : done) d(s);
    });
  };
}

WriteJournal::~WriteJournal() {
  self_.reset();
  store_.reset();  // writes what is queued, joins the thread
}

std::vector<JournalRecord> WriteJournal::TakeRecovered() { return std::move(recovered_); }

void WriteJournal::Append(JournalRecord r, std::function<void(Status)> done) {
  stats_.appends++;
  stats_.append_bytes += r.data.size();
  stats_.records++;
  stats_.bytes += r.data.size();
  sizes_[r.seq] = r.data.size();
  store_->Queue(Store::Op{RecordKey(r.seq), EncodeRecord(r), false, std::move(done)});
}

void WriteJournal::Sync(std::function<void(Status)> done) {
  store_->Queue(Store::Op{std::string(), std::string(), false, std::move(done)});
}

void WriteJournal::ChangeVerifier() {
  verifier_ = NewVerifier();
  // Written with the next batch, after what is queued.
  store_->Queue(Store::Op{kMetaKey, std::string(kMagic) + std::string(verifier_.data(), 8), false,
                          {}});
}

void WriteJournal::Remove(uint64_t seq, std::function<void(Status)> done) {
  auto it = sizes_.find(seq);
  if (it == sizes_.end()) {
    if (done) Sync(std::move(done));
    return;
  }
  stats_.removes++;
  stats_.records--;
  stats_.bytes -= it->second;
  sizes_.erase(it);
  store_->Queue(Store::Op{RecordKey(seq), std::string(), true, std::move(done)});
}

}  // namespace nfsedge
