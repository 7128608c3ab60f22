// WritePath's per-file state (private to proxy/write_path*.cc): the pieces
// of a file's buffer, the clients waiting, the upstream calls in flight.
// See write_path.h for what they mean.
#ifndef NFSEDGE_PROXY_WRITE_PATH_STATE_H_
#define NFSEDGE_PROXY_WRITE_PATH_STATE_H_

#include <rpc/xdr/nfs3.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/cred_key.h"
#include "proxy/nfs_procs.h"
#include "proxy/write_path.h"
#include "rpc/auth_sys.h"

namespace nfsedge {
namespace write_path_internal {

constexpr uint64_t kToEnd = std::numeric_limits<uint64_t>::max();
// Clean files kept for their gathering history or their writers' errors
// at most.
constexpr size_t kMaxIdleFiles = 4096;

// The same caller as the upstream sees it: an AUTH_SYS credential's stamp
// (its first word, which clients such as Linux change with the time) does
// not count, so one writer's writes merge across a change of it.
inline bool SameCred(const OpaqueAuth& a, const OpaqueAuth& b) {
  if (a.flavor != b.flavor) return false;
  if (a.flavor != kAuthSys || a.body.size() < 4 || b.body.size() < 4) return a.body == b.body;
  return std::string_view(a.body).substr(4) == std::string_view(b.body).substr(4);
}

// -1, 0, 1: a's ctime is older than, equal to, newer than b's.
inline int CompareCtime(const fattr3& a, const fattr3& b) {
  if (a.ctime.seconds != b.ctime.seconds) return a.ctime.seconds < b.ctime.seconds ? -1 : 1;
  if (a.ctime.nseconds != b.ctime.nseconds) return a.ctime.nseconds < b.ctime.nseconds ? -1 : 1;
  return 0;
}

// A writer's key: for AUTH_SYS, the client machine and the credential's
// CredKey (not the stamp, which some clients change with the time); else
// the credential's bytes.
inline std::string WriterKey(const OpaqueAuth& cred) {
  if (cred.flavor == kAuthSys) {
    if (std::optional<AuthSys> a = DecodeAuthSys(cred.body)) {
      return "sys:" + a->machine + ":" + std::string(CredKey::FromAuthSys(*a).bytes());
    }
  }
  return std::to_string(cred.flavor) + ":" + cred.body;
}

inline std::string WriteError(nfsstat3 status) {
  return EncodeNfsError(*FindNfsProc(NFSPROC3_WRITE), status);
}

inline std::string CommitError(nfsstat3 status) {
  return EncodeNfsError(*FindNfsProc(NFSPROC3_COMMIT), status);
}

// A write verifier no one had: random, never all zero.
inline std::array<char, 8> RandomVerifier() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
               static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::array<char, 8> out{};
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  if (v == 0) out[0] = 1;
  return out;
}

}  // namespace write_path_internal

struct WritePath::Piece {
  enum State { kDirty, kSending, kWritten };
  std::string data;
  OpaqueAuth cred;
  State state = kDirty;
  uint64_t flight = 0;  // kSending: the upstream WRITE carrying it
  uint64_t commit = 0;  // kWritten: the upstream COMMIT covering it, 0 = none
  std::array<char, 8> verf{};  // kWritten: what its WRITE returned
  // kWritten: File::calls_sent when its WRITE's reply came; a WRITE sent
  // after (Flight::seq above it) ran after it upstream.
  uint64_t written_at = 0;
  // Answered to a client from the buffer (an UNSTABLE write buffered), or
  // overwriting such bytes: lost, it needs a new write verifier.
  bool acked = false;
  // ... answered from the buffer alone (write-behind, the proxy's
  // verifier), not from the journal, or overwriting such bytes: lost, it
  // needs a new verifier of the file's (WritePath::lost_).
  bool behind = false;
  // ... answered FILE_SYNC or DATA_SYNC from the journal, answered UNSTABLE
  // from it and then committed (CommittedFromJournal), or overwriting such
  // bytes: lost, no verifier tells its writer (KeptError::uncovered).
  bool synced = false;
  // Kept after the upstream refused it (DropAndFail): until its bytes are
  // taken, the file's refusals go on counting, whatever else of it is.
  bool refused = false;
  // When its bytes came (File::seq): the oldest write it carries bytes of
  // (new bytes over older ones take the older stamp, so that a client
  // call that waits for the older ones waits for what replaced them).
  uint64_t seq = 0;
  // Its stamp came from bytes that were on their way upstream when it
  // replaced them (or from a piece that had): a call waiting for them
  // already waits for it too. Bytes over it while it is on its way wait
  // (WritePath::SentAndWaitedFor), lest rewrites keep that call waiting.
  bool extended = false;
  // Journal records this piece keeps: the one holding its bytes, or, for
  // bytes not journaled, those of the journaled bytes they overwrote (an
  // acknowledged write stays in the journal until what replaced it is
  // stable upstream). One reference each. (Journaled bytes that overwrote
  // others keep those records through WritePath::overwritten_.)
  std::vector<uint64_t> records;
};

// A stable client write or a client COMMIT, answered once [off, end) holds
// no piece of the writes that came before it (seq up to `stamp`), in
// arrival order.
struct WritePath::Waiter {
  bool commit = false;
  uint64_t off = 0;
  uint64_t end = 0;
  uint32_t count = 0;
  ReplyFn reply;
  uint64_t stamp = 0;
  // A write not answered from the journal: its record, answered once the
  // journal has written it (or refused it) too (appending_).
  uint64_t jseq = 0;
  // The upstream refused its bytes (DropAndFail): answered with this in
  // its turn.
  nfsstat3 error = NFS3_OK;
  // A FILE_SYNC WRITE carried all of its bytes (or newer ones over them)
  // and the upstream took it: stable, whatever later bytes over them meet.
  bool stable = false;
  // The export it came through: its reply's verifier is that export's
  // (the file may be written through nested exports of other settings).
  const Export* exp = nullptr;
  // Its caller (WriterKey). A COMMIT is told the refusal of its own
  // caller's bytes only: one user's quota is not another's, whose COMMIT
  // is answered once its own bytes are stable (and shows the file's new
  // verifier if bytes answered from the buffer were lost).
  std::string writer;
};

// A client call (READ, GETATTR, SETATTR...) held until the writes that came
// before it (seq up to `stamp`) are upstream, or, `stable`, stable there.
struct WritePath::Barrier {
  bool stable = false;
  uint64_t stamp = 0;
  std::function<void()> then;
};

struct WritePath::Span {
  uint64_t off = 0;
  uint64_t end = 0;
  uint64_t seq = 0;
  std::string writer;  // whose bytes (WriterKey); "" in a Flight's (Flight::cred)
};

struct WritePath::Flight {
  uint64_t id;
  uint64_t off;
  uint64_t len;
  OpaqueAuth cred;
  MonoTime sent;
  bool sync = false;  // FILE_SYNC: its pieces need no COMMIT
  bool lone = false;  // a lone file's write: later writes need not wait for it
  bool solo = false;  // sent with nothing else of the file upstream
  uint64_t seq = 0;   // the file's calls sent before and with it
  // Whose bytes it carries: its pieces' ranges and stamps (Piece::seq) as
  // sent, and the last write stamp then. A refusal reaches the writes
  // among them even if newer bytes have replaced theirs in the buffer.
  std::vector<Span> spans;
  uint64_t sent_stamp = 0;
};

struct WritePath::Blocked {
  std::string fh;
  const Export* exp;
  uint64_t offset;
  std::string data;
  bool stable;
  bool journal;
  OpaqueAuth cred;
  ReplyFn reply;
  ReadmitFn readmit;
  bool waited = false;  // it waited for room or was parked: Readmitted
  // When it came (WritePath::arrivals_): a file's waiting writes are taken
  // in this order, whichever queue (room, parked) each waits in.
  uint64_t arrival = 0;
  // Taken from the room queue by AdmitBlocked (which found room for it and
  // no older write waiting for room in all) and parked: when the bytes it
  // waits for have left, Enter does not hold it back for writes that came
  // after it and wait for room in all (it would go back to the room queue,
  // where AdmitBlocked would take it again, for ever).
  bool admitted = false;
};

struct WritePath::File {
  std::string fh;
  const Export* exp = nullptr;
  std::map<uint64_t, Piece> pieces;  // by offset, disjoint
  uint64_t bytes = 0;                // in pieces
  std::vector<Flight> flights;       // upstream WRITEs in flight
  uint32_t urgent_flights = 0;       // ... of them sent for waiters
  uint32_t lone_flights = 0;         // ... of those, lone writes
  uint64_t commit_id = 0;            // upstream COMMIT in flight, 0 = none
  bool commit_urgent = false;
  bool commit_solo = false;          // sent with no WRITE of the file upstream
  uint64_t commit_seq = 0;
  uint64_t calls_sent = 0;           // upstream WRITEs and COMMITs sent for the file
  std::deque<Waiter> waiters;
  std::vector<Barrier> barriers;
  uint64_t seq = 0;  // the stamp of the latest write buffered (Piece::seq)
  std::vector<std::function<void()>> ready;  // to run at the end of Pump
  // Upstream errors kept for writers' next WRITE or COMMIT of the file, by
  // writer (WriterKey): a refusal of one writer's bytes is not another's.
  std::vector<KeptError> errors;
  // The writer (WriterKey) the last upstream COMMIT went as and was refused
  // for (ACCES, PERM, denial); the next goes as another if it can.
  std::string refused_committer;
  // Gathering.
  bool window = false;
  uint64_t window_gen = 0;
  size_t expected = 0;  // writes the window waits for; kOpenEnded: not known
  size_t last_batch = 0;
  int lone = 0;
  bool first_window = false;  // seeded from its writer: the first window is open-ended
  std::string writer;         // WriterKey of its latest stable write
  MonoTime window_start{};
  // Latest attributes and verifier the upstream returned for the file.
  // Ambiguous: two replies with one ctime (a server clock tick) disagreed,
  // and none came since from a call sent with nothing else of the file
  // upstream; client replies then carry no attributes.
  std::optional<fattr3> attr;
  bool attr_ambiguous = false;
  // The newest ctime the metadata cache knew of the file when it let go
  // of its entry: `attr` older than it is not shown (ForgetAttributesBefore).
  NfsTime attr_floor;
  // When the metadata cache last told of a change of the file no reply
  // showed (not one of this path's own replies), and calls_sent then:
  // attributes in a reply to a call made before it and sent before it (or
  // written more than once) may be from before that change: learned only
  // by ctime order against attributes a later reply taught (LearnAttr),
  // never alone.
  std::chrono::steady_clock::time_point changed_at{};
  uint64_t changed_seq = 0;
  std::array<char, 8> upstream_verf{};
  bool flush_scheduled = false;
  bool flush_all = false;
  bool retry_scheduled = false;
  uint32_t no_progress = 0;  // upstream WRITEs (COMMITs) in a row that wrote (ran) nothing
  // Counts an upstream answer that made no progress, once per retry round
  // (several WRITEs may be in flight); returns true iff it is the `max`-th
  // in a row: the data is then given up on (and the count starts again).
  bool GiveUpAfterNoProgress(uint32_t max) {
    if (!retry_scheduled) no_progress++;
    if (no_progress < max) return false;
    no_progress = 0;
    return true;
  }
  uint32_t refusals = 0;     // rounds in a row whose errors kept journaled data (DropAndFail)
  bool refusal_counted = false;  // ... this round's counted
  MonoTime refused_since{};       // ... the first of them
  uint32_t blocked = 0;  // client writes waiting for room
  // Client writes waiting, in arrival order, for another caller's bytes
  // they would replace to leave the buffer (stable upstream, or dropped):
  // no caller's bytes replace another's there (WritePath::OthersHeld).
  std::deque<std::unique_ptr<Blocked>> parked;
  bool admitting = false;  // AdmitParked is at work on the file
};


}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_WRITE_PATH_STATE_H_
