// RpcCaller: something that sends an RPC call and later delivers its reply.
// RpcClient implements it over TCP; tests use in-memory fakes.
//
// Thread-safety: implementations run on their event loop's thread.
#ifndef NFSEDGE_RPC_RPC_CALLER_H_
#define NFSEDGE_RPC_RPC_CALLER_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "rpc/rpc_message.h"
#include "rpc/status.h"

namespace nfsedge {

// A reply from the server: its parsed header and the whole record.
struct RpcReply {
  ReplyHeader header;
  std::string record;
  // When the call's last byte left for the server, if the transport knows
  // (RpcClient does); the epoch otherwise.
  std::chrono::steady_clock::time_point sent_at{};
  // How many times the call was written to a connection, if the transport
  // counts them (RpcClient does); 0 otherwise. More than one: the reply may
  // answer any of them, and sent_at is only the last one's.
  uint32_t transmissions = 0;
  // The procedure's results. REQUIRES: accepted with SUCCESS.
  std::string_view results() const {
    return std::string_view(record).substr(header.results_offset);
  }
};

// A pacer's send quantum at `rate` bytes/s: about 2 ms of it, one TCP
// segment at least, 64 KiB at most. RpcClient's pacer keeps at most
// kPacerCreditQuanta of credit while calls wait, so no more than that many
// quanta leave at once.
inline double PacingQuantum(double rate) { return std::clamp(rate * 0.002, 1448.0, 65536.0); }
inline constexpr int kPacerCreditQuanta = 2;

// Returns true iff `r` is a reply the server accepted and ran (SUCCESS).
inline bool Succeeded(const StatusOr<RpcReply>& r) {
  return r.ok() && r->header.reply_stat == kMsgAccepted && r->header.accept_stat == kSuccess;
}

using ReplyCallback = std::function<void(StatusOr<RpcReply>)>;

class RpcCaller {
 public:
  virtual ~RpcCaller() = default;
  // Sends a call; `done` runs exactly once, later (never from inside Call),
  // with the reply or an error. Returns a non-OK status, without ever running
  // `done`, iff the call cannot be queued (e.g. ResourceExhausted).
  virtual Status Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
                      std::string_view args, ReplyCallback done) = 0;
  // As Call, for a call whose reply is expected to carry about
  // `expected_reply` bytes of data, fewer than the count it asks for (a READ
  // that reaches the end of a file whose size is known): a transport that
  // budgets the bytes in flight counts those. The default ignores the hint.
  virtual Status CallExpecting(uint32_t prog, uint32_t vers, uint32_t proc,
                               const OpaqueAuth& cred, std::string_view args,
                               uint64_t expected_reply, ReplyCallback done) {
    (void)expected_reply;
    return Call(prog, vers, proc, cred, args, std::move(done));
  }
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_RPC_CALLER_H_
