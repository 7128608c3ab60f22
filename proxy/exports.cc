#include "proxy/exports.h"

#include <sstream>
#include <tuple>
#include <utility>

#include "rpc/auth_sys.h"

namespace nfsedge {

bool IsCleanAbsolutePath(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 1024) return false;
  if (p.size() > 1 && p.back() == '/') return false;
  if (p.find("//") != std::string::npos) return false;
  if (p.find('\0') != std::string::npos) return false;  // C strings would end there
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

bool Export::AllowsPort(const SockAddr& peer) const {
  return !config_.secure || peer.port() < 1024;
}

OpaqueAuth Export::MapCredential(const OpaqueAuth& cred) const {
  if ((!config_.root_squash && !config_.all_squash) || cred.flavor != kAuthSys) return cred;
  std::optional<AuthSys> sys = DecodeAuthSys(cred.body);
  if (!sys) return cred;
  if (config_.all_squash) {
    sys->uid = config_.anon_uid;
    sys->gid = config_.anon_gid;
    sys->gids.clear();
    return OpaqueAuth{kAuthSys, EncodeAuthSys(*sys)};
  }
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

const Export* ExportTable::Choose(uint64_t ids, const SockAddr& peer, bool tls,
                                  bool* port_refused) const {
  const Export* best = nullptr;
  *port_refused = false;
  for (const Export& e : exports_) {
    if (e.id() >= 64 || ((ids >> e.id()) & 1) == 0 || !e.AllowsClient(peer)) continue;
    // The deepest: the export whose upstream directory is nested deepest
    // (the handle lies in the trees of all its exports), whatever the paths
    // clients mount it by. For the same upstream directory, one whose
    // `secure` and `tls` admit the caller (it could mount that one: its
    // rules are no escalation), then the longer path.
    const auto depth = [&](const Export& x) {
      return std::make_tuple(x.config().upstream_path.size(),
                             x.AllowsPort(peer) && x.AllowsTransport(tls), x.config().path.size());
    };
    if (!best || depth(e) > depth(*best)) best = &e;
  }
  // A `secure` export refuses an unprivileged port; not by falling back to
  // an export around it, whose rules (squashing, read-only) may be weaker
  // than the ones a privileged caller gets.
  if (best != nullptr && !best->AllowsPort(peer)) {
    *port_refused = true;
    return nullptr;
  }
  return best;
}

Status ExportTable::Update(const std::vector<ExportConfig>& exports) {
  if (exports.size() != exports_.size()) {
    return InvalidArgument("the number of [[export]] tables changed (" +
                           std::to_string(exports_.size()) + " -> " +
                           std::to_string(exports.size()) + "): adding or removing exports "
                           "needs a restart");
  }
  for (size_t i = 0; i < exports.size(); ++i) {
    const ExportConfig& now = exports_[i].config_;
    if (exports[i].path != now.path || exports[i].upstream_path != now.upstream_path) {
      return InvalidArgument("[[export]] #" + std::to_string(i + 1) + " is now " +
                             exports[i].path + " (upstream " + exports[i].upstream_path +
                             "), was " + now.path + " (upstream " + now.upstream_path +
                             "): changing export paths needs a restart");
    }
  }
  // A reload that leaves every export as it was changes no rules: calls
  // waiting, MNTs and tree walks in progress carry on.
  bool changed = false;
  for (size_t i = 0; i < exports.size(); ++i) {
    if (exports_[i].config_ == exports[i]) continue;
    exports_[i].config_ = exports[i];
    changed = true;
  }
  if (changed) updates_++;
  return Status::Ok();
}

const Export* ExportTable::FindByPath(const std::string& path, std::string* upstream_path,
                                      const SockAddr* peer) const {
  const Export* best = nullptr;
  for (const Export& e : exports_) {
    if (peer != nullptr && !e.AllowsClient(*peer)) continue;
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
