#include "cache/access_cache.h"

#include <algorithm>
#include <vector>

#include "cache/cache_key.h"

namespace nfsedge {

AccessCache::AccessCache(const Clock& clock, const AccessCacheOptions& options)
    : clock_(clock), options_(options) {}

std::string AccessCache::Key(std::string_view handle, const CredKey& cred) {
  std::string k;
  k.reserve(4 + handle.size() + cred.bytes().size());
  AppendPrefixed(&k, handle);
  k.append(cred.bytes());
  return k;
}

void AccessCache::Put(std::string_view handle, const CredKey& cred, uint32_t asked,
                      uint32_t granted, const fattr3& attr, const Lifetime& l) {
  if (options_.max_entries == 0) return;
  const MonoTime now = clock_.MonoNow();
  Entry fresh{asked, granted & asked, PermId::FromFattr(attr),
              now + ComputeLifetime(l, clock_.WallNow(), ChangeId::FromFattr(attr).LastChange()),
              NfsTime{attr.ctime.seconds, attr.ctime.nseconds}};
  std::string key = Key(handle, cred);
  if (Entry* old = lru_.Peek(key)) {
    // A reply that tells of an older state (its object's ctime before the
    // entry's) came late: the newer answer stays (an ACL changed at the
    // server changes only the ctime; a grant from before must not replace
    // the refusal after), expired or not: an expired entry still answers
    // while the object's ctime is its own.
    if (fresh.ctime < old->ctime) return;
    // Keep what the old entry knew about bits not asked now, but never let
    // them outlive the old entry's own expiry.
    if (now < old->expires && old->perm == fresh.perm && old->ctime == fresh.ctime &&
        (old->asked & ~asked) != 0) {
      fresh.granted |= old->granted & old->asked & ~asked;
      fresh.asked |= old->asked;
      fresh.expires = std::min(fresh.expires, old->expires);
    }
  }
  lru_.Put(key, fresh);
  EvictToLimit();
}

void AccessCache::EvictToLimit() {
  while (lru_.size() > options_.max_entries) {
    lru_.Erase(lru_.Oldest()->key);
    stats_.evictions++;
  }
}

void AccessCache::SetMaxEntries(size_t max_entries) {
  options_.max_entries = max_entries;
  EvictToLimit();
}

std::optional<uint32_t> AccessCache::Lookup(std::string_view handle, const CredKey& cred,
                                            uint32_t requested, const PermId& now,
                                            bool allow_expired) {
  return Find(handle, cred, requested, now, nullptr, allow_expired);
}

std::optional<uint32_t> AccessCache::Lookup(std::string_view handle, const CredKey& cred,
                                            uint32_t requested, const fattr3& now,
                                            bool allow_expired) {
  const NfsTime ctime{now.ctime.seconds, now.ctime.nseconds};
  return Find(handle, cred, requested, PermId::FromFattr(now), &ctime, allow_expired);
}

bool AccessCache::Allows(std::string_view handle, const CredKey& cred, uint32_t bits,
                         const fattr3& now, bool allow_expired) {
  if (bits == 0) return false;  // no evidence of anything
  std::optional<uint32_t> granted = Lookup(handle, cred, bits, now, allow_expired);
  return granted.has_value() && *granted == bits;
}

std::optional<uint32_t> AccessCache::Find(std::string_view handle, const CredKey& cred,
                                          uint32_t requested, const PermId& now,
                                          const NfsTime* unchanged, bool allow_expired) {
  std::string key = Key(handle, cred);
  Entry* e = lru_.Peek(key);
  if (e == nullptr) {
    stats_.misses++;
    return std::nullopt;
  }
  if (!(e->perm == now)) {
    lru_.Erase(key);
    stats_.stale++;
    return std::nullopt;
  }
  if (clock_.MonoNow() >= e->expires && !allow_expired &&
      (unchanged == nullptr || !(*unchanged == e->ctime))) {
    stats_.stale++;
    return std::nullopt;
  }
  if ((requested & ~e->asked) != 0) {
    stats_.misses++;
    return std::nullopt;
  }
  lru_.Find(key);
  stats_.hits++;
  return e->granted & requested;
}

bool AccessCache::Allows(std::string_view handle, const CredKey& cred, uint32_t bits,
                         const PermId& now, bool allow_expired) {
  if (bits == 0) return false;  // no evidence of anything
  std::optional<uint32_t> granted = Lookup(handle, cred, bits, now, allow_expired);
  return granted.has_value() && *granted == bits;
}

bool AccessCache::Invalidate(std::string_view handle, const CredKey& cred) {
  return lru_.Erase(Key(handle, cred));
}

size_t AccessCache::InvalidateHandle(std::string_view handle) {
  std::string prefix;
  AppendPrefixed(&prefix, handle);  // length first: no other handle's keys start so
  std::vector<std::string> keys;
  lru_.ForEach([&](std::string_view key, const Entry&) {
    if (key.starts_with(prefix)) keys.emplace_back(key);
  });
  for (const std::string& key : keys) lru_.Erase(key);
  return keys.size();
}

void AccessCache::ClampExpiry(Duration max) {
  const MonoTime latest = clock_.MonoNow() + max;
  std::vector<std::string> keys;
  lru_.ForEach([&](std::string_view key, const Entry& e) {
    if (e.expires > latest) keys.emplace_back(key);
  });
  for (const std::string& key : keys) lru_.Peek(key)->expires = latest;
}

void AccessCache::Clear() {
  while (auto* oldest = lru_.Oldest()) {
    const std::string key = oldest->key;
    lru_.Erase(key);
  }
}

}  // namespace nfsedge
