// AccessCache: upstream ACCESS results by (file handle, credential).
//
// An entry remembers the mask the credential asked for, the bits the upstream
// granted, the object's PermId (mode, uid, gid) at that time, and an expiry
// (lifetime.h rule, from the object's last change). It answers a request iff
// the request is a subset of what was asked, the entry is fresh, and the
// object's current PermId (from fresh attributes, AttrCache::Get) is the one
// recorded.
//
// Why PermId and not the ChangeId: every CREATE or REMOVE in a directory
// changes its mtime and ctime, and a WRITE a file's; tied to the ChangeId,
// ACCESS entries (and with them the confinement evidence below) would vanish
// on every change of contents, in the busiest directories. Permissions change
// with mode, owner and group, which a chmod/chown through the proxy updates
// at once (its wcc "after"), as the Linux client does. An ACL changed at the
// head office (ctime only) is seen when the entry expires: within the
// lifetime, as the consistency model promises.
//
// Confinement (DESIGN rule 6): a cached LOOKUP, READDIR or READ is served to
// a credential only if Allows() confirms the needed bit for that credential:
// ACCESS3_LOOKUP (or EXECUTE) on the directory for LOOKUP, ACCESS3_READ on
// the directory for READDIR, ACCESS3_READ on the file for READ. Two
// credentials never share an entry.
//
// Bounded (DESIGN rule 8): at most `max_entries`, least recently used evicted.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_ACCESS_CACHE_H_
#define NFSEDGE_CACHE_ACCESS_CACHE_H_

#include <rpc/xdr/nfs3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cache/change_id.h"
#include "cache/clock.h"
#include "cache/cred_key.h"
#include "cache/lifetime.h"
#include "cache/lru_map.h"

namespace nfsedge {

struct AccessCacheOptions {
  size_t max_entries = 100000;
};

struct AccessCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // no entry, or the request asks for bits never asked
  uint64_t stale = 0;   // entry expired or PermId changed (entry dropped)
  uint64_t evictions = 0;
};

class AccessCache {
 public:
  AccessCache(const Clock& clock, const AccessCacheOptions& options);
  AccessCache(const AccessCache&) = delete;
  AccessCache& operator=(const AccessCache&) = delete;

  // Records that the upstream granted `granted` (of `asked`) to `cred` on
  // `handle`, whose attributes were `attr` (ACCESS3resok.obj_attributes, or
  // fresh cached ones). Bits granted but not asked are ignored. A fresh entry
  // with the same PermId is merged with (its other asked bits are kept).
  void Put(std::string_view handle, const CredKey& cred, uint32_t asked, uint32_t granted,
           const fattr3& attr, const Lifetime& l);

  // Returns the granted bits among `requested` iff an entry for (handle,
  // cred) asked for all of `requested`, is fresh (or, with `allow_expired`,
  // for an upstream outage: past its lifetime) and has PermId `now`.
  // Marks the entry used. An expired entry is kept (an outage may need
  // it); one with another PermId is dropped.
  std::optional<uint32_t> Lookup(std::string_view handle, const CredKey& cred, uint32_t requested,
                                 const PermId& now, bool allow_expired = false);

  // Returns true iff the cache proves that the upstream grants every bit of
  // `bits` to `cred` on `handle` (Lookup() answered and all are granted).
  // False for bits == 0.
  bool Allows(std::string_view handle, const CredKey& cred, uint32_t bits, const PermId& now,
              bool allow_expired = false);

  // The same, given the object's fresh attributes `now`: an entry past its
  // lifetime still answers while `now` shows the ctime the object had when
  // the upstream answered the ACCESS (attributes revalidated since, and
  // nothing about the object changed: its mode, owner, group and ACL all
  // move the ctime), as a Linux client keeps its access cache until the
  // attributes change.
  std::optional<uint32_t> Lookup(std::string_view handle, const CredKey& cred, uint32_t requested,
                                 const fattr3& now, bool allow_expired = false);
  bool Allows(std::string_view handle, const CredKey& cred, uint32_t bits, const fattr3& now,
              bool allow_expired = false);

  // Drops the entry for (handle, cred), e.g. after the upstream refused an
  // operation the cache thought allowed. Returns true iff there was one.
  bool Invalidate(std::string_view handle, const CredKey& cred);
  // Drops the entries of `handle` for every credential (nfsedge drop-cache
  // PATH: a change the object's attributes do not show, such as a user
  // taken out of a group the server looks up itself). Walks every entry:
  // for an administrator's command, not for a call's path. Returns how many
  // it dropped.
  size_t InvalidateHandle(std::string_view handle);
  // Every entry expires within `max` from now at the latest (a reload
  // lowered the attribute lifetimes: an entry filled under the longer ones
  // is not fresh past the new). Walks every entry.
  void ClampExpiry(Duration max);

  // Drops every entry (nfsedge drop-cache).
  void Clear();
  // Sets the bound (config reload): a lower one evicts the least recently
  // used entries down to it at once (counted as evictions).
  void SetMaxEntries(size_t max_entries);
  size_t size() const { return lru_.size(); }
  const AccessCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    uint32_t asked;
    uint32_t granted;
    PermId perm;
    MonoTime expires;
    NfsTime ctime;  // the object's, when the upstream answered
  };
  std::optional<uint32_t> Find(std::string_view handle, const CredKey& cred, uint32_t requested,
                               const PermId& now, const NfsTime* unchanged, bool allow_expired);
  static std::string Key(std::string_view handle, const CredKey& cred);
  void EvictToLimit();

  const Clock& clock_;
  AccessCacheOptions options_;
  LruMap<Entry> lru_;
  AccessCacheStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_ACCESS_CACHE_H_
