#include "cache/name_cache.h"

#include "cache/cache_key.h"

namespace nfsedge {

NameCache::NameCache(const NameCacheOptions& options) : options_(options) {}

std::string NameCache::Key(std::string_view dir, std::string_view name) {
  std::string k;
  k.reserve(4 + dir.size() + name.size());
  AppendPrefixed(&k, dir);
  k.append(name);
  return k;
}

bool NameCache::Cacheable(std::string_view name) const {
  return !name.empty() && name != "." && name != ".." && name.size() <= options_.max_name_bytes;
}

void NameCache::EraseKey(std::string_view key) {
  Entry* e = lru_.Peek(key);
  if (e == nullptr) return;
  auto d = dirs_.find(e->dir);
  if (d != dirs_.end()) {
    d->second.keys.erase(std::string(key));
    if (d->second.keys.empty()) dirs_.erase(d);
  }
  lru_.Erase(key);
}

void NameCache::EraseName(std::string_view dir, std::string_view name) { EraseKey(Key(dir, name)); }

void NameCache::DropDir(std::unordered_map<std::string, Dir>::iterator it) {
  for (const std::string& key : it->second.keys) lru_.Erase(key);
  dirs_.erase(it);
  stats_.dirs_dropped++;
}

void NameCache::Record(std::string_view dir, std::string_view name, std::string_view child,
                       const ChangeId& dir_change) {
  if (options_.max_entries == 0 || !Cacheable(name)) return;
  std::string dir_key(dir);
  auto it = dirs_.find(dir_key);
  if (it != dirs_.end() && !(it->second.stamp == dir_change)) {
    if (dir_change.OlderThan(it->second.stamp)) return;  // an out-of-order reply
    DropDir(it);
    it = dirs_.end();
  }
  if (it == dirs_.end()) it = dirs_.emplace(dir_key, Dir{dir_change, {}}).first;
  std::string key = Key(dir, name);
  lru_.Put(key, Entry{std::move(dir_key), std::string(child)});
  it->second.keys.insert(std::move(key));
  EvictToLimit();
}

void NameCache::EvictToLimit() {
  while (lru_.size() > options_.max_entries) {
    EraseKey(lru_.Oldest()->key);
    stats_.evictions++;
  }
}

void NameCache::SetMaxEntries(size_t max_entries) {
  options_.max_entries = max_entries;
  EvictToLimit();
}

void NameCache::PutPositive(std::string_view dir, std::string_view name, std::string_view child,
                            const ChangeId& dir_change) {
  if (child.empty()) return;  // not a handle
  Record(dir, name, child, dir_change);
}

void NameCache::PutNegative(std::string_view dir, std::string_view name,
                            const ChangeId& dir_change) {
  Record(dir, name, std::string_view(), dir_change);
}

std::optional<NameHit> NameCache::Lookup(std::string_view dir, std::string_view name,
                                         const ChangeId& dir_now) {
  auto it = dirs_.find(std::string(dir));
  if (it == dirs_.end()) {
    stats_.misses++;
    return std::nullopt;
  }
  if (!(it->second.stamp == dir_now)) {
    DropDir(it);
    stats_.misses++;
    return std::nullopt;
  }
  Entry* e = lru_.Find(Key(dir, name));
  if (e == nullptr) {
    stats_.misses++;
    return std::nullopt;
  }
  if (e->child.empty()) {
    stats_.negative_hits++;
    return NameHit{true, {}};
  }
  stats_.positive_hits++;
  return NameHit{false, e->child};
}

void NameCache::ApplyChange(std::string_view dir, const DirChange& change) {
  auto it = dirs_.find(std::string(dir));
  if (it == dirs_.end()) return;
  if (change.before && change.after && *change.before == it->second.stamp) {
    it->second.stamp = *change.after;
  } else {
    DropDir(it);
  }
}

void NameCache::OnCreate(std::string_view dir, std::string_view name, std::string_view child,
                         const DirChange& change) {
  ApplyChange(dir, change);
  if (change.after && !child.empty()) {
    Record(dir, name, child, *change.after);
  } else {
    EraseName(dir, name);
  }
}

void NameCache::OnRemove(std::string_view dir, std::string_view name, const DirChange& change) {
  ApplyChange(dir, change);
  if (change.after) {
    Record(dir, name, std::string_view(), *change.after);
  } else {
    EraseName(dir, name);
  }
}

void NameCache::OnRename(std::string_view from_dir, std::string_view from_name,
                         std::string_view to_dir, std::string_view to_name,
                         const DirChange& from_change, const DirChange& to_change) {
  // The moved child, if its entry is valid under the "before" state.
  std::string child;
  auto it = dirs_.find(std::string(from_dir));
  if (it != dirs_.end() && from_change.before && *from_change.before == it->second.stamp) {
    if (Entry* e = lru_.Peek(Key(from_dir, from_name))) child = e->child;
  }
  const bool same_dir = from_dir == to_dir;
  // One directory: both wcc describe the same change; apply it once.
  const DirChange& to = same_dir ? from_change : to_change;
  // The child the target name had, likewise.
  std::string replaced;
  bool target_known = false;  // a valid entry, positive or negative
  auto tit = dirs_.find(std::string(to_dir));
  if (tit != dirs_.end() && to.before && *to.before == tit->second.stamp) {
    if (Entry* e = lru_.Peek(Key(to_dir, to_name))) {
      replaced = e->child;
      target_known = true;
    }
  }
  // A rename onto another link of the same file succeeds and changes
  // nothing (POSIX): both names are known to lead to that file, the
  // directories' wcc shows no change, and both names stay. (No change in
  // the wcc alone proves nothing: a server whose clock did not tick since
  // the directory's last change shows the same.)
  if (!child.empty() && child == replaced && from_change.before && from_change.after &&
      *from_change.before == *from_change.after &&
      (same_dir || (to_change.before && to_change.after && *to_change.before == *to_change.after))) {
    return;
  }
  // The source name surely went when the source directory's wcc shows a
  // change (a rename onto another link of the same file changes nothing),
  // or the target name was known to hold another file, or none. Otherwise
  // the rename may have been such a one, and the source name may still be
  // there: forgotten, not made negative.
  const bool changed = from_change.before && from_change.after &&
                       !(*from_change.before == *from_change.after);
  if (changed || (target_known && (replaced.empty() || (!child.empty() && replaced != child)))) {
    OnRemove(from_dir, from_name, from_change);
  } else {
    ApplyChange(from_dir, from_change);
    EraseName(from_dir, from_name);
  }
  if (!same_dir) ApplyChange(to_dir, to);
  if (to.after && !child.empty()) {
    Record(to_dir, to_name, child, *to.after);
  } else {
    EraseName(to_dir, to_name);
  }
}

std::string NameCache::Peek(std::string_view dir, std::string_view name) {
  const Entry* e = lru_.Peek(Key(dir, name));
  return e == nullptr ? std::string() : e->child;
}

void NameCache::InvalidateDir(std::string_view dir) {
  auto it = dirs_.find(std::string(dir));
  if (it != dirs_.end()) DropDir(it);
}

void NameCache::Clear() {
  while (auto* oldest = lru_.Oldest()) {
    const std::string key = oldest->key;
    lru_.Erase(key);
  }
  dirs_.clear();
}

}  // namespace nfsedge
