// DuplicateRequestCache: a retransmitted non-idempotent call gets the first
// call's reply and is not executed twice upstream (DESIGN rule 7).
//
// A client that loses its connection, or times out, sends a call again with
// the same XID, often over a new connection (a new source port). Executing
// CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK or a guarded
// SETATTR twice would turn a success into EEXIST or NOENT, or undo another
// client's work; so would a WRITE held by the proxy's write path when its
// client sends it again. Calls are keyed by the client's address (without
// the port), credential (an AUTH_SYS one without its stamp), program,
// version, procedure, XID and a hash of the arguments' start and their size
// (so two clients or users behind one address that happen to reuse an XID
// are not confused).
//
// A call seen for the first time is recorded as in progress and its reply,
// whenever it is sent, is kept. A retransmission of a call in progress waits
// for that reply; one of a finished call gets the kept reply at once. The
// cache holds at most `max_entries` finished WRITEs and as many finished
// other calls (so that a client streaming writes does not push out another
// client's REMOVE within seconds; least recently used go first, a call
// counting as used when it finishes and when it is sent again); calls in
// progress are never evicted, and their number is bounded
// by the server's connection and per-connection call limits (the calls of
// closed connections included, per client address and in all:
// RpcServer's ClientCalls and OrphanedCalls).
//
// Thread-safety: runs on the event loop's thread.
#ifndef NFSEDGE_PROXY_DRC_H_
#define NFSEDGE_PROXY_DRC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rpc/rpc_server.h"

namespace nfsedge {

struct DrcStats {
  uint64_t recorded = 0;   // first calls recorded
  uint64_t replayed = 0;   // retransmissions answered with a kept reply
  uint64_t joined = 0;     // retransmissions that waited for the first call
  uint64_t evicted = 0;    // finished entries dropped for room
  uint64_t entries = 0;    // entries now (finished and in progress)
};

class DuplicateRequestCache {
 public:
  // `max_entries` = 0 turns the cache off (Admit always returns true).
  explicit DuplicateRequestCache(size_t max_entries);
  ~DuplicateRequestCache();
  DuplicateRequestCache(const DuplicateRequestCache&) = delete;
  DuplicateRequestCache& operator=(const DuplicateRequestCache&) = delete;

  // Returns true iff `call` is new and should be executed: its reply will be
  // kept. Returns false iff it is a retransmission, answered now (a kept
  // reply) or when the first call replies.
  bool Admit(const std::shared_ptr<IncomingCall>& call);

  DrcStats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the reply hooks of calls
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_DRC_H_
