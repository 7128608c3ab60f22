// ChangeMarks: when each key (a file or directory handle) last changed
// through the proxy, as a count of changes noted and a steady-clock time,
// so that a reply whose call left before the change can be told apart from
// one that left after it, however coarse the server's timestamps.
//
// Bounded: when `max` keys are marked, a new key clears them all and the
// latest mark stands for every key (the floor), which refuses more replies
// but never fewer.
//
// Thread-safety: not synchronized.
#ifndef NFSEDGE_CACHE_CHANGE_MARKS_H_
#define NFSEDGE_CACHE_CHANGE_MARKS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nfsedge {

class ChangeMarks {
 public:
  struct Mark {
    uint64_t seq = 0;  // 0: no change noted (and no floor)
    std::chrono::steady_clock::time_point at{};
  };

  explicit ChangeMarks(size_t max) : max_(max) {}

  // Notes a change of `key` now; returns its mark.
  Mark Note(std::string_view key) {
    const Mark mark{++seq_, std::chrono::steady_clock::now()};
    std::string k(key);
    if (marks_.size() >= max_ && !marks_.contains(k)) {
      marks_.clear();
      floor_ = mark;
    } else {
      marks_[std::move(k)] = mark;
    }
    return mark;
  }
  // Notes a change of every key now (the floor); returns its mark.
  Mark NoteAll() {
    const Mark mark{++seq_, std::chrono::steady_clock::now()};
    marks_.clear();
    floor_ = mark;
    return mark;
  }
  // The last change of `key`, or the floor if it has none.
  Mark Last(std::string_view key) const {
    auto it = marks_.find(std::string(key));
    return it == marks_.end() ? floor_ : it->second;
  }
  // Changes noted so far, of any key.
  uint64_t seq() const { return seq_; }

 private:
  size_t max_;
  uint64_t seq_ = 0;
  std::unordered_map<std::string, Mark> marks_;
  Mark floor_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_CHANGE_MARKS_H_
