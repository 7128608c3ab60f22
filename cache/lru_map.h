// LruMap<V>: a map from byte-string keys to values, in least-recently-used
// order, with a charge per entry (1 for "count entries", a size for "count
// bytes"). The building block of the bounded caches (DESIGN rule 8).
//
// Lookups are O(1) (one hash lookup). LruMap does not evict by itself: the
// owning cache compares charge() with its limit and removes Oldest() entries,
// so that it can first update its own side indexes.
//
// Keys are stored once, in the list node; the index refers to them with
// string_views (list nodes never move).
//
// Thread-safety: not synchronized.
#ifndef NFSEDGE_CACHE_LRU_MAP_H_
#define NFSEDGE_CACHE_LRU_MAP_H_

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace nfsedge {

template <typename V>
class LruMap {
 public:
  struct Node {
    std::string key;
    V value;
    size_t charge;
  };

  LruMap() = default;
  LruMap(const LruMap&) = delete;
  LruMap& operator=(const LruMap&) = delete;

  // Returns the value of `key` iff present, and marks it most recently used.
  // The pointer is valid until the entry is erased.
  V* Find(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    list_.splice(list_.begin(), list_, it->second);
    return &it->second->value;
  }

  // Like Find() but leaves the order alone.
  V* Peek(std::string_view key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->value;
  }

  // Inserts or replaces the value of `key`, as most recently used. Returns a
  // reference to the stored value. A replaced entry keeps its key storage
  // (string_views to the key stay valid).
  V& Put(std::string_view key, V value, size_t charge = 1) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      Node& n = *it->second;
      charge_ = charge_ - n.charge + charge;
      n.value = std::move(value);
      n.charge = charge;
      list_.splice(list_.begin(), list_, it->second);
      return n.value;
    }
    list_.push_front(Node{std::string(key), std::move(value), charge});
    index_.emplace(std::string_view(list_.front().key), list_.begin());
    charge_ += charge;
    return list_.front().value;
  }

  // Removes `key`. Returns true iff it was present. `key` may refer to the
  // entry's own key.
  bool Erase(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    auto node = it->second;
    index_.erase(it);
    charge_ -= node->charge;
    list_.erase(node);
    return true;
  }

  // Calls fn(key, value) for every entry, most recently used first; not a
  // use. REQUIRES: fn does not change the map.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Node& n : list_) fn(std::string_view(n.key), n.value);
  }

  // Returns the least recently used entry, or nullptr iff empty.
  Node* Oldest() { return list_.empty() ? nullptr : &list_.back(); }

  size_t size() const { return index_.size(); }
  size_t charge() const { return charge_; }
  bool empty() const { return index_.empty(); }

 private:
  std::list<Node> list_;  // front = most recently used
  std::unordered_map<std::string_view, typename std::list<Node>::iterator> index_;
  size_t charge_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_LRU_MAP_H_
