#include "proxy/client_paths.h"

#include <unordered_set>

namespace nfsedge {

std::string HexBytes(std::string_view bytes, size_t max) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    out += kDigits[static_cast<unsigned char>(bytes[i]) >> 4];
    out += kDigits[static_cast<unsigned char>(bytes[i]) & 15];
  }
  return out;
}

namespace {

// One handle on its way up: the names found so far, innermost first.
struct Walk {
  std::string at;  // the handle reached
  std::vector<std::string> names;
  bool done = false;
};

std::string Below(const std::string& root, const std::vector<std::string>& names) {
  std::string path = root == "/" ? "" : root;
  for (auto n = names.rbegin(); n != names.rend(); ++n) path += "/" + *n;
  return path.empty() ? "/" : path;
}

}  // namespace

std::vector<std::string> ClientPaths(const std::vector<std::string>& handles,
                                     const MetadataCache& meta, const HandleRegistry& registry,
                                     const ExportTable& exports) {
  std::vector<std::string> out(handles.size());
  std::vector<Walk> walks(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) walks[i].at = handles[i];
  for (size_t depth = 0; depth <= kMaxPathDepth; ++depth) {
    std::unordered_set<std::string> wanted;
    for (size_t i = 0; i < walks.size(); ++i) {
      Walk& w = walks[i];
      if (w.done) continue;
      std::optional<ExportSet> set = registry.Peek(w.at);
      if (set && set->roots != 0) {
        const uint32_t id = static_cast<uint32_t>(__builtin_ctzll(set->roots));
        out[i] = Below(exports.Get(id).config().path, w.names);
        w.done = true;
      } else if (depth == kMaxPathDepth) {
        w.done = true;
      } else {
        wanted.insert(w.at);
      }
    }
    if (wanted.empty()) break;
    const auto parents = meta.ParentsOf(wanted);
    for (Walk& w : walks) {
      if (w.done) continue;
      auto p = parents.find(w.at);
      if (p == parents.end()) {
        w.done = true;
        continue;
      }
      w.at = p->second.first;
      w.names.push_back(p->second.second);
    }
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    if (!out[i].empty()) continue;
    out[i] = HexBytes(handles[i], 32);
    if (!walks[i].names.empty()) out[i] += " ..." + Below("/", walks[i].names);
  }
  return out;
}

}  // namespace nfsedge
