// MountService: the MOUNTv3 program of the proxy (RFC 1813 section 5).
//
// MNT checks the path against the configured exports (MNT3ERR_ACCES if none
// covers it, as Linux's mountd answers) and the client against the export's networks and `secure`
// rule (MNT3ERR_ACCES, logged), then asks the upstream to mount the export's
// upstream path and registers the handle it returns as the export's root
// (the path is taken as realpath(3) writes it: a trailing "/" or a "//" do
// not count; "." and ".." are refused). The reply lists the proxy's own
// credential flavor (AUTH_SYS), not the upstream's. A path below the export's is reached from that root by LOOKUPs with the
// client's (mapped) credential, one directory at a time: a component that is
// not a directory (a symlink, which the upstream's mountd would follow out
// of the export) is refused with MNT3ERR_NOTDIR, so no handle outside the
// export is handed out. While the upstream's mountd cannot be reached, a
// MNT of an export's own path is answered with the root handle an earlier
// MNT got (the handle registry's). EXPORT lists the proxy's own exports; DUMP,
// UMNT and UMNTALL keep the proxy's own list of who mounted what (bounded).
// Versions 1 and 2 are served for what they share with version 3 (NULL,
// DUMP, UMNT, UMNTALL, EXPORT: showmount(8) asks version 1); their MNT
// answers an NFSv2 handle, and is PROC_UNAVAIL (NFSv2 is not served).
//
// Thread-safety: runs on the event loop's thread.
#ifndef NFSEDGE_PROXY_MOUNT_SERVICE_H_
#define NFSEDGE_PROXY_MOUNT_SERVICE_H_

#include <rpc/xdr/mount3.h>
#include <rpc/xdr/nfs3.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/handle_registry.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

inline constexpr uint32_t kMountProgram = 100005;
inline constexpr uint32_t kMountVersion = 3;
inline constexpr uint32_t kMountMinVersion = 1;
inline constexpr uint32_t kMountProcCount = 6;
inline constexpr size_t kMaxMountEntries = 4096;

// Returns the path argument of MNT/UMNT iff it decodes, with repeated
// slashes as one and without a trailing one (as realpath(3), which Linux's
// mountd applies, writes it: "/data/" and "//data" mount /data).
bool DecodeDirpath(std::string_view args, std::string* path);

class MountService : public RpcProgram {
 public:
  // `nfs`: the upstream's NFS program, for the LOOKUPs of a path below an
  // export; null refuses such mounts (MNT3ERR_ACCES).
  MountService(const ExportTable& exports, HandleRegistry& handles, RpcCaller& upstream,
               RpcCaller* nfs = nullptr);

  uint32_t program() const override { return kMountProgram; }
  uint32_t version() const override { return kMountVersion; }
  uint32_t min_version() const override { return kMountMinVersion; }
  uint32_t proc_count() const override { return kMountProcCount; }
  void Handle(std::shared_ptr<IncomingCall> call) override;

  size_t mount_count() const { return mounts_.size(); }
  // Whether the upstream is out (OutageDetector): a MNT of an export's own
  // path whose root is known is then answered at once, not after the
  // upstream MNT's deadline.
  void SetUpstreamOut(std::function<bool()> out) { upstream_out_ = std::move(out); }

 private:
  // `restarts`: times a reload made this MNT start over (bounded).
  void Mnt(const std::shared_ptr<IncomingCall>& call, int restarts = 0);
  // A reload while the MNT was on its way: starts it over under the new
  // rules, or, after kMaxRestarts, refuses it (MNT3ERR_SERVERFAULT; the
  // client mounts again).
  void Restart(const std::shared_ptr<IncomingCall>& call, const std::string& path, int restarts);
  static constexpr int kMaxRestarts = 8;
  void Dump(IncomingCall& call);
  void Umnt(IncomingCall& call);
  void Umntall(IncomingCall& call);
  void ListExports(IncomingCall& call);
  void ReplyMountError(IncomingCall& call, mountstat3 status);
  // MNT3_OK with `fh` and the proxy's credential flavors.
  void ReplyMounted(IncomingCall& call, const std::string& fh);
  // The upstream's mountd could not be asked (a WAN outage, its port gone):
  // answers a MNT of export `export_id`'s own path with the root handle an
  // earlier MNT got (kept across restarts with server.handle_store), as the
  // upstream would; false if none is known.
  bool MountKnownRoot(IncomingCall& call, uint32_t export_id, const std::string& path);
  void RecordMount(const std::string& host, const std::string& path);
  // A MNT below an export: its walk from the export's root.
  struct Walk;
  void WalkNext(const std::shared_ptr<Walk>& w);
  void MountDone(const std::shared_ptr<Walk>& w);
  // The walk's next component is `fh`, of `type`: on to it iff a directory.
  void Descend(const std::shared_ptr<Walk>& w, const std::string& fh, ftype3 type);
  // The same once a GETATTR told its type (LOOKUP answered without it).
  void DescendAfterGetattr(const std::shared_ptr<Walk>& w, const std::string& fh);
  // The walk met `status` (a LOOKUP's failure): answers the upstream's own
  // error for the whole path, or `status`.
  void MountError(const std::shared_ptr<Walk>& w, mountstat3 status);

  const ExportTable& exports_;
  HandleRegistry& handles_;
  RpcCaller& upstream_;
  RpcCaller* nfs_;
  std::vector<std::pair<std::string, std::string>> mounts_;  // (client host, path)
  std::function<bool()> upstream_out_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_MOUNT_SERVICE_H_
