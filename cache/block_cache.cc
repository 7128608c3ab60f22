#include "cache/block_cache.h"

#include <utility>

#include "cache/cache_key.h"

namespace nfsedge {
namespace {

uint32_t ReadU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

}  // namespace

std::string BlockKey(std::string_view handle, uint64_t index) {
  std::string key;
  key.reserve(4 + handle.size() + 8);
  AppendPrefixed(&key, handle);
  AppendU64(&key, index);
  return key;
}

bool ParseBlockKey(std::string_view key, std::string_view* handle, uint64_t* index) {
  if (key.size() < 12) return false;
  const uint32_t len = ReadU32(key.data());
  if (key.size() - 12 != len) return false;
  *handle = key.substr(4, len);
  const char* p = key.data() + 4 + len;
  *index = (uint64_t{ReadU32(p)} << 32) | ReadU32(p + 4);
  return true;
}

BlockCache::BlockCache(const BlockCacheOptions& options) : options_(options) {}

void BlockCache::CountLeaving(const Block& b) {
  if (b.prefetched) stats_.readahead_wasted++;
}

void BlockCache::UpdateGauges() {
  stats_.bytes = Charge();
  stats_.blocks = lru_.size();
}

void BlockCache::Erase(std::string_view handle, uint64_t index, const std::string& key) {
  auto f = files_.find(handle);
  if (f != files_.end()) {
    f->second.erase(index);
    if (f->second.empty()) files_.erase(f);
  }
  lru_.Erase(key);
}

const Block* BlockCache::Get(std::string_view handle, uint64_t index, const ChangeId& version) {
  const std::string key = BlockKey(handle, index);
  Block* b = lru_.Find(key);
  if (b == nullptr) {
    stats_.misses++;
    return nullptr;
  }
  if (b->version != version) {
    stats_.stale++;
    CountLeaving(*b);
    Erase(handle, index, key);
    UpdateGauges();
    return nullptr;
  }
  stats_.hits++;
  if (b->prefetched) {
    b->prefetched = false;
    stats_.readahead_used++;
  }
  return b;
}

bool BlockCache::Contains(std::string_view handle, uint64_t index, const ChangeId& version,
                          bool confirmed_only) const {
  // Peek() changes nothing; LruMap offers it only on a mutable map.
  const Block* b = const_cast<LruMap<Block>&>(lru_).Peek(BlockKey(handle, index));
  return b != nullptr && b->version == version && !(confirmed_only && b->unconfirmed);
}

void BlockCache::Put(std::string_view handle, uint64_t index, Block block) {
  const size_t size = block.data.size();
  if (size > options_.block_size || (size < options_.block_size && !block.eof)) {
    stats_.rejected++;
    return;
  }
  // The charge counts the data's size: do not keep a larger buffer alive.
  if (block.data.capacity() > size + size / 8 + kBlockOverhead) block.data.shrink_to_fit();
  const std::string key = BlockKey(handle, index);
  if (Block* old = lru_.Peek(key); old != nullptr && !block.prefetched) CountLeaving(*old);
  lru_.Put(key, std::move(block), size + kBlockOverhead);
  auto f = files_.find(handle);
  if (f == files_.end())
    f = files_.emplace(std::string(handle), std::unordered_set<uint64_t>{}).first;
  f->second.insert(index);
  stats_.inserts++;
  EvictToLimit();
}

void BlockCache::SetMaxBytes(uint64_t max_bytes) {
  options_.max_bytes = max_bytes;
  EvictToLimit();
}

void BlockCache::EvictToLimit() {
  while (Charge() > options_.max_bytes && lru_.size() > 0) {
    auto* oldest = lru_.Oldest();
    std::string_view old_handle;
    uint64_t old_index = 0;
    ParseBlockKey(oldest->key, &old_handle, &old_index);
    // The node (and the key the views point into) goes away below.
    std::string evicted_handle(old_handle);
    Block evicted = std::move(oldest->value);
    CountLeaving(evicted);
    Erase(evicted_handle, old_index, oldest->key);
    stats_.evictions++;
    if (on_evict_) on_evict_(evicted_handle, old_index, std::move(evicted));
  }
  UpdateGauges();
}

void BlockCache::DropFile(std::string_view handle) {
  auto f = files_.find(handle);
  if (f == files_.end()) return;
  for (uint64_t index : f->second) {
    const std::string key = BlockKey(handle, index);
    if (const Block* b = lru_.Peek(key)) CountLeaving(*b);
    lru_.Erase(key);
    stats_.dropped++;
  }
  files_.erase(f);
  UpdateGauges();
}

void BlockCache::DropAll() {
  std::vector<std::string> handles;
  for (const auto& f : files_) handles.push_back(f.first);
  for (const std::string& h : handles) DropFile(h);
}

void BlockCache::DropOtherVersions(std::string_view handle, const ChangeId& version) {
  DropIf(handle, [&version](const Block& b) { return !(b.version == version); });
}

void BlockCache::DropUnconfirmed(std::string_view handle, const ChangeId& version) {
  DropIf(handle, [&version](const Block& b) { return b.unconfirmed && b.version == version; });
}

void BlockCache::DropIf(std::string_view handle, const std::function<bool(const Block&)>& drop) {
  auto f = files_.find(handle);
  if (f == files_.end()) return;
  std::unordered_set<uint64_t>& indexes = f->second;
  for (auto it = indexes.begin(); it != indexes.end();) {
    const std::string key = BlockKey(handle, *it);
    const Block* b = lru_.Peek(key);
    if (b != nullptr && !drop(*b)) {
      ++it;
      continue;
    }
    if (b != nullptr) {
      CountLeaving(*b);
      lru_.Erase(key);
      stats_.dropped++;
    }
    it = indexes.erase(it);
  }
  if (indexes.empty()) files_.erase(f);
  UpdateGauges();
}

}  // namespace nfsedge
