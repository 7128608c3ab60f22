#include "cache/link_cache.h"

#include <algorithm>
#include <utility>

namespace nfsedge {

size_t LinkCache::Charge(std::string_view fh, const Entry& e) {
  size_t n = fh.size() + e.target.size() + sizeof(Entry);
  for (const std::string& c : e.creds) n += c.size() + sizeof(std::string);
  return n;
}

void LinkCache::Put(std::string_view fh, const ChangeId& version, std::string_view target,
                    const CredKey& cred) {
  // (A target longer than a path may be is a server's bug: not kept.)
  if (max_bytes_ == 0 || target.size() > kMaxTarget) return;
  Entry e;
  if (Entry* old = lru_.Peek(fh); old != nullptr && old->version == version &&
                                  old->target == target) {
    e = std::move(*old);
  } else {
    e.version = version;
    e.target = std::string(target);
  }
  const std::string_view key = cred.bytes();
  if (std::find(e.creds.begin(), e.creds.end(), key) == e.creds.end()) {
    e.creds.emplace_back(key);
    if (e.creds.size() > kMaxCredsPerLink) e.creds.erase(e.creds.begin());
  }
  const size_t charge = Charge(fh, e);
  if (charge > max_bytes_) {  // it alone would empty the cache
    lru_.Erase(fh);
    return;
  }
  lru_.Put(fh, std::move(e), charge);
  EvictToLimit();
}

std::optional<std::string> LinkCache::Get(std::string_view fh, const ChangeId& version,
                                          const CredKey& cred) {
  Entry* e = lru_.Find(fh);
  if (e == nullptr) {
    stats_.misses++;
    return std::nullopt;
  }
  if (!(e->version == version)) {
    lru_.Erase(fh);
    stats_.misses++;
    return std::nullopt;
  }
  if (std::find(e->creds.begin(), e->creds.end(), cred.bytes()) == e->creds.end()) {
    stats_.misses++;
    return std::nullopt;
  }
  stats_.hits++;
  return e->target;
}

bool LinkCache::Has(std::string_view fh, const ChangeId& version, const CredKey& cred) const {
  const Entry* e = lru_.Peek(fh);
  return e != nullptr && e->version == version &&
         std::find(e->creds.begin(), e->creds.end(), cred.bytes()) != e->creds.end();
}

void LinkCache::ForgetCred(std::string_view fh, const CredKey& cred) {
  Entry* e = lru_.Peek(fh);
  if (e == nullptr) return;
  auto it = std::find(e->creds.begin(), e->creds.end(), cred.bytes());
  if (it == e->creds.end()) return;
  e->creds.erase(it);
  if (e->creds.empty()) {
    lru_.Erase(fh);
    return;
  }
  Entry copy = std::move(*e);
  const size_t charge = Charge(fh, copy);
  lru_.Put(fh, std::move(copy), charge);
}

void LinkCache::Invalidate(std::string_view fh) { lru_.Erase(fh); }

void LinkCache::Clear() {
  while (LruMap<Entry>::Node* n = lru_.Oldest()) lru_.Erase(n->key);
}

void LinkCache::SetMaxBytes(uint64_t max_bytes) {
  max_bytes_ = max_bytes;
  EvictToLimit();
}

void LinkCache::EvictToLimit() {
  while (lru_.charge() > max_bytes_ && !lru_.empty()) {
    lru_.Erase(lru_.Oldest()->key);
    stats_.evictions++;
  }
}

}  // namespace nfsedge
