// Session: one client mount, as the workloads' client sees it. Mount() does
// what a client does at mount time (MOUNT3 MNT over a connection to the mount
// port, which is then closed; FSINFO on the root over the NFS connection);
// then calls go over one NFS connection (plus any opened with
// OpenConnection()), with explicit in-flight limits: Call() (one call,
// waited for) and Pipeline() (up to `depth` in flight).
//
// Thread safety: not thread-safe.

#ifndef NFSEDGE_TESTS_BENCH_SESSION_H_
#define NFSEDGE_TESTS_BENCH_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "call_counts.h"
#include "event_loop.h"
#include "nfs_connection.h"

namespace nfsedge::bench {

class Session {
 public:
  struct Options {
    harness::TcpEndpoint nfs;
    harness::TcpEndpoint mount;
    std::string export_path;
    Millis idle_timeout = Millis(180000);  // No reply at all for this long fails.
    uint32_t max_transfer = 1 << 20;       // Cap on rsize / wsize.
  };

  using Issue = std::function<Status(NfsConnection&, NfsConnection::Callback)>;
  // Sees an OK reply (READ data still valid); an error stops the run.
  using Check = std::function<Status(const NfsReply&)>;
  struct Op {
    const char* what;  // Procedure name, for messages.
    Issue issue;
    Check check = {};  // May be empty.
  };

  static StatusOr<std::unique_ptr<Session>> Mount(const Options& options);

  NfsConnection& conn() { return *conns_.front(); }
  EventLoop& loop() { return loop_; }
  const std::string& root() const { return root_; }
  uint32_t rsize() const { return rsize_; }
  uint32_t wsize() const { return wsize_; }
  Millis idle_timeout() const { return options_.idle_timeout; }

  // Opens another NFS connection to the same server, registered with loop().
  StatusOr<NfsConnection*> OpenConnection();
  // Every call this session made, on all its connections (MNT included).
  CallCounts counts() const;

  // Call() and Pipeline() fail at once after an earlier one failed at the
  // transport level (timeout, lost connection, interrupt).
  // Issues one call on conn() and waits for it. Returns the reply (its READ
  // data pointer cleared) iff it was OK and `check` accepted it.
  StatusOr<NfsReply> Call(const Op& op);
  // Runs ops from `next` (nullopt: no more) on conn() with at most `depth` in
  // flight, until all have replied. Returns OK iff every reply was OK and
  // passed its check; stops issuing at the first failure. `tick` is passed
  // to EventLoop::Run (work beside the pipeline, e.g. probes).
  Status Pipeline(int depth, const std::function<std::optional<Op>()>& next,
                  const std::function<Millis()>& tick = {});

  // Conveniences over Call().
  StatusOr<NfsReply> Lookup(const std::string& dir, const std::string& name);
  // LOOKUPs each component of `path` ("a/b") from the root; returns the handle.
  StatusOr<std::string> LookupPath(const std::string& path);
  // CREATE (unchecked); returns the new file's handle.
  StatusOr<std::string> CreateFile(const std::string& dir, const std::string& name);

 private:
  explicit Session(Options options) : options_(std::move(options)) {}

  const Options options_;
  EventLoop loop_;
  CallCounts mount_counts_;  // Calls on the (closed) mount connection.
  std::vector<std::unique_ptr<NfsConnection>> conns_;
  std::string root_;
  uint32_t rsize_ = 0, wsize_ = 0;
  // Set when a loop run failed with calls in flight whose callbacks refer to
  // a finished stack frame: every later call fails at once.
  bool broken_ = false;
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_SESSION_H_
