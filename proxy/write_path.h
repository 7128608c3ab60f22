// WritePath: client WRITEs and COMMITs: gathering of stable writes and
// write-behind of unstable ones, on one per-file buffer.
//
// Every write the proxy takes is kept as "pieces" of the file's buffer
// (disjoint byte ranges, newest data wins) until the upstream has made it
// stable. A piece is dirty (not sent), sending (in an upstream WRITE) or
// written (the upstream answered UNSTABLE with its verifier); it is dropped
// once an upstream WRITE answered FILE_SYNC or an upstream COMMIT returned
// the verifier its WRITE had (DESIGN rule 1). A COMMIT whose verifier
// differs makes its pieces dirty again: they are sent again.
//
// Stable (FILE_SYNC, DATA_SYNC) client writes wait in the file's FIFO and
// are answered in arrival order (DESIGN rule 3), each once no piece of its
// range is left, with the attributes the upstream returned after the commit
// and `committed` = FILE_SYNC. Gathering (Juszczak): writes arriving while
// a batch is upstream wait for it and form the next batch; when a batch is
// answered and writes wait, a procrastination window (the export's
// gather_window_ms) lets the writers just answered join the next batch,
// and closes as soon as they have. A file starts "lone": its stable writes
// go at once until one finds company (another write waiting); from then on
// a batch's first write opens a window that closes when it expires or when
// as many writes as the last batch had have arrived, until `lone_after`
// windows in a row gather nothing. So a lone writer does not wait. A
// writer (credential) keeps its history across files: a new file of a
// writer whose stable writes last found company does not start lone; its
// first write opens a window, so a pipelining writer's first writes go as
// one batch; a new file of a lone writer starts lone. Writes
// that find company while the file's upstream write is a lone one do not
// wait for its answer (a round trip): they gather for one window (or until
// that answer) and go as the next batch. These two windows do not know how
// many writes come: they also end once writes stop coming, a quarter of
// the window after the last one. While stable writes wait, the
// background flush leaves the file alone (the batch carries its dirty
// data). A batch whose dirty data is one contiguous range (nothing else of
// the file in flight but FILE_SYNC writes)
// goes as one FILE_SYNC WRITE (one server commit); any other batch as
// UNSTABLE WRITEs and then one COMMIT.
//
// Unstable client writes (write-behind, on an export with write_behind and
// when the ACCESS cache proves the credential may write) are answered at
// once with the proxy's own verifier, which is new at every start (DESIGN
// rule 2). Dirty data goes upstream in the background in WRITEs of the
// server's preferred size (FSINFO wtpref) as soon as a whole one is
// buffered, the rest after flush_delay; written data is committed upstream
// when a file holds half its limit of it, when the flush delay ends, or
// when a client COMMIT asks. A client COMMIT is answered once no piece of
// its range is left. Buffered bytes are bounded per file and in total; a
// write beyond a bound waits (FIFO) until commits free room.
//
// Edge journal (an export with write_back, and a journal given in the
// options): a client write that may be buffered is also appended to the
// journal, and answered once the journal has it on disk (FILE_SYNC for a
// stable write, UNSTABLE otherwise, without attributes: the upstream does
// not have the data yet), with the journal's verifier, which survives
// restarts; a client COMMIT is answered once everything appended before it
// is on disk. The data then goes upstream as write-behind data does, and
// each journal record is removed once no piece of the buffer refers to it
// (its bytes are stable upstream, or were overwritten by bytes that are
// durable themselves: in a record on disk, or stable upstream). If the
// journal fails, the write is answered as a stable write is, once
// upstream, and the records it overwrote stay until then.
// Recover() puts the records a restart found back into the buffer.
//
// Read your writes (DESIGN rule 4): Hold() holds a READ, GETATTR or
// SETATTR until the upstream has every byte of the file the proxy holds
// (SETATTR: until all of it is stable), so the call that follows sees them.
//
// An upstream error on a write or commit made for nobody waiting (NOSPC,
// DQUOT, IO, STALE, ...) is kept and answered to the next client WRITE or
// COMMIT of that file by each writer (credential) whose bytes were refused;
// with clients waiting, they get it. (A refusal of one user's bytes, over
// quota, is not another's.) Lost bytes answered from the buffer also change
// the file's write verifier, so that every client that wrote them resends.
// A file written through nested exports of different settings: each
// reply carries its own export's verifier, and each piece's loss is
// handled by how it was answered.
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_WRITE_PATH_H_
#define NFSEDGE_PROXY_WRITE_PATH_H_

#include <rpc/xdr/nfs3.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/change_id.h"
#include "cache/clock.h"
#include "cache/lru_map.h"
#include "cache/write_journal.h"
#include "proxy/exports.h"
#include "proxy/nfs_procs.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

struct WritePathOptions {
  // Buffered bytes (all files) at most; a write beyond waits.
  uint64_t max_bytes = 256ull << 20;
  // Buffered bytes of one file at most.
  uint64_t max_file_bytes = 64ull << 20;
  // Upstream WRITE size; 0 = the server's FSINFO wtpref (until an FSINFO
  // reply is seen: 1 MiB). Clamped to max_transfer.
  uint32_t write_size = 0;
  // Largest payload the proxy carries in one record.
  uint32_t max_transfer = 1 << 20;
  // Dirty data less than a whole upstream WRITE is sent after this long.
  Duration flush_delay = std::chrono::milliseconds(50);
  // Background (write-behind) upstream WRITEs in flight at most.
  uint32_t max_background = 16;
  // Windows in a row that gathered nothing before a file stops waiting; a
  // new file starts that way. 0 = files always wait.
  int lone_after = 2;
  // The write verifier answered to clients; all zero = a random one.
  std::array<char, 8> verifier{};
  // The edge journal for exports with write_back; null = none (such exports
  // then behave as write_behind ones).
  JournalSink* journal = nullptr;
  // Data acknowledged from the journal that the upstream keeps refusing is
  // sent again until a try starts this long after the first refusal in a
  // row, then given up on (DropAndFail). Zero = for as long as it lasts.
  Duration journal_give_up = std::chrono::seconds(25);
};

struct WritePathStats {
  uint64_t stable_writes = 0;     // FILE_SYNC / DATA_SYNC client writes answered
  uint64_t buffered_writes = 0;   // UNSTABLE client writes answered from the buffer
  uint64_t forwarded = 0;         // client calls sent upstream as is
  uint64_t client_commits = 0;    // client COMMITs answered by the proxy
  uint64_t upstream_writes = 0;   // upstream WRITEs sent
  uint64_t upstream_bytes = 0;    // ... and their bytes
  uint64_t max_write = 0;         // largest upstream WRITE (bytes)
  uint64_t sync_writes = 0;       // upstream FILE_SYNC WRITEs
  uint64_t upstream_commits = 0;  // upstream COMMITs
  uint64_t gathered = 0;          // stable writes answered after a syncing call
  uint64_t batches = 0;           // syncing calls made for stable writes
  uint64_t windows = 0;           // procrastination windows opened
  uint64_t lone = 0;              // stable writes sent at once (lone file)
  uint64_t procrastination_us = 0;  // total time in windows
  uint64_t resent = 0;            // bytes sent again after a verifier change
  uint64_t errors = 0;            // upstream errors kept for the file's clients
  uint64_t verifier_changes = 0;  // new write verifiers: acknowledged data was lost
  uint64_t blocked = 0;           // writes that waited for buffer room
  uint64_t parked = 0;            // writes that waited for bytes to leave (Write, SentAndWaitedFor)
  uint64_t barriers = 0;          // READ/GETATTR/SETATTR held for a flush
  uint64_t journaled = 0;         // client writes answered once in the journal
  uint64_t journal_failed = 0;    // ... that the journal could not take
  uint64_t recovered = 0;         // journal records put back into the buffer at start
  uint64_t buffered_bytes = 0;    // now
  uint64_t max_buffered_bytes = 0;
};

class WritePath {
 public:
  // WRITE3res / COMMIT3res XDR for the client.
  using ReplyFn = std::function<void(std::string results)>;
  // Sends the client's call upstream as is.
  using ForwardFn = std::function<void()>;
  // Checks a write that waited (for room, for other callers' bytes) against
  // its export's rules as they are when it goes on (a reload meanwhile);
  // maps its credential again into *cred. Returns false iff it refused the
  // write, having answered its client itself.
  using ReadmitFn = std::function<bool(OpaqueAuth* cred)>;
  // Runs `fn` once, `delay` from now, on the loop.
  using ScheduleFn = std::function<void(Duration delay, std::function<void()> fn)>;
  // Learns from a successful upstream reply (caches).
  using LearnFn = std::function<void(const NfsProc& p, const void* args, RpcReply* reply,
                                     const Export& exp, const OpaqueAuth& cred)>;

  // Calls for clients waiting go through `upstream`, write-behind through
  // `background`.
  WritePath(const Clock& clock, RpcCaller& upstream, RpcCaller& background, ScheduleFn schedule,
            LearnFn learn, const WritePathOptions& options);
  ~WritePath();
  WritePath(const WritePath&) = delete;
  WritePath& operator=(const WritePath&) = delete;

  // An admitted client WRITE `a` for `cred` on `exp`. `may_buffer`: the
  // ACCESS cache proves `cred` may write the file (an UNSTABLE write is
  // buffered only then; else it is treated as stable). Calls exactly one of
  // `reply`, `forward` and (refusing) `readmit`, now or later; `readmit`
  // (may be empty) only if the write waited.
  void Write(const WRITE3args& a, const Export& exp, const OpaqueAuth& cred, bool may_buffer,
             ReplyFn reply, ForwardFn forward, ReadmitFn readmit = nullptr);
  // An admitted client COMMIT. Calls exactly one of `reply` and `forward`.
  void Commit(const COMMIT3args& a, const Export& exp, const OpaqueAuth& cred, ReplyFn reply,
              ForwardFn forward);
  // Returns false iff the upstream has every byte of `fh` the proxy holds
  // (with `stable`: the proxy holds none) of the writes that came up to
  // now, or up to stamp `before` if earlier; else holds the caller's call,
  // flushes, and runs `then` once that is so. A call held once is served
  // again with `before` = the stamp it was held at (last_stamp()), so that
  // writes after it do not hold it again.
  bool Hold(std::string_view fh, bool stable, std::function<void()> then,
            uint64_t before = UINT64_MAX);
  // Where the latest attributes the upstream gave for a file are known
  // (the metadata cache): a reply the write path makes carries them when
  // newer than those of its own last upstream call for the file, and none
  // when the source knows of a newer ctime it holds no attributes for
  // (a floor, or attributes unordered against another reply).
  struct AttributeSource {
    std::function<std::optional<fattr3>(std::string_view fh)> latest;
    std::function<std::optional<NfsTime>(std::string_view fh)> newest_ctime;
  };
  void SetAttributeSource(AttributeSource source) { attributes_ = std::move(source); }
  // `fh` changed upstream in a way no reply the proxy learned showed: the
  // attributes of the file's last upstream WRITE or COMMIT are out of date,
  // and those of its replies to calls sent before now are learned only
  // when ordered by ctime after attributes a later call brought.
  // (Told while this path's own reply of the file is being learned, it is
  // that reply the cache did not learn: LearnAttr decided on it already.)
  void ForgetAttributes(std::string_view fh);
  // The attribute source let go of attributes of `fh` of ctime `ctime`
  // (evicted, or never kept): the file's own attributes, and those its
  // later replies bring, are not shown to clients if older.
  void ForgetAttributesBefore(std::string_view fh, NfsTime ctime);
  // Returns true iff the proxy holds bytes of `fh` that the upstream does
  // not have yet.
  bool Unsent(std::string_view fh) const;
  // The stamp of the latest write taken, of any file.
  uint64_t last_stamp() const { return stamps_; }
  // Returns false iff every file Recover() put back is stable upstream and
  // its records removed from the journal's disk; else holds the caller's
  // call as Hold(stable) does for the first file that is not, and runs
  // `then` once it is (`then` asks again). For a call that may change a
  // file the proxy cannot name (a truncating CREATE of a name the cache
  // does not know, after a restart): it must not go before the replay.
  bool HoldRecovered(const std::function<void()>& then);
  // Learns the server's preferred and largest write sizes. Until it has
  // (a client's FSINFO, or the proxy's own, asked when it first takes or
  // sends a write), upstream WRITEs are at most kUnlearnedWriteMax: after a
  // restart no client asks again, and the server's limit is not known.
  void LearnFsinfo(std::string_view results);
  static constexpr uint32_t kUnlearnedWriteMax = 32 << 10;
  // How long after an FSINFO that taught nothing the proxy asks again.
  static constexpr Duration kFsinfoRetry = std::chrono::seconds(10);
  // Failed journal writes a SETATTR waits through for the removals it
  // needs on disk (AfterRemovals), 100 ms apart, before it goes without.
  static constexpr uint32_t kMaxRemovalFailures = 20;
  // New buffer bounds, flush delay, background WRITEs and journal give-up
  // time (a reload; the rest of `o` is not used). Writes waiting for room
  // that the new bounds admit go in at once.
  void SetLimits(const WritePathOptions& o);
  // Puts journal record `r`, found at start, back into the buffer of its
  // file on `exp`, to be sent upstream like write-behind data; reads and
  // attributes of the file wait for it (Hold).
  void Recover(const JournalRecord& r, const Export& exp);
  // Sends every file's buffered data upstream now and commits it (after
  // Recover(), and for `nfsedge flush`).
  void FlushAll();

  const std::array<char, 8>& verifier() const { return verifier_; }
  uint32_t write_size() const { return write_size_; }
  const WritePathStats& stats() const { return stats_; }
  // Files with bytes in the buffer now.
  size_t buffered_files() const;
  // Files the write path keeps state for (buffered, waiting, or idle with
  // history or errors kept; bounded when idle).
  size_t tracked_files() const { return files_.size(); }

 private:
  struct Piece;
  struct Waiter;
  struct Barrier;
  struct Span;
  struct Flight;
  struct File;
  struct Blocked;
  // An upstream error kept for a writer's next WRITE or COMMIT of a file.
  struct KeptError {
    std::string writer;  // WriterKey
    nfsstat3 status;
    // It tells of bytes no verifier change covers (answered FILE_SYNC or
    // DATA_SYNC from the edge journal, then given up): the writer's only
    // notice, kept when the file is forgotten (orphaned_errors_).
    bool uncovered = false;
  };

  File& FileFor(const std::string& fh, const Export& exp);
  // Takes a write through `exp` into the buffer (room is there) and
  // answers or queues it. `journal`: append it to the journal and answer
  // once it is there.
  void Accept(File& f, const Export& exp, uint64_t offset, std::string_view data,
              const OpaqueAuth& cred, bool stable, bool journal, ReplyFn reply);
  // The journal's answer `s` to the append of record `jseq`, written when
  // the file's write stamp became `stamp` and its verifier was `verf`;
  // `reply`: to answer (null if the write waits for the upstream anyway);
  // `exp`: the export the write came through; `writer`: its caller
  // (WriterKey).
  void OnJournaled(const std::string& fh, const Export& exp, uint64_t jseq, uint64_t offset,
                   uint32_t count, bool stable, uint64_t stamp, const std::array<char, 8>& verf,
                   const Status& s, ReplyFn reply, const std::string& writer);
  // Replaces [off, off + data.size()) of the buffer with `data`, which
  // journal record `jseq` holds (0 = none). The records of the bytes
  // replaced are kept: by the new piece when `jseq` is 0, else in
  // overwritten_[jseq].
  // `acked`: the bytes are answered from the buffer (Piece::acked).
  // `synced`: answered FILE_SYNC or DATA_SYNC from the journal
  // (Piece::synced).
  // `behind`: answered from the buffer alone (write-behind's verifier), not
  // from the journal (Piece::behind).
  void Insert(File& f, uint64_t off, std::string_view data, const OpaqueAuth& cred,
              uint64_t jseq = 0, bool acked = false, bool synced = false, bool behind = false);
  // A file's journal records are removed in sequence order, each once
  // nothing refers to it and every older one of the file is removed: what a
  // restart replays, in order, then leaves every range as the latest
  // acknowledged write that is not yet stable upstream made it. A record is
  // referred to by the pieces holding its bytes, by the pieces not
  // journaled that replaced them, and (overwritten_) by the newer record
  // that replaced them until that one is on disk or referred to no more.
  // Adds a reference to record `jseq` of file `fh`.
  // `stamp`: the stamp of the record's write (when it is new).
  void RefRecord(const std::string& fh, uint64_t jseq, uint64_t stamp);
  // Lets go of one reference to each of `jseqs` (a record may come more
  // than once: one reference each time).
  void UnrefRecords(std::vector<uint64_t> jseqs);
  // Record `jseq` is on disk: lets go of the records it replaced.
  void ReleaseOverwritten(uint64_t jseq);
  // A SETATTR (or a truncating CREATE) changes what a replay of the
  // file's records would write over: it goes upstream only once the
  // removals of the records of bytes now stable there are on disk, lest a
  // restart replay them over it; removals of records of later writes are
  // not waited for (a writer that goes on would hold it for ever).
  // RemovalDone: the callback of a removal, queued, of a record of `fh`
  // whose write had stamp `stamp`. AfterRemovals: false if no removal of a
  // record of `fh` of a write up to stamp `upto` waits for the disk; else
  // keeps `then` (moved from) and runs it once they are on disk. A journal
  // that keeps failing holds it kMaxRemovalFailures syncs at most (then it
  // goes, logged: a restart before the disk is back may replay them).
  // `failures`: failed journal writes so far for this removal.
  std::function<void(Status)> RemovalDone(const std::string& fh, uint64_t stamp,
                                          uint32_t failures = 0);
  bool AfterRemovals(const std::string& fh, uint64_t upto, std::function<void()>& then);
  // A COMMIT of [off, end) of `fh` answered from the journal: the bytes
  // answered UNSTABLE from it by writes up to `stamp` are stable by their
  // writers' account now; lost, no verifier tells them (Piece::synced).
  void CommittedFromJournal(const std::string& fh, uint64_t off, uint64_t end, uint64_t stamp);
  // The stamps of the writes before one stamped `stamp`, for AfterRemovals;
  // every write's for stamp 0 (a COMMIT of a file made anew, whose writes
  // went before it was forgotten).
  uint64_t Before(uint64_t stamp) const { return stamp > 0 ? stamp - 1 : stamps_; }
  // Returns true iff `p` holds bytes acknowledged from the journal, or
  // bytes that replaced such bytes: an upstream error does not drop it at
  // once (DropAndFail).
  bool KeepsAcknowledged(const Piece& p) const;
  // The journal records `p` keeps: its own, and those of the writes its
  // bytes replaced, in turn (overwritten_).
  std::vector<uint64_t> RecordsKeptBy(const Piece& p) const;
  // Splits the piece holding `at` (not at its start) in two.
  void Split(File& f, uint64_t at);
  // `release`: drop the piece's references to journal records.
  void Erase(File& f, std::map<uint64_t, Piece>::iterator it, bool release = true);
  void Gather(File& f);
  // A new file of a writer whose writes found company starts gathering;
  // then the writer's history follows the file's (after Gather).
  void SeedFromWriter(File& f, const OpaqueAuth& cred);
  // Records the file's lone count as its writer's (after every stable
  // write and every window's end).
  void NoteWriter(const File& f);
  // A window's `expected` when how many writes come is not known: it also
  // ends once writes stop coming, a quarter of the window after the last.
  static constexpr size_t kOpenEnded = std::numeric_limits<size_t>::max();
  void OpenWindow(File& f, size_t expected);
  // (Re)arms the window's end: gather_window_ms after it opened, or sooner
  // for an open-ended one.
  void ArmWindowEnd(File& f);
  void EndWindow(File& f);
  void CloseWindow(const std::string& fh, uint64_t gen);
  // Moves the file on: answers who can be, sends what should go.
  void Pump(File& f);
  // Answers the waiters that can be, in order. Returns the stable writes
  // answered.
  size_t AnswerWaiters(File& f);
  void SendDirty(File& f, bool urgent, bool whole_only);
  bool SendRun(File& f, uint64_t off, uint64_t len, bool urgent, bool sync, bool lone);
  void SendCommit(File& f, bool urgent);
  void OnWritten(const std::string& fh, uint64_t id, bool urgent, StatusOr<RpcReply> r);
  // The reply to COMMIT `id`, sent with `cred` (of one of the writers).
  void OnCommitted(const std::string& fh, uint64_t id, const OpaqueAuth& cred,
                   StatusOr<RpcReply> r);
  // `flight`, a FILE_SYNC WRITE, was taken whole: the stable writes waiting
  // whose bytes it carried are stable (Waiter::stable).
  void MarkStable(File& f, const Flight& flight);
  // Drops the pieces `which` selects, which the upstream refused with
  // `status` (Failed). Those that hold bytes acknowledged from the journal,
  // or that replaced such bytes (KeepsAcknowledged), are kept instead,
  // unless the file is gone (STALE), and sent again after a delay that
  // doubles with each refusal in a row (at most 30 s), until a round
  // starts options_.journal_give_up after the first. Each piece by how its bytes were answered, not by the export
  // the file was last written through (nested exports may differ).
  // The clients waiting whose bytes were refused get `status` in their
  // turn: those over a piece dropped, and (`flight`: a refused WRITE) those
  // whose bytes it carried, unless kept; a refusal of one writer's bytes is
  // not another's (a COMMIT is told its own caller's). A writer none of
  // whose calls waiting was told: its next WRITE or COMMIT of the file is.
  void DropAndFail(File& f, nfsstat3 status, const std::function<bool(const Piece&)>& which,
                   const Flight* flight = nullptr);
  // The upstream refused the file's data of `writers` (WriterKey) with
  // `status`; `acknowledged`: some of the data dropped had been answered
  // from the buffer; `kept`: some was kept for another try; `told`: the
  // writers (WriterKey) whose waiting calls were given it (none is kept for
  // them).
  // `uncovered`: the writers some of whose bytes dropped were answered as
  // stable from the journal, which no verifier change tells of.
  void Failed(File& f, nfsstat3 status, const std::vector<std::string>& writers,
              bool acknowledged, bool kept, const std::vector<std::string>& told,
              const std::vector<std::string>& uncovered);
  // Takes the error kept for `cred`'s next WRITE or COMMIT of the file
  // (NFS3_OK: none).
  static nfsstat3 TakeError(File& f, const OpaqueAuth& cred);
  // The same for a file the write path keeps nothing else of (its
  // uncovered errors in orphaned_errors_).
  nfsstat3 TakeOrphanedError(const std::string& fh, const OpaqueAuth& cred);
  // Sends nothing of the file for `delay` (by default kRetryDelay); then
  // what is dirty goes as it would have.
  void RetryLater(File& f);
  void RetryLater(File& f, Duration delay);
  void ScheduleFlush(File& f);
  void AdmitBlocked();
  void ForgetIfIdle(const std::string& fh);
  // Gives learn_ the reply `r` of the file's own upstream call.
  void LearnOwn(const File& f, uint32_t proc, const void* args, RpcReply* r,
                const OpaqueAuth& cred);
  // `solo`: the reply's call was sent with nothing else of the file
  // upstream, so its attributes are the latest. `seq`: the call's number
  // among the file's (File::calls_sent when sent; 0 if not known). `r`:
  // the reply that brought `w` (when its call was sent).
  void LearnAttr(File& f, const wcc_data& w, bool solo, uint64_t seq, const RpcReply& r);
  // Replies to a client call through `exp`.
  std::string WriteReply(const File& f, const Export& exp, uint32_t count, bool stable) const;
  // The reply to a journaled write or COMMIT: the journal's verifier, no
  // attributes.
  std::string JournaledReply(const std::array<char, 8>& verf, uint32_t count, bool stable,
                             bool commit) const;
  std::string CommitReply(const File& f, const Export& exp) const;
  // The post-op attributes of a reply the write path makes for the file:
  // none unless the upstream's latest for it are known, and the upstream
  // has every byte of it the proxy answered (DESIGN rule 4).
  std::optional<fattr3> ReplyAttr(const File& f) const;
  // The write verifier answered through `exp`: the journal's (write_back),
  // the proxy's (write_behind) or the upstream's.
  std::array<char, 8> ReplyVerf(const File& f, const Export& exp) const;
  // Returns true iff any piece intersects [off, end).
  // Returns true iff [off, end) holds a piece with bytes of a write up to
  // `stamp` (Piece::seq); by default, of any write.
  static bool Holds(const File& f, uint64_t off, uint64_t end, uint64_t stamp = UINT64_MAX);
  // The states (bit 1 << Piece::State) of the pieces holding bytes of the
  // writes up to `stamp`; 0 when there is none.
  static uint32_t OlderStates(const File& f, uint64_t stamp);
  bool Busy(const File& f) const;
  // Returns true iff a call held with `stable` after the writes up to
  // `stamp` may go: none of their bytes is still to send (`stable`: none is
  // still in the buffer, stable upstream).
  static bool BarrierMet(const File& f, bool stable, uint64_t stamp);
  // Returns true iff [off, end) holds bytes of another caller than `cred`.
  static bool OthersHeld(const File& f, uint64_t off, uint64_t end, const OpaqueAuth& cred);
  // Returns true iff [off, end) holds bytes on their way upstream (sent, or
  // written and not committed) that a waiting client call needs there, and
  // that replaced such bytes already (Piece::extended): new bytes over them
  // would take their stamp, and a writer rewriting them faster than a
  // round trip would keep that call waiting for as long as it rewrites.
  // Such a write waits (parked) until they are stable.
  static bool SentAndWaitedFor(const File& f, uint64_t off, uint64_t end);
  // A WRITE or COMMIT that is forwarded as it is (write-behind turned off
  // by a reload, a WRITE of no bytes) still reports the error an earlier
  // flush of the file kept for its writer: returns true iff it answered
  // `reply` with it.
  bool KeptErrorAnswered(const std::string& fh, const OpaqueAuth& cred, const ReplyFn& reply,
                         bool commit);
  // Takes write `b` into the buffer, or makes it wait for room (blocked_,
  // before the file's writes that came after it: a parked write whose turn
  // came may be older than some waiting there).
  void Enter(File& f, std::unique_ptr<Blocked> b);
  // Returns false iff `b`, which waited, is refused by its export's rules
  // as they are now (Blocked::readmit answered it). A credential mapped
  // otherwise now is not the one the evidence that let it be buffered was
  // for: the write is then answered once stable upstream. Its export's
  // write rules are taken as they are now too (write_behind, write_back).
  bool Readmitted(Blocked& b);
  // Room for `n` more bytes in all, and in `f`.
  bool TotalRoom(uint64_t n) const;
  static bool FileRoom(const File& f, uint64_t n, uint64_t max_file_bytes);
  // Whether a write waits for room in all (not only in its own file): no
  // later write passes it, and every file flushes to make room.
  bool TotalShort() const;
  // Makes write `b` wait in `f`'s queue for other callers' bytes
  // (File::parked), sending those at once.
  void Park(File& f, std::unique_ptr<Blocked> b);
  // Takes the writes of `fh` waiting for other callers' bytes (File::parked)
  // whose turn has come.
  void AdmitParked(const std::string& fh);

  const Clock& clock_;
  RpcCaller& upstream_;
  RpcCaller& background_caller_;
  ScheduleFn schedule_;
  LearnFn learn_;
  // The file whose own reply learn_ is being given, or null.
  const File* learning_ = nullptr;
  AttributeSource attributes_;
  WritePathOptions options_;
  std::array<char, 8> verifier_;
  uint32_t write_size_;
  uint32_t max_write_;
  bool fsinfo_known_ = false;  // the server's write sizes were learned
  bool fsinfo_asked_ = false;  // the proxy's own FSINFO is on its way
  uint32_t MaxWrite() const {
    return fsinfo_known_ ? max_write_ : std::min(max_write_, kUnlearnedWriteMax);
  }
  uint32_t WriteSize() const {
    return fsinfo_known_ ? write_size_ : std::min(write_size_, kUnlearnedWriteMax);
  }
  // Whether no piece of `f` is kept after a refusal (Piece::refused): then
  // a WRITE or COMMIT taken ends the file's refusals in a row.
  static bool NoneRefused(const File& f);
  // Sends the proxy's own FSINFO upstream on `fh` as `cred`.
  void AskFsinfo(const std::string& fh, const OpaqueAuth& cred);
  uint64_t next_id_ = 1;
  uint32_t background_ = 0;  // background WRITEs in flight
  std::unordered_map<std::string, std::unique_ptr<File>> files_;
  // Writes waiting for room, in arrival order. One waiting only for room
  // in its own file (File::bytes at max_file_bytes) holds its file's later
  // writes, not other files' (AdmitBlocked); one waiting for room in all
  // holds every later write.
  std::deque<std::unique_ptr<Blocked>> blocked_;
  std::multiset<uint64_t> blocked_sizes_;  // their sizes (TotalShort)
  uint64_t arrivals_ = 0;                  // Blocked::arrival of the last write
  // Handles the upstream called stale under buffered writes (bounded).
  LruMap<bool> stale_;
  // Files whose data answered from the buffer was lost to an upstream
  // error -> how many times: their clients get a verifier of their own
  // (ReplyVerf), so that they resend. Bounded: a file evicted from it
  // would go back to the shared verifier, which then changes for all.
  mutable LruMap<uint64_t> lost_;  // Peek() is not const
  // Uncovered errors (KeptError::uncovered) of files forgotten while idle,
  // by handle: a writer of bytes answered FILE_SYNC from the journal and
  // given up is told at its next WRITE or COMMIT of the file however many
  // files the write path has seen since (bounded by the errors held, each
  // charged 1; one dropped is logged).
  LruMap<std::vector<KeptError>> orphaned_errors_;
  // Writers' gathering history: the lone count (File::lone) of the last
  // file each credential wrote stable writes to (bounded).
  LruMap<int> writers_;
  // Journal record -> references (0: dead, waiting for the file's older
  // ones) and its file.
  struct RecordRef {
    uint32_t count = 0;
    std::string fh;
    uint64_t stamp = 0;  // of its write
  };
  std::unordered_map<uint64_t, RecordRef> journal_refs_;
  // File -> its records in journal_refs_, in sequence order.
  std::unordered_map<std::string, std::set<uint64_t>> file_records_;
  // Journal record -> the records whose bytes its write replaced, one
  // reference each, kept until its append is on disk or, if the journal
  // refused it, until no piece holds its bytes any more (they are stable
  // upstream, or replaced in turn). So an acknowledged write stays in the
  // journal until what replaced it is durable somewhere, and its removal
  // reaches the disk with or after the record that replaced it.
  std::map<uint64_t, std::vector<uint64_t>> overwritten_;
  // The records among journal_refs_ of writes not answered from the
  // journal: without ACCESS evidence, or whose append the journal refused
  // (answered once stable upstream instead).
  std::unordered_set<uint64_t> unacknowledged_;
  // Files with record removals queued and not known to be on disk yet:
  // the stamps of their records' writes, and the calls waiting for them
  // with the last stamp each waits for (AfterRemovals).
  struct Removals {
    std::multiset<uint64_t> open;
    std::vector<std::pair<uint64_t, std::function<void()>>> then;
  };
  std::unordered_map<std::string, Removals> removing_;
  // The last write stamp given (File::seq, Piece::seq).
  uint64_t stamps_ = 0;
  // Files Recover() put back (HoldRecovered), and the last stamp of their
  // recovered writes.
  std::unordered_set<std::string> recovered_;
  uint64_t recovered_upto_ = 0;
  // Records whose append the journal has not answered yet -> NFS3_OK, or
  // the upstream's error if their bytes were dropped meanwhile (the write
  // is then answered with it). A write not answered from the journal waits
  // for its record's (Waiter::jseq).
  std::unordered_map<uint64_t, nfsstat3> appending_;

  WritePathStats stats_;
  // Journal callbacks may come after the path is gone.
  std::shared_ptr<WritePath*> self_ = std::make_shared<WritePath*>(this);
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_WRITE_PATH_H_
