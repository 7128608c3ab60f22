// CredKey: the identity an upstream permission check depends on, as a cache
// key (DESIGN rule 6: cached answers are per credential).
//
// Built from the credential the proxy sends upstream, i.e. after the export's
// mapping (root_squash): two callers whose mapped credentials are equal get
// the same answers from the upstream. uid, gid and the supplementary groups
// as a set (order and duplicates do not matter to a permission check; the
// primary gid is kept apart, as the server sees it). AUTH_NONE callers share
// one key distinct from every AUTH_SYS credential.
//
// Thread-safety: plain values.
#ifndef NFSEDGE_CACHE_CRED_KEY_H_
#define NFSEDGE_CACHE_CRED_KEY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/auth_sys.h"

namespace nfsedge {

class CredKey {
 public:
  static CredKey FromAuthSys(const AuthSys& cred);
  static CredKey FromIds(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids);
  static CredKey AuthNone();

  // A byte string equal for two keys iff the keys are equal.
  std::string_view bytes() const { return bytes_; }

  friend bool operator==(const CredKey& a, const CredKey& b) { return a.bytes_ == b.bytes_; }

 private:
  explicit CredKey(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_CRED_KEY_H_
