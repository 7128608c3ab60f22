// NfsConnection: one TCP connection to an NFSv3 / MOUNTv3 server (or to
// nfsedge, or to the WAN emulator in front of either), driven asynchronously
// with libnfs' raw API (rpc_nfs3_*_async / rpc_mount3_*_async). Each call
// queues at once and its callback runs later from Service(); any number may
// be in flight, so callers enforce their own in-flight limits. Every call
// queued is counted by procedure name (CallCounts).
//
// The libnfs headers stay in the .cc file (their rpcgen types clash with the
// project's); this header may be included anywhere.
//
// Thread safety: not thread-safe; one thread drives a connection.

#ifndef NFSEDGE_TESTS_BENCH_NFS_CONNECTION_H_
#define NFSEDGE_TESTS_BENCH_NFS_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "call_counts.h"
#include "harness/net.h"
#include "harness/nfs_types.h"
#include "harness/status.h"

struct rpc_context;  // libnfs

namespace nfsedge::bench {

using harness::Status;
using harness::StatusOr;

// The decoded reply of any call; each procedure fills the fields it has.
struct NfsReply {
  bool rpc_ok = false;  // False iff no accepted reply came (error in rpc_error).
  std::string rpc_error;
  uint32_t status = 0xffffffffu;  // nfsstat3, or mountstat3 for MNT.
  bool ok() const { return rpc_ok && status == 0; }
  // "OK", "status 2" or "RPC: ...".
  std::string Describe() const;

  std::string fh;                      // LOOKUP, CREATE, MNT.
  std::optional<harness::Fattr> attr;  // GETATTR, LOOKUP, ACCESS, READ, WRITE, CREATE.
  uint32_t access = 0;                 // ACCESS.
  uint32_t count = 0;                  // READ, WRITE.
  bool eof = false;                    // READ, READDIRPLUS.
  // READ: the data, valid only while the callback runs.
  const char* data = nullptr;
  uint32_t committed = 0;                     // WRITE (stable_how).
  std::string verf;                           // WRITE, COMMIT (8 bytes).
  std::string cookieverf;                     // READDIRPLUS.
  std::vector<harness::DirEntry> entries;     // READDIRPLUS.
  uint32_t rtmax = 0, wtmax = 0, dtpref = 0;  // FSINFO.
};

class NfsConnection {
 public:
  using Callback = std::function<void(const NfsReply&)>;

  // Connects to `endpoint` (blocking, bounded by `timeout`). Calls carry
  // AUTH_SYS uid 0 / gid 0.
  static StatusOr<std::unique_ptr<NfsConnection>> Connect(const harness::TcpEndpoint& endpoint,
                                                          harness::Millis timeout);
  // Closes the connection; callbacks of calls still in flight do not run.
  ~NfsConnection();
  NfsConnection(const NfsConnection&) = delete;
  NfsConnection& operator=(const NfsConnection&) = delete;

  // Each queues one call. Returns OK iff queued: then `cb` runs exactly once,
  // from Service() (or never, if the connection is destroyed first).
  Status Mnt(const std::string& path, Callback cb);  // MOUNT3.MNT
  Status Fsinfo(const std::string& fh, Callback cb);
  Status Getattr(const std::string& fh, Callback cb);
  Status Lookup(const std::string& dir, const std::string& name, Callback cb);
  Status Access(const std::string& fh, uint32_t bits, Callback cb);
  Status Read(const std::string& fh, uint64_t offset, uint32_t count, Callback cb);
  // `data` is copied before Write() returns.
  Status Write(const std::string& fh, uint64_t offset, const char* data, uint32_t len,
               harness::Stable stable, Callback cb);
  Status Commit(const std::string& fh, uint64_t offset, uint32_t count, Callback cb);
  // UNCHECKED create, mode 0644.
  Status Create(const std::string& dir, const std::string& name, Callback cb);
  Status Readdirplus(const std::string& dir, uint64_t cookie, const std::string& cookieverf,
                     uint32_t dircount, uint32_t maxcount, Callback cb);

  // Event loop integration.
  int fd() const;
  short events() const;
  // Processes `revents` (0: only housekeeping). Returns false iff the
  // connection has failed (error() says why); it stays failed.
  bool Service(short revents);

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  int in_flight() const { return in_flight_; }
  // Replies received so far (progress, for idle timeouts).
  uint64_t replies() const { return replies_; }
  const CallCounts& counts() const { return counts_; }

  struct Pending;  // One call in flight (defined in the .cc).

 private:
  using Decode = std::function<void(void* data, NfsReply* reply)>;

  NfsConnection() = default;
  // Tracks and counts a call that `queue(private_data)` queues (it returns
  // libnfs' status); `decode` fills the reply from libnfs' result struct.
  Status Queue(const char* name, Callback cb, Decode decode,
               const std::function<int(void*)>& queue);
  // libnfs' callback for every call.
  static void OnReply(::rpc_context* rpc, int status, void* data, void* private_data);

  ::rpc_context* rpc_ = nullptr;
  bool failed_ = false;
  std::string error_;
  int in_flight_ = 0;
  uint64_t replies_ = 0;
  CallCounts counts_;
  std::unordered_set<Pending*> pending_;  // Owned; freed by OnReply.
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_NFS_CONNECTION_H_
