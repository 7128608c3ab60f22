#include "cache/cred_key.h"

#include <algorithm>

#include "cache/cache_key.h"

namespace nfsedge {

CredKey CredKey::FromIds(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids) {
  std::sort(gids.begin(), gids.end());
  gids.erase(std::unique(gids.begin(), gids.end()), gids.end());
  std::string b;
  b.reserve(1 + 4 * (3 + gids.size()));
  b.push_back('S');  // AUTH_SYS
  AppendU32(&b, uid);
  AppendU32(&b, gid);
  AppendU32(&b, static_cast<uint32_t>(gids.size()));
  for (uint32_t g : gids) AppendU32(&b, g);
  return CredKey(std::move(b));
}

CredKey CredKey::FromAuthSys(const AuthSys& cred) { return FromIds(cred.uid, cred.gid, cred.gids); }

CredKey CredKey::AuthNone() { return CredKey(std::string(1, 'N')); }

}  // namespace nfsedge
