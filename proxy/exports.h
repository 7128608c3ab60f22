// ExportTable: the exports of config, with the rules applied to clients:
// which networks may use an export, read-only, and root squash.
//
// Thread-safety: immutable after construction.
#ifndef NFSEDGE_PROXY_EXPORTS_H_
#define NFSEDGE_PROXY_EXPORTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/config.h"
#include "rpc/rpc_message.h"
#include "rpc/sockaddr.h"

namespace nfsedge {

class Export {
 public:
  Export(uint32_t id, ExportConfig config) : id_(id), config_(std::move(config)) {}

  uint32_t id() const { return id_; }
  const ExportConfig& config() const { return config_; }
  bool read_only() const { return config_.read_only; }

  // Returns true iff a client at `peer` may mount and use this export.
  bool AllowsClient(const SockAddr& peer) const;

  // Returns the credential to send upstream for a client's `cred`: with
  // root_squash, AUTH_SYS uid 0 becomes anon_uid and gid 0 (also among the
  // supplementary groups) becomes anon_gid. Other credentials pass unchanged.
  OpaqueAuth MapCredential(const OpaqueAuth& cred) const;

 private:
  uint32_t id_;
  ExportConfig config_;
};

// Returns true iff `path` is absolute with no '.', '..' or empty component
// and no trailing '/' (except "/" itself): the only paths MNT accepts.
bool IsCleanAbsolutePath(const std::string& path);

class ExportTable {
 public:
  explicit ExportTable(const std::vector<ExportConfig>& exports);

  // Returns the export whose path is `path` or an ancestor of it, and sets
  // `*upstream_path` to the matching path on the upstream server.
  const Export* FindByPath(const std::string& path, std::string* upstream_path) const;
  // REQUIRES: id came from an Export of this table.
  const Export& Get(uint32_t id) const { return exports_[id]; }
  const std::vector<Export>& all() const { return exports_; }

 private:
  std::vector<Export> exports_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_EXPORTS_H_
