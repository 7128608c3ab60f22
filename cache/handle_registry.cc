#include "cache/handle_registry.h"

namespace nfsedge {

void HandleRegistry::Add(std::string_view handle, uint32_t export_id) {
  std::string key(handle);
  auto it = map_.find(key);
  if (it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  if (max_handles_ == 0) return;
  while (map_.size() >= max_handles_) {
    map_.erase(lru_.back());
    lru_.pop_back();
    evictions_++;
  }
  lru_.push_front(key);
  map_.emplace(std::move(key), Entry{export_id, lru_.begin()});
}

std::optional<uint32_t> HandleRegistry::Find(std::string_view handle) {
  auto it = map_.find(std::string(handle));
  if (it == map_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.export_id;
}

}  // namespace nfsedge
