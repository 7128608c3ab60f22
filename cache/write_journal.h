// WriteJournal: the edge journal of exports with `write_back = true`.
//
// The proxy's local disk becomes stable storage: a client write on such an
// export is answered once its data is in this journal (a RocksDB database
// whose write-ahead log is synced), and the write path sends it upstream
// afterwards. Each record is one client write (file handle, export path,
// credential, offset, bytes) under a sequence number; a record is removed
// once its bytes are stable upstream or superseded. After a crash, Open()
// hands back the records still there, in sequence order, for the write path
// to send upstream before anything else touches those files.
//
// The journal keeps a write verifier of its own, made when it is created and
// kept across restarts: the clients of write_back exports see no verifier
// change when the proxy restarts, because nothing they were told is stable
// was lost. When data answered from it is lost after all (the upstream
// refused it for good), ChangeVerifier() makes a new one, kept from then on.
//
// RocksDB work runs on one thread of the journal's own, in call order;
// Append() and Sync() callbacks are posted back to the owner's loop. The
// disk format is in docs/cache-format.md ("Write journal").
//
// Thread-safety: the public methods are called on the owner's loop thread.
#ifndef NFSEDGE_CACHE_WRITE_JOURNAL_H_
#define NFSEDGE_CACHE_WRITE_JOURNAL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rpc/rpc_message.h"
#include "rpc/status.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace nfsedge {

struct JournalRecord {
  uint64_t seq = 0;
  std::string fh;           // the file's handle (as the upstream made it)
  std::string export_path;  // the export the write came through
  OpaqueAuth cred;          // the writer's credential, as sent upstream
  uint64_t offset = 0;
  std::string data;
};

// What the write path needs of a journal (WriteJournal, or a fake in tests).
class JournalSink {
 public:
  virtual ~JournalSink() = default;
  // The verifier answered to clients of journaled exports.
  virtual const std::array<char, 8>& verifier() const = 0;
  // The sequence number for the next record.
  virtual uint64_t NextSeq() = 0;
  // Stores `r` durably; `done` runs on the loop once it is on disk, or with
  // the error that kept it off.
  virtual void Append(JournalRecord r, std::function<void(Status)> done) = 0;
  // Runs `done` once everything appended before is on disk (or failed).
  virtual void Sync(std::function<void(Status)> done) = 0;
  // Removes record `seq` (its bytes are stable upstream, or superseded).
  // `done` (may be empty) runs on the loop once the removal is on disk, or
  // with the error of the write that failed (the removal then goes again
  // with the next one: a Sync() after it tells when it is on disk).
  virtual void Remove(uint64_t seq, std::function<void(Status)> done) = 0;
  // Makes a new verifier (kept across restarts from then on): data a
  // client was answered from the journal is lost, and every client of
  // journaled exports must see a change at its next COMMIT and resend.
  virtual void ChangeVerifier() = 0;
};

struct WriteJournalStats {
  uint64_t appends = 0;        // records appended
  uint64_t append_bytes = 0;   // ... and their data bytes
  uint64_t removes = 0;        // records removed
  uint64_t syncs = 0;          // synced RocksDB writes (a group of appends each)
  uint64_t errors = 0;         // failed RocksDB writes
  uint64_t recovered = 0;      // records found at Open()
  uint64_t records = 0;        // now: the journal's depth
  uint64_t bytes = 0;          // now: data bytes in those records
};

class WriteJournal : public JournalSink {
 public:
  using PostFunction = std::function<void(std::function<void()>)>;

  // Opens or creates the journal in `dir` (synchronous: call it at
  // start-up) and reads back every record. A directory holding something
  // else than a journal of this format, or an unreadable record, is an
  // error: the journal holds data clients were told is stable, so it is
  // never rebuilt or ignored. REQUIRES: `post` outlives the journal.
  // `env`: the file system RocksDB uses (tests inject faults); null: the
  // default. REQUIRES: a non-null `env` outlives the journal.
  static StatusOr<std::unique_ptr<WriteJournal>> Open(const std::string& dir, PostFunction post,
                                                      rocksdb::Env* env = nullptr);
  // The file beside `dir` that records that a journal was made there
  // (`dir` + ".nfsedge-journal", written when Open() makes or first opens
  // it): Open() refuses an empty `dir` while it exists (an empty mount
  // point, the journal's disk not mounted, is not a place to make a new
  // journal). Removed by an administrator to begin a new journal.
  static std::string MarkerOf(const std::string& dir);
  // True iff `dir` holds something besides lost+found, or its marker
  // exists, or either cannot be told (`ec` then says why): a journal to
  // open (or to refuse to open) even where no export has write_back.
  static bool MayHoldJournal(const std::string& dir, std::error_code& ec);
  // Writes what is queued, stops the thread and closes the database.
  ~WriteJournal() override;
  WriteJournal(const WriteJournal&) = delete;
  WriteJournal& operator=(const WriteJournal&) = delete;

  // The records found at Open(), in sequence order (once).
  std::vector<JournalRecord> TakeRecovered();

  const std::array<char, 8>& verifier() const override { return verifier_; }
  uint64_t NextSeq() override { return next_seq_++; }
  void Append(JournalRecord r, std::function<void(Status)> done) override;
  void Sync(std::function<void(Status)> done) override;
  void Remove(uint64_t seq, std::function<void(Status)> done) override;
  void ChangeVerifier() override;

  const WriteJournalStats& stats() const { return stats_; }

 private:
  class Store;  // the database and the thread that writes it
  WriteJournal(std::unique_ptr<Store> store, PostFunction post);

  std::unique_ptr<Store> store_;
  const PostFunction post_;
  std::array<char, 8> verifier_{};
  uint64_t next_seq_ = 1;
  std::vector<JournalRecord> recovered_;
  // Data bytes per record in the journal, for the depth gauges.
  std::unordered_map<uint64_t, uint64_t> sizes_;
  WriteJournalStats stats_;
  std::shared_ptr<WriteJournal*> self_;  // callbacks posted after the end see null
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_WRITE_JOURNAL_H_
