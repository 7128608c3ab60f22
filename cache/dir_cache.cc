#include "cache/dir_cache.h"

#include <algorithm>
#include <cstring>

#include "cache/cache_key.h"

namespace nfsedge {
namespace {

// Bookkeeping per page (list node, index slot, directory set), roughly.
constexpr size_t kEntryOverhead = 160;
// Per entry cookie of a READDIRPLUS page: its place in the page's list and
// its node in the directory's cookie index, roughly (plus the key's copy).
constexpr size_t kCookieOverhead = 96;

}  // namespace

CookieVerf ToCookieVerf(const cookieverf3& v) {
  CookieVerf out;
  std::memcpy(out.data(), v, out.size());
  return out;
}

DirCache::DirCache(const Clock& clock, const DirCacheOptions& options)
    : clock_(clock), options_(options) {}

std::string DirCache::Key(const DirPageKey& k) {
  std::string out;
  out.reserve(4 + k.dir.size() + 1 + 8 + k.verf.size() + 4);
  AppendPrefixed(&out, k.dir);
  out.push_back(k.plus ? 'P' : 'R');
  AppendU64(&out, k.cookie);
  out.append(k.verf.data(), k.verf.size());
  AppendU32(&out, k.size_class);
  return out;
}

void DirCache::EraseKey(std::string_view key) {
  Entry* e = lru_.Peek(key);
  if (e == nullptr) return;
  auto d = dirs_.find(e->dir);
  if (d != dirs_.end()) {
    for (uint64_t cookie : e->page.cookies) {
      auto c = d->second.cookie_page.find(cookie);
      if (c != d->second.cookie_page.end() && c->second == key) d->second.cookie_page.erase(c);
    }
    d->second.keys.erase(std::string(key));
    if (d->second.keys.empty()) EraseDir(d);
  }
  lru_.Erase(key);
}

void DirCache::ForgetParent(DirMap::iterator it) {
  if (!it->second.parent) return;
  auto c = children_.find(*it->second.parent);
  if (c != children_.end()) {
    c->second.erase(it->first);
    if (c->second.empty()) children_.erase(c);
  }
  it->second.parent.reset();
}

void DirCache::EraseDir(DirMap::iterator it) {
  ForgetParent(it);
  dirs_.erase(it);
}

void DirCache::DropDir(DirMap::iterator it) {
  for (const std::string& key : it->second.keys) lru_.Erase(key);
  EraseDir(it);
  stats_.dirs_dropped++;
}

void DirCache::Put(const DirPageKey& key, DirPage page, Duration max_age) {
  if (max_age <= Duration(0)) return;
  std::string k = Key(key);
  const size_t charge = page.bytes.size() + k.size() + key.dir.size() + kEntryOverhead +
                        page.cookies.size() * (kCookieOverhead + k.size());
  if (charge > options_.max_bytes) return;
  auto it = dirs_.find(key.dir);
  if (it != dirs_.end() && !(it->second.stamp == page.dir_change)) {
    if (page.dir_change.OlderThan(it->second.stamp)) return;  // an out-of-order reply
    DropDir(it);
    it = dirs_.end();
  }
  if (it == dirs_.end()) it = dirs_.emplace(key.dir, Dir{page.dir_change, {}, {}, {}}).first;
  if (page.parent_fileid && it->second.parent != page.parent_fileid) {
    ForgetParent(it);
    it->second.parent = page.parent_fileid;
    children_[*page.parent_fileid].insert(key.dir);
  }
  const MonoTime now = clock_.MonoNow();
  const MonoTime expires = max_age >= MonoTime::max() - now ? MonoTime::max() : now + max_age;
  if (const Entry* old = lru_.Peek(k)) {  // replaced: its cookies go with it
    for (uint64_t cookie : old->page.cookies) {
      auto c = it->second.cookie_page.find(cookie);
      if (c != it->second.cookie_page.end() && c->second == k) it->second.cookie_page.erase(c);
    }
  }
  for (uint64_t cookie : page.cookies) it->second.cookie_page[cookie] = k;
  lru_.Put(k, Entry{key.dir, std::move(page), expires}, charge);
  it->second.keys.insert(std::move(k));
  EvictToLimit();
}

void DirCache::EvictToLimit() {
  while (lru_.charge() > options_.max_bytes) {
    EraseKey(lru_.Oldest()->key);
    stats_.evictions++;
  }
}

void DirCache::SetMaxBytes(size_t max_bytes) {
  options_.max_bytes = max_bytes;
  EvictToLimit();
}

const DirPage* DirCache::Peek(const DirPageKey& key, const ChangeId& dir_now) {
  auto it = dirs_.find(key.dir);
  if (it == dirs_.end() || !(it->second.stamp == dir_now)) return nullptr;
  Entry* e = lru_.Peek(Key(key));
  if (e == nullptr || clock_.MonoNow() >= e->expires) return nullptr;
  return &e->page;
}

size_t DirCache::StoredBytes(const DirPageKey& key) {
  const Entry* e = lru_.Peek(Key(key));
  return e == nullptr ? 0 : e->page.bytes.size();
}

const DirPage* DirCache::Lookup(const DirPageKey& key, const ChangeId& dir_now) {
  auto it = dirs_.find(key.dir);
  if (it == dirs_.end()) {
    stats_.misses++;
    return nullptr;
  }
  if (!(it->second.stamp == dir_now)) {
    DropDir(it);
    stats_.stale++;
    return nullptr;
  }
  std::string k = Key(key);
  Entry* e = lru_.Find(k);
  if (e == nullptr) {
    stats_.misses++;
    return nullptr;
  }
  if (clock_.MonoNow() >= e->expires) {
    EraseKey(k);
    stats_.stale++;
    return nullptr;
  }
  stats_.hits++;
  return &e->page;
}

void DirCache::InvalidateDir(std::string_view dir) {
  auto it = dirs_.find(std::string(dir));
  if (it != dirs_.end()) DropDir(it);
}

void DirCache::InvalidateChildrenOf(uint64_t parent_fileid) {
  auto c = children_.find(parent_fileid);
  if (c == children_.end()) return;
  const std::unordered_set<std::string> dirs = std::move(c->second);
  children_.erase(c);
  for (const std::string& dir : dirs) InvalidateDir(dir);
}

void DirCache::InvalidateAllChildren() {
  while (!children_.empty()) InvalidateChildrenOf(children_.begin()->first);
}

void DirCache::Clear() {
  while (!dirs_.empty()) DropDir(dirs_.begin());
}

std::pair<const DirPage*, size_t> DirCache::Continue(std::string_view dir, uint64_t cookie,
                                                     const CookieVerf& verf,
                                                     const ChangeId& dir_now) {
  auto it = dirs_.find(std::string(dir));
  if (it == dirs_.end()) return {nullptr, 0};
  if (!(it->second.stamp == dir_now)) {
    DropDir(it);
    stats_.stale++;
    return {nullptr, 0};
  }
  auto c = it->second.cookie_page.find(cookie);
  if (c == it->second.cookie_page.end()) return {nullptr, 0};
  const std::string key = c->second;
  const Entry* e = lru_.Peek(key);
  if (e == nullptr || clock_.MonoNow() >= e->expires || e->page.verf != verf) return {nullptr, 0};
  const std::vector<uint64_t>& cookies = e->page.cookies;
  auto at = std::find(cookies.begin(), cookies.end(), cookie);
  if (at == cookies.end()) return {nullptr, 0};
  const size_t next = static_cast<size_t>(at - cookies.begin()) + 1;
  if (next == cookies.size() && !e->page.eof) return {nullptr, 0};  // the next page's
  stats_.continued++;
  return {&lru_.Find(key)->page, next};
}

}  // namespace nfsedge
