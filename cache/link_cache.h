// LinkCache: symbolic links' targets (READLINK answers), by the link's file
// handle, each with the credentials the upstream gave it to.
//
// A target is stamped with the link's ChangeId from the READLINK reply's
// attributes, and is valid only while that is the link's current ChangeId,
// which the caller passes in from fresh attributes (AttrCache::Get): the
// cache itself has no expiry; the attribute cache's lifetime bounds how long
// the stamp is trusted. (A symlink's target never changes in place: a new
// target is a new link, with a new handle. The stamp also covers a server
// that reuses a handle.)
//
// Per credential (DESIGN rule 6): a target is given only to a credential
// the upstream answered it to, at the same stamp (CredKey, after the
// export's mapping); a server may check a link's mode (most do not). A
// refusal for a credential (NFS3ERR_ACCES, NFS3ERR_PERM) takes that
// credential off; any other error forgets the link (MetadataCache). At most
// kMaxCredsPerLink credentials per link, the oldest dropped. Like an ACCESS
// result, a credential's place lasts as long as the link's attributes are
// revalidated unchanged.
//
// Bounded (DESIGN rule 8): at most `max_bytes` of handles, targets and
// credential keys, least recently used evicted; 0 = keeps nothing.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_LINK_CACHE_H_
#define NFSEDGE_CACHE_LINK_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/change_id.h"
#include "cache/cred_key.h"
#include "cache/lru_map.h"

namespace nfsedge {

struct LinkCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
};

class LinkCache {
 public:
  static constexpr size_t kMaxCredsPerLink = 32;
  static constexpr size_t kMaxTarget = 4096;  // bytes (PATH_MAX)

  explicit LinkCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  LinkCache(const LinkCache&) = delete;
  LinkCache& operator=(const LinkCache&) = delete;

  // The upstream answered `cred`'s READLINK of `fh` with `target`, the link
  // then being at `version`. A different stamp or target replaces the
  // entry (and its credentials).
  void Put(std::string_view fh, const ChangeId& version, std::string_view target,
           const CredKey& cred);
  // The target of `fh` iff it was given to `cred` at `version` (the link's
  // current stamp, from fresh attributes). A stamp that differs drops the
  // entry.
  std::optional<std::string> Get(std::string_view fh, const ChangeId& version,
                                 const CredKey& cred);
  // Whether Get would answer, without counting or reordering.
  bool Has(std::string_view fh, const ChangeId& version, const CredKey& cred) const;
  // The upstream refused `cred` a call on `fh`.
  void ForgetCred(std::string_view fh, const CredKey& cred);
  void Invalidate(std::string_view fh);
  void Clear();
  void SetMaxBytes(uint64_t max_bytes);

  size_t size() const { return lru_.size(); }
  uint64_t bytes() const { return lru_.charge(); }
  uint64_t max_bytes() const { return max_bytes_; }
  const LinkCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    ChangeId version;
    std::string target;
    std::vector<std::string> creds;  // CredKey bytes, oldest first
  };
  static size_t Charge(std::string_view fh, const Entry& e);
  void EvictToLimit();

  uint64_t max_bytes_;
  mutable LruMap<Entry> lru_;  // (Peek from Has: not a use)
  LinkCacheStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_LINK_CACHE_H_
