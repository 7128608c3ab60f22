// ONC RPC version 2 message headers (RFC 5531 section 9): calls, accepted
// and denied replies. Bodies (procedure arguments and results) are left as
// bytes; the caller decodes them with the procedure's XDR routine.
//
// Thread-safety: plain values and free functions.
#ifndef NFSEDGE_RPC_RPC_MESSAGE_H_
#define NFSEDGE_RPC_RPC_MESSAGE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "rpc/status.h"

namespace nfsedge {

inline constexpr uint32_t kRpcVersion = 2;
inline constexpr uint32_t kMaxAuthBytes = 400;  // RFC 5531 opaque_auth body

enum MsgType : uint32_t { kCall = 0, kReply = 1 };
enum ReplyStat : uint32_t { kMsgAccepted = 0, kMsgDenied = 1 };
enum AcceptStat : uint32_t {
  kSuccess = 0,
  kProgUnavail = 1,
  kProgMismatch = 2,
  kProcUnavail = 3,
  kGarbageArgs = 4,
  kSystemErr = 5,
};
enum RejectStat : uint32_t { kRpcMismatch = 0, kAuthError = 1 };
enum AuthStat : uint32_t {
  kAuthOk = 0,
  kAuthBadCred = 1,
  kAuthRejectedCred = 2,
  kAuthBadVerf = 3,
  kAuthRejectedVerf = 4,
  kAuthTooWeak = 5,
};
enum AuthFlavor : uint32_t { kAuthNone = 0, kAuthSys = 1 };

struct OpaqueAuth {
  uint32_t flavor = kAuthNone;
  std::string body;
};

struct CallHeader {
  uint32_t xid = 0;
  uint32_t rpcvers = kRpcVersion;
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
  OpaqueAuth cred;
  OpaqueAuth verf;
};

// What ParseCall found wrong, so the server knows how to answer.
enum class CallError {
  kNone,
  kMalformed,    // too short to answer, or not a CALL: close the connection
  kRpcMismatch,  // rpcvers != 2: MSG_DENIED / RPC_MISMATCH
  kBadAuth,      // credential undecodable: MSG_DENIED / AUTH_BADCRED
  kBadVerf,      // verifier undecodable: MSG_DENIED / AUTH_BADVERF (RFC 5531 section 9)
};

struct ParsedCall {
  CallHeader header;
  size_t args_offset = 0;  // where the procedure arguments start in the record
  CallError error = CallError::kNone;
};

// Parses the call header at the start of `record`. header.xid is valid iff
// error != kMalformed.
ParsedCall ParseCall(std::string_view record);

// Returns the encoded call header (without record mark); append the args.
std::string EncodeCallHeader(const CallHeader& h);

struct ReplyHeader {
  uint32_t xid = 0;
  ReplyStat reply_stat = kMsgAccepted;
  AcceptStat accept_stat = kSuccess;  // iff kMsgAccepted
  RejectStat reject_stat = kRpcMismatch;  // iff kMsgDenied
  uint32_t mismatch_low = 0, mismatch_high = 0;  // PROG_MISMATCH or RPC_MISMATCH
  AuthStat auth_stat = kAuthOk;  // iff kAuthError
  size_t results_offset = 0;  // iff accepted and kSuccess
};

// Parses a reply header. Returns a ProtocolError status iff malformed.
StatusOr<ReplyHeader> ParseReply(std::string_view record);

// True iff the reply refuses the call's program or RPC version itself
// (PROG_UNAVAIL, PROG_MISMATCH, RPC_MISMATCH), not the call: a proxy does
// not pass such a refusal on as its own.
bool RefusesTheProgram(const ReplyHeader& h);
// "PROG_MISMATCH 2..2" and the like, for logs.
std::string DescribeRefusal(const ReplyHeader& h);

// Accepted reply header with AUTH_NONE verifier and `stat`; for kSuccess the
// caller appends the results. For kProgMismatch pass low/high.
std::string EncodeAcceptedReply(uint32_t xid, AcceptStat stat, uint32_t low = 0,
                                uint32_t high = 0);
// MSG_DENIED / RPC_MISMATCH(2, 2).
std::string EncodeRpcMismatchReply(uint32_t xid);
// MSG_DENIED / AUTH_ERROR(stat).
std::string EncodeAuthErrorReply(uint32_t xid, AuthStat stat);

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_RPC_MESSAGE_H_
