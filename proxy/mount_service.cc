#include "proxy/mount_service.h"

#include <algorithm>

#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

enum MountProc : uint32_t { kNull = 0, kMnt = 1, kDump = 2, kUmnt = 3, kUmntall = 4, kExport = 5 };

// Returns the path argument of MNT/UMNT iff it decodes.
bool DecodeDirpath(std::string_view args, std::string* path) {
  XdrValue<char*> v(reinterpret_cast<xdrproc_t>(xdr_dirpath));
  if (!v.Decode(args) || v.get() == nullptr) return false;
  *path = v.get();
  return true;
}

}  // namespace

MountService::MountService(const ExportTable& exports, HandleRegistry& handles,
                           RpcCaller& upstream)
    : exports_(exports), handles_(handles), upstream_(upstream) {}

void MountService::Handle(std::shared_ptr<IncomingCall> call) {
  switch (call->header().proc) {
    case kNull:
      call->ReplySuccess("");
      return;
    case kMnt:
      Mnt(call);
      return;
    case kDump:
      Dump(*call);
      return;
    case kUmnt:
      Umnt(*call);
      return;
    case kUmntall:
      Umntall(*call);
      return;
    case kExport:
      ListExports(*call);
      return;
  }
}

void MountService::ReplyMountError(IncomingCall& call, mountstat3 status) {
  mountres3 res{};
  res.fhs_status = status;
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_mountres3), &res, &out);
  call.ReplySuccess(out);
}

void MountService::Mnt(const std::shared_ptr<IncomingCall>& call) {
  std::string path;
  if (!DecodeDirpath(call->args(), &path)) {
    call->ReplyAccepted(kGarbageArgs);
    return;
  }
  std::string upstream_path;
  const Export* exp =
      IsCleanAbsolutePath(path) ? exports_.FindByPath(path, &upstream_path) : nullptr;
  if (!exp) {
    NFSEDGE_LOG(kInfo) << "MNT " << path << " from " << call->peer().ToString()
                       << " refused: not exported";
    ReplyMountError(*call, MNT3ERR_NOENT);
    return;
  }
  if (!exp->AllowsClient(call->peer())) {
    NFSEDGE_LOG(kInfo) << "MNT " << path << " from " << call->peer().ToString()
                       << " refused: client not in the export's networks";
    ReplyMountError(*call, MNT3ERR_ACCES);
    return;
  }
  if (!exp->AllowsPort(call->peer())) {
    NFSEDGE_LOG(kInfo) << "MNT " << path << " from " << call->peer().ToString()
                       << " refused: source port not privileged (export is 'secure')";
    ReplyMountError(*call, MNT3ERR_ACCES);
    return;
  }
  if (!exp->AllowsTransport(call->tls())) {
    NFSEDGE_LOG(kWarn) << "MNT " << path << " from " << call->peer().ToString()
                       << " refused: plaintext connection (export has tls = \"required\")";
    ReplyMountError(*call, MNT3ERR_ACCES);
    return;
  }
  std::string args;
  char* p = upstream_path.data();
  if (!XdrEncode(reinterpret_cast<xdrproc_t>(xdr_dirpath), &p, &args)) {
    // The export's upstream path made the client's path longer than MOUNTv3
    // can carry.
    NFSEDGE_LOG(kInfo) << "MNT " << path << ": upstream path over " << MNTPATHLEN << " bytes";
    ReplyMountError(*call, MNT3ERR_NAMETOOLONG);
    return;
  }
  uint32_t export_id = exp->id();
  Status s = upstream_.Call(
      kMountProgram, kMountVersion, kMnt, exp->MapCredential(call->header().cred), args,
      [this, call, export_id, path](StatusOr<RpcReply> r) {
        if (!r.ok()) {
          NFSEDGE_LOG(kWarn) << "MNT " << path << ": upstream: " << r.status().ToString();
          ReplyMountError(*call, MNT3ERR_SERVERFAULT);
          return;
        }
        if (r->header.reply_stat == kMsgAccepted && r->header.accept_stat == kSuccess) {
          XdrValue<mountres3> res(reinterpret_cast<xdrproc_t>(xdr_mountres3));
          if (res.Decode(r->results()) && res->fhs_status == MNT3_OK) {
            const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
            // The export's own root: ".." from it leaves the export.
            handles_.Add(std::string_view(fh.fhandle3_val, fh.fhandle3_len), export_id,
                         path == exports_.Get(export_id).config().path);
            RecordMount(call->peer().HostString(), path);
            NFSEDGE_LOG(kInfo) << "MNT " << path << " by " << call->peer().ToString();
          }
        }
        StoreBE32(r->record.data(), call->xid());
        call->Reply(std::move(r->record));
      });
  if (!s.ok()) {
    NFSEDGE_LOG(kWarn) << "MNT " << path << ": " << s.ToString();
    ReplyMountError(*call, MNT3ERR_SERVERFAULT);
  }
}

void MountService::RecordMount(const std::string& host, const std::string& path) {
  auto entry = std::make_pair(host, path);
  if (std::find(mounts_.begin(), mounts_.end(), entry) != mounts_.end()) return;
  if (mounts_.size() >= kMaxMountEntries) mounts_.erase(mounts_.begin());
  mounts_.push_back(std::move(entry));
}

void MountService::Dump(IncomingCall& call) {
  std::vector<mountbody> nodes(mounts_.size());
  for (size_t i = 0; i < mounts_.size(); ++i) {
    nodes[i].ml_hostname = const_cast<char*>(mounts_[i].first.c_str());
    nodes[i].ml_directory = const_cast<char*>(mounts_[i].second.c_str());
    nodes[i].ml_next = i + 1 < nodes.size() ? &nodes[i + 1] : nullptr;
  }
  mountlist head = nodes.empty() ? nullptr : &nodes[0];
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_mountlist), &head, &out);
  call.ReplySuccess(out);
}

void MountService::Umnt(IncomingCall& call) {
  std::string path;
  if (!DecodeDirpath(call.args(), &path)) {
    call.ReplyAccepted(kGarbageArgs);
    return;
  }
  std::string host = call.peer().HostString();
  std::erase_if(mounts_, [&](const auto& m) { return m.first == host && m.second == path; });
  call.ReplySuccess("");
}

void MountService::Umntall(IncomingCall& call) {
  std::string host = call.peer().HostString();
  std::erase_if(mounts_, [&](const auto& m) { return m.first == host; });
  call.ReplySuccess("");
}

void MountService::ListExports(IncomingCall& call) {
  const auto& all = exports_.all();
  std::vector<exportnode> nodes(all.size());
  std::vector<std::vector<groupnode>> groups(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const ExportConfig& c = all[i].config();
    groups[i].resize(c.clients.size());
    for (size_t g = 0; g < c.clients.size(); ++g) {
      groups[i][g].gr_name = const_cast<char*>(c.clients[g].text().c_str());
      groups[i][g].gr_next = g + 1 < c.clients.size() ? &groups[i][g + 1] : nullptr;
    }
    nodes[i].ex_dir = const_cast<char*>(c.path.c_str());
    nodes[i].ex_groups = groups[i].empty() ? nullptr : &groups[i][0];
    nodes[i].ex_next = i + 1 < nodes.size() ? &nodes[i + 1] : nullptr;
  }
  exports head = nodes.empty() ? nullptr : &nodes[0];
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_exports), &head, &out);
  call.ReplySuccess(out);
}

}  // namespace nfsedge
