#include "rpc/auth_sys.h"

#include "rpc/xdr_codec.h"

namespace nfsedge {

std::optional<AuthSys> DecodeAuthSys(const std::string& body) {
  AuthSys a;
  XdrReader r(body);
  uint32_t n;
  if (!r.ReadU32(&a.stamp) || !r.ReadString(&a.machine, kMaxMachineName) || !r.ReadU32(&a.uid) ||
      !r.ReadU32(&a.gid) || !r.ReadU32(&n) || n > r.remaining() / 4) {
    return std::nullopt;
  }
  a.gids.resize(n);
  for (uint32_t i = 0; i < n; ++i) r.ReadU32(&a.gids[i]);
  if (r.remaining() != 0) return std::nullopt;
  return a;
}

std::string EncodeAuthSys(const AuthSys& a) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(a.stamp);
  w.WriteOpaque(a.machine);
  w.WriteU32(a.uid);
  w.WriteU32(a.gid);
  w.WriteU32(static_cast<uint32_t>(a.gids.size()));
  for (uint32_t g : a.gids) w.WriteU32(g);
  return out;
}

AuthStat CheckCallAuth(const CallHeader& h) {
  switch (h.cred.flavor) {
    case kAuthNone:
      break;
    case kAuthSys:
      if (!DecodeAuthSys(h.cred.body)) return kAuthBadCred;
      break;
    default:
      return kAuthBadCred;
  }
  if (h.verf.flavor != kAuthNone) return kAuthBadVerf;
  return kAuthOk;
}

}  // namespace nfsedge
