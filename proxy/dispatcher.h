// Dispatcher: routes each well-formed call to the RPC program that serves
// it, and gives the standard answers for what no program serves:
// PROG_UNAVAIL, PROG_MISMATCH (with the versions served), PROC_UNAVAIL.
//
// Thread-safety: runs on the event loop's thread.
#ifndef NFSEDGE_PROXY_DISPATCHER_H_
#define NFSEDGE_PROXY_DISPATCHER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "rpc/rpc_server.h"

namespace nfsedge {

class RpcProgram {
 public:
  virtual ~RpcProgram() = default;
  virtual uint32_t program() const = 0;
  virtual uint32_t version() const = 0;  // the highest version served
  // The lowest version served; the versions between are served too.
  virtual uint32_t min_version() const { return version(); }
  virtual uint32_t proc_count() const = 0;
  // REQUIRES: the call's program, a version served and proc < proc_count() match.
  virtual void Handle(std::shared_ptr<IncomingCall> call) = 0;
};

struct DispatchStats {
  uint64_t prog_unavail = 0;
  uint64_t prog_mismatch = 0;
  uint64_t proc_unavail = 0;
};

class Dispatcher : public CallHandler {
 public:
  // `programs` are not owned and must outlive the dispatcher.
  explicit Dispatcher(std::vector<RpcProgram*> programs) : programs_(std::move(programs)) {}
  void HandleCall(std::unique_ptr<IncomingCall> call) override;
  const DispatchStats& stats() const { return stats_; }

 private:
  std::vector<RpcProgram*> programs_;
  DispatchStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_DISPATCHER_H_
