#include "proxy/exports.h"

#include <sstream>

#include "rpc/auth_sys.h"

namespace nfsedge {

bool IsCleanAbsolutePath(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 1024) return false;
  if (p.size() > 1 && p.back() == '/') return false;
  if (p.find("//") != std::string::npos) return false;
  std::istringstream parts(p);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part == "." || part == "..") return false;
  }
  return true;
}

bool Export::AllowsClient(const SockAddr& peer) const {
  for (const Network& n : config_.clients) {
    if (n.Contains(peer)) return true;
  }
  return false;
}

OpaqueAuth Export::MapCredential(const OpaqueAuth& cred) const {
  if (!config_.root_squash || cred.flavor != kAuthSys) return cred;
  std::optional<AuthSys> sys = DecodeAuthSys(cred.body);
  if (!sys) return cred;
  bool changed = false;
  if (sys->uid == 0) {
    sys->uid = config_.anon_uid;
    changed = true;
  }
  if (sys->gid == 0) {
    sys->gid = config_.anon_gid;
    changed = true;
  }
  for (uint32_t& g : sys->gids) {
    if (g == 0) {
      g = config_.anon_gid;
      changed = true;
    }
  }
  if (!changed) return cred;
  return OpaqueAuth{kAuthSys, EncodeAuthSys(*sys)};
}

ExportTable::ExportTable(const std::vector<ExportConfig>& exports) {
  uint32_t id = 0;
  for (const auto& e : exports) exports_.emplace_back(id++, e);
}

const Export* ExportTable::FindByPath(const std::string& path, std::string* upstream_path) const {
  const Export* best = nullptr;
  for (const Export& e : exports_) {
    const std::string& p = e.config().path;
    bool match = path == p || (path.size() > p.size() && path.compare(0, p.size(), p) == 0 &&
                               (p == "/" || path[p.size()] == '/'));
    if (match && (!best || p.size() > best->config().path.size())) best = &e;
  }
  if (best) {
    const std::string& p = best->config().path;
    std::string rest = path.substr(p == "/" ? 0 : p.size());
    const std::string& up = best->config().upstream_path;
    *upstream_path = (up == "/" && !rest.empty()) ? rest : up + (rest == "/" ? "" : rest);
  }
  return best;
}

}  // namespace nfsedge
