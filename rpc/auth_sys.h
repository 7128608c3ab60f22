// AUTH_SYS credentials (RFC 5531 appendix A): decode, encode, and the check
// the server applies to every call's credential and verifier.
//
// Thread-safety: plain values and free functions.
#ifndef NFSEDGE_RPC_AUTH_SYS_H_
#define NFSEDGE_RPC_AUTH_SYS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rpc/rpc_message.h"

namespace nfsedge {

inline constexpr uint32_t kMaxMachineName = 255;

struct AuthSys {
  uint32_t stamp = 0;
  std::string machine;
  uint32_t uid = 0;
  uint32_t gid = 0;
  // RFC 5531 caps the list at 16; longer lists that fit the 400-byte body are
  // accepted and passed on as the client sent them.
  std::vector<uint32_t> gids;
};

// Returns the AUTH_SYS credential in `body` iff it decodes completely.
std::optional<AuthSys> DecodeAuthSys(const std::string& body);
std::string EncodeAuthSys(const AuthSys& a);

// Returns kAuthOk iff the call's credential/verifier pair is one this server
// accepts: AUTH_NONE, or AUTH_SYS that decodes, each with an AUTH_NONE verifier.
// Otherwise the AuthStat to answer with: AUTH_BADCRED for an undecodable or
// unknown credential (as Linux's server does), AUTH_BADVERF for a verifier.
AuthStat CheckCallAuth(const CallHeader& h);

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_AUTH_SYS_H_
