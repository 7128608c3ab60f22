#include "cache/handle_registry.h"

#include <algorithm>

namespace nfsedge {

HandleRegistry::HandleRegistry(size_t max_handles) : max_handles_(max_handles) {}

HandleRegistry::~HandleRegistry() = default;

HandleRegistry::Entry* HandleRegistry::Merge(std::string_view handle, ExportSet add) {
  for (uint64_t roots = add.roots; roots != 0; roots &= roots - 1) {
    root_of_[__builtin_ctzll(roots)] = std::string(handle);
  }
  std::string key(handle);
  auto it = map_.find(key);
  if (it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    ExportSet& set = it->second.set;
    if ((set.exports | add.exports) == set.exports && (set.roots | add.roots) == set.roots &&
        (set.mounted || !add.mounted)) {
      return nullptr;
    }
    set.exports |= add.exports;
    set.roots |= add.roots;
    if (add.mounted && !set.mounted) {
      set.mounted = true;
      mount_points_.push_back(key);
    }
    return &it->second;
  }
  if (max_handles_ == 0) return nullptr;
  // An export's root is never evicted: its mark closes ".." out of the
  // export, and a root registered again from a reply would not carry it.
  // Nor is a mount point below an export: its client cannot look it up.
  size_t roots_seen = 0;
  while (map_.size() >= max_handles_ && roots_seen < map_.size()) {
    auto victim = map_.find(lru_.back());
    if (victim->second.set.roots != 0 || victim->second.set.mounted) {
      lru_.splice(lru_.begin(), lru_, victim->second.lru);
      roots_seen++;
      continue;
    }
    if (store_) {
      store_->Delete(lru_.back());
    } else if (loading_) {
      evicted_while_loading_.push_back(lru_.back());
    }
    map_.erase(lru_.back());
    lru_.pop_back();
    evictions_++;
  }
  lru_.push_front(key);
  if (add.mounted) mount_points_.push_back(key);
  return &map_.emplace(std::move(key), Entry{add, lru_.begin()}).first->second;
}

void HandleRegistry::BoundMountPoints() {
  while (mount_points_.size() > kMaxMountPoints) {
    auto it = map_.find(mount_points_.front());
    mount_points_.pop_front();
    if (it == map_.end() || !it->second.set.mounted) continue;
    it->second.set.mounted = false;
    if (store_) Save(it->first, it->second.set);
  }
}

void HandleRegistry::Save(std::string_view handle, const ExportSet& set) {
  std::vector<StoredMembership> exports;
  for (uint32_t id = 0; id < export_paths_.size(); ++id) {
    if (set.Has(id)) {
      exports.push_back(StoredMembership{export_paths_[id], set.IsRoot(id), set.mounted});
    }
  }
  store_->Put(handle, exports);
}

void HandleRegistry::Add(std::string_view handle, uint32_t export_id, bool root, bool mounted) {
  ExportSet add;
  add.exports = uint64_t{1} << export_id;
  add.roots = root ? add.exports : 0;
  add.mounted = mounted;
  Entry* e = Merge(handle, add);
  if (e && store_) Save(handle, e->set);
  if (mounted) BoundMountPoints();
}

std::optional<ExportSet> HandleRegistry::FindAll(std::string_view handle) {
  auto it = map_.find(std::string(handle));
  if (it == map_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.set;
}

std::optional<ExportSet> HandleRegistry::Peek(std::string_view handle) const {
  auto it = map_.find(std::string(handle));
  if (it == map_.end()) return std::nullopt;
  return it->second.set;
}

std::optional<uint32_t> HandleRegistry::Find(std::string_view handle) {
  std::optional<ExportSet> set = FindAll(handle);
  if (!set) return std::nullopt;
  return set->First();
}

std::optional<std::string> HandleRegistry::RootOf(uint32_t export_id) const {
  if (export_id >= kMaxExports || root_of_[export_id].empty()) return std::nullopt;
  return root_of_[export_id];
}

Status HandleRegistry::Persist(const std::string& dir, std::vector<std::string> export_paths) {
  export_paths_ = std::move(export_paths);
  // Stored handles of exports no longer configured: deleted from the store;
  // those with some still configured: stored again without the others (an
  // export configured again later does not get them back).
  std::vector<std::string> gone, pruned;
  std::array<int, kMaxExports> roots_loaded{};
  loading_ = true;
  StatusOr<std::unique_ptr<HandleStore>> store = HandleStore::Open(
      dir, [&](std::string_view handle, std::vector<StoredMembership> stored) {
        ExportSet set;
        bool dropped = false;
        for (const StoredMembership& m : stored) {
          auto it = std::find(export_paths_.begin(), export_paths_.end(), m.export_path);
          if (it == export_paths_.end()) {
            dropped = true;
            continue;
          }
          const uint64_t bit = uint64_t{1} << (it - export_paths_.begin());
          set.exports |= bit;
          if (m.root) {
            set.roots |= bit;
            roots_loaded[it - export_paths_.begin()]++;
          }
          set.mounted = set.mounted || m.mounted;
        }
        if (set.exports == 0) {
          gone.emplace_back(handle);
        } else {
          Merge(handle, set);
          if (dropped) pruned.emplace_back(handle);
        }
      });
  loading_ = false;
  if (!store.ok()) {
    map_.clear();
    lru_.clear();
    root_of_ = {};
    evicted_while_loading_.clear();
    return store.status();
  }
  store_ = std::move(*store);
  for (const std::string& h : gone) store_->Delete(h);
  for (const std::string& h : pruned) {
    if (auto it = map_.find(h); it != map_.end()) Save(h, it->second.set);
  }
  // A store holding more than max_handles (a smaller limit than before).
  for (const std::string& h : evicted_while_loading_) store_->Delete(h);
  evicted_while_loading_.clear();
  // An export with two stored roots (its upstream directory made anew) has
  // no known root until a MNT tells which: RootOf answers none.
  for (uint32_t id = 0; id < kMaxExports; ++id) {
    if (roots_loaded[id] > 1) root_of_[id].clear();
  }
  BoundMountPoints();
  return Status::Ok();
}

}  // namespace nfsedge
