// ExportTable: the exports of config, with the rules applied to clients:
// which networks may use an export, from which source ports (`secure`),
// read-only, and credential squashing (root_squash, all_squash).
//
// Thread-safety: not synchronized; the rules change only by Update() (config
// reload) on the event loop thread, which is where they are read.
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
  // Returns true iff `peer`'s source port is acceptable: any port, or with
  // `secure` a privileged one (below 1024).
  bool AllowsPort(const SockAddr& peer) const;
  // Returns true iff a call over a connection with (`tls`) or without TLS
  // may use this export: anything but plaintext on a `tls = "required"` one.
  bool AllowsTransport(bool tls) const { return tls || config_.tls != ExportTls::kRequired; }

  // What the handle store records a handle's membership of this export
  // under: its path and the upstream directory it serves, so that an
  // export pointed at another upstream directory (narrowed, say) does not
  // get the handles of the old one back after a restart.
  std::string StoreKey() const { return config_.path + '\n' + config_.upstream_path; }

  // Returns the credential to send upstream for a client's `cred`: with
  // all_squash, any AUTH_SYS credential becomes anon_uid/anon_gid with no
  // supplementary groups; with root_squash, uid 0 becomes anon_uid and gid 0
  // (also among the supplementary groups) becomes anon_gid. Other
  // credentials, and the groups of unsquashed ones (however many: RFC 5531's
  // limit of 16 is the upstream's to enforce), pass unchanged.
  OpaqueAuth MapCredential(const OpaqueAuth& cred) const;

 private:
  friend class ExportTable;  // Update() changes the rules in place
  uint32_t id_;
  ExportConfig config_;
};

// Returns true iff `path` is absolute with no '.', '..' or empty component
// and no trailing '/' (except "/" itself): the only paths MNT accepts.
bool IsCleanAbsolutePath(const std::string& path);

class ExportTable {
 public:
  explicit ExportTable(const std::vector<ExportConfig>& exports);

  // Returns the export whose path is `path` or an ancestor of it (the
  // deepest; with `peer`, the deepest that admits a client there, as Linux's
  // mountd picks), and sets `*upstream_path` to the matching path on the
  // upstream server.
  const Export* FindByPath(const std::string& path, std::string* upstream_path,
                           const SockAddr* peer = nullptr) const;
  // Returns the export among `ids` (a bit set of export ids) that admits a
  // client at `peer` (its networks and `secure`), the deepest one (upstream
  // directory, then path) if several do, as nested exports' rules apply
  // inside them; of exports of the same upstream directory, one whose
  // `secure` and `tls` admit a caller at `peer` (over TLS iff `tls`) first.
  // nullptr iff none does. Sets *port_refused iff the deepest allowed the
  // client's network but not its source port.
  const Export* Choose(uint64_t ids, const SockAddr& peer, bool tls, bool* port_refused) const;
  // REQUIRES: id came from an Export of this table.
  const Export& Get(uint32_t id) const { return exports_[id]; }
  const std::vector<Export>& all() const { return exports_; }

  // Config reload: gives each export the rules and lifetimes of `exports`,
  // in place (calls in flight keep valid references). Returns an error, and
  // changes nothing, iff the exports are not the same paths with the same
  // upstream paths in the same order (adding, removing or moving an export
  // needs a restart: client handles are tied to export ids).
  // REQUIRES: on the event loop's thread.
  Status Update(const std::vector<ExportConfig>& exports);
  // How many times Update() changed the rules (an export's config differs
  // from what it was): a call that waited checks them again only if they
  // changed meanwhile.
  uint64_t updates() const { return updates_; }

 private:
  std::vector<Export> exports_;
  uint64_t updates_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_EXPORTS_H_
