#include "call_counts.h"

#include <algorithm>
#include <vector>

namespace nfsedge::bench {

void CallCounts::Add(const std::string& name, uint64_t n) {
  if (n > 0) by_name_[name] += n;
}

void CallCounts::AddAll(const CallCounts& other) {
  for (const auto& [name, n] : other.by_name_) Add(name, n);
}

uint64_t CallCounts::Get(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? 0 : it->second;
}

uint64_t CallCounts::Total() const {
  uint64_t total = 0;
  for (const auto& [name, n] : by_name_) total += n;
  return total;
}

CallCounts CallCounts::Minus(const CallCounts& earlier) const {
  CallCounts out;
  for (const auto& [name, n] : by_name_) {
    uint64_t before = earlier.Get(name);
    if (n > before) out.Add(name, n - before);
  }
  return out;
}

std::string CallCounts::Compact() const {
  if (by_name_.empty()) return "-";
  std::vector<std::pair<std::string, uint64_t>> items(by_name_.begin(), by_name_.end());
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, n] : items) {
    std::string shortname = name;
    size_t dot = name.find('.');
    if (dot != std::string::npos) shortname = name.substr(dot + 1);
    if (!out.empty()) out += ", ";
    out += shortname + " " + std::to_string(n);
  }
  return out;
}

}  // namespace nfsedge::bench
