#include "proxy/mount_service.h"

#include <algorithm>

#include "proxy/nfs_procs.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

bool DecodeDirpath(std::string_view args, std::string* path) {
  XdrValue<char*> v(reinterpret_cast<xdrproc_t>(xdr_dirpath));
  if (!v.Decode(args) || v.get() == nullptr) return false;
  path->clear();
  for (const char* c = v.get(); *c != '\0'; ++c) {
    if (*c != '/' || path->empty() || path->back() != '/') path->push_back(*c);
  }
  if (path->size() > 1 && path->back() == '/') path->pop_back();
  return true;
}

namespace {

enum MountProc : uint32_t { kNull = 0, kMnt = 1, kDump = 2, kUmnt = 3, kUmntall = 4, kExport = 5 };

// The MNT status for an upstream LOOKUP's failure on the way down.
mountstat3 MountStatusOf(nfsstat3 st) {
  switch (st) {
    case NFS3ERR_NOENT:
      return MNT3ERR_NOENT;
    case NFS3ERR_ACCES:
    case NFS3ERR_PERM:
      return MNT3ERR_ACCES;
    case NFS3ERR_NOTDIR:
      return MNT3ERR_NOTDIR;
    case NFS3ERR_NAMETOOLONG:
      return MNT3ERR_NAMETOOLONG;
    case NFS3ERR_STALE:
    case NFS3ERR_BADHANDLE:
      return MNT3ERR_NOENT;
    default:
      return MNT3ERR_IO;
  }
}

}  // namespace

struct MountService::Walk {
  std::shared_ptr<IncomingCall> call;
  uint32_t export_id = 0;
  std::string path;                     // as the client asked
  std::vector<std::string> components;  // below the export's path
  size_t next = 0;
  OpaqueAuth cred;                      // mapped
  std::string fh;                       // where the walk is
  std::string full_args;                // MNT of the whole path, upstream
  uint64_t rules = 0;                   // ExportTable::updates() when it began
  int restarts = 0;                     // MountService::Restart
};

MountService::MountService(const ExportTable& exports, HandleRegistry& handles,
                           RpcCaller& upstream, RpcCaller* nfs)
    : exports_(exports), handles_(handles), upstream_(upstream), nfs_(nfs) {}

void MountService::Handle(std::shared_ptr<IncomingCall> call) {
  switch (call->header().proc) {
    case kNull:
      call->ReplySuccess("");
      return;
    case kMnt:
      if (call->header().vers < kMountVersion) {
        call->ReplyAccepted(kProcUnavail);  // an NFSv2 handle
        return;
      }
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

void MountService::ReplyMounted(IncomingCall& call, const std::string& fh) {
  // The credentials the proxy takes (rpc/auth_sys.h); AUTH_NONE is not
  // listed, as Linux's mountd leaves it out for sec=sys.
  int flavors[] = {static_cast<int>(kAuthSys)};
  mountres3 res{};
  res.fhs_status = MNT3_OK;
  res.mountres3_u.mountinfo.fhandle.fhandle3_val = const_cast<char*>(fh.data());
  res.mountres3_u.mountinfo.fhandle.fhandle3_len = static_cast<u_int>(fh.size());
  res.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
  res.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 1;
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_mountres3), &res, &out);
  call.ReplySuccess(out);
}

void MountService::Restart(const std::shared_ptr<IncomingCall>& call, const std::string& path,
                           int restarts) {
  if (restarts < kMaxRestarts) {
    Mnt(call, restarts + 1);
    return;
  }
  NFSEDGE_LOG(kWarn) << "MNT " << path << " from " << call->peer().ToString() << ": the rules "
                     << "changed " << kMaxRestarts << " times while it was on its way; refused";
  ReplyMountError(*call, MNT3ERR_SERVERFAULT);
}

void MountService::Mnt(const std::shared_ptr<IncomingCall>& call, int restarts) {
  std::string path;
  if (!DecodeDirpath(call->args(), &path)) {
    call->ReplyAccepted(kGarbageArgs);
    return;
  }
  std::string upstream_path;
  const bool clean = IsCleanAbsolutePath(path);
  // The deepest export that admits the client; else the deepest at all, for
  // the error.
  const Export* exp = clean ? exports_.FindByPath(path, &upstream_path, &call->peer()) : nullptr;
  if (!exp && clean) exp = exports_.FindByPath(path, &upstream_path);
  if (!exp) {
    NFSEDGE_LOG(kInfo) << "MNT " << path << " from " << call->peer().ToString()
                       << " refused: not exported";
    ReplyMountError(*call, MNT3ERR_ACCES);  // as Linux's mountd: "access denied by server"
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
  // Below the export's own path: the upstream mounts the export's root, and
  // the rest is walked from it (its mountd would follow symlinks).
  const std::string& own = exp->config().path;
  std::vector<std::string> below;
  if (path != own) {
    const size_t skip = own == "/" ? 1 : own.size() + 1;
    for (size_t at = skip; at <= path.size();) {
      const size_t end = std::min(path.find('/', at), path.size());
      below.push_back(path.substr(at, end - at));
      at = end + 1;
    }
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
  if (!below.empty() && nfs_ == nullptr) {
    NFSEDGE_LOG(kInfo) << "MNT " << path << " from " << call->peer().ToString()
                       << " refused: only the export's own path may be mounted";
    ReplyMountError(*call, MNT3ERR_ACCES);
    return;
  }
  std::string full_args = args;
  if (!below.empty()) {
    args.clear();
    std::string root_path = exp->config().upstream_path;
    char* rp = root_path.data();
    XdrEncode(reinterpret_cast<xdrproc_t>(xdr_dirpath), &rp, &args);
  }
  uint32_t export_id = exp->id();
  const bool own_path = below.empty();  // `below` moves into the call below
  if (own_path && upstream_out_ && upstream_out_() &&
      MountKnownRoot(*call, export_id, path)) {
    return;
  }
  const OpaqueAuth cred = exp->MapCredential(call->header().cred);
  Status s = upstream_.Call(
      kMountProgram, kMountVersion, kMnt, cred, args,
      [this, call, export_id, path, cred, below = std::move(below),
       full_args = std::move(full_args), rules = exports_.updates(),
       restarts](StatusOr<RpcReply> r) {
        if (exports_.updates() != rules) {
          Restart(call, path, restarts);  // a reload meanwhile: under the rules in force now
          return;
        }
        if (!r.ok()) {
          NFSEDGE_LOG(kWarn) << "MNT " << path << ": upstream: " << r.status().ToString();
          if (!below.empty() || !MountKnownRoot(*call, export_id, path)) {
            ReplyMountError(*call, MNT3ERR_SERVERFAULT);
          }
          return;
        }
        if (RefusesTheProgram(r->header)) {
          NFSEDGE_LOG(kWarn) << "MNT " << path << ": the upstream refused the program ("
                             << DescribeRefusal(r->header) << ")";
          ReplyMountError(*call, MNT3ERR_SERVERFAULT);
          return;
        }
        if (r->header.reply_stat == kMsgAccepted && r->header.accept_stat == kSuccess) {
          XdrValue<mountres3> res(reinterpret_cast<xdrproc_t>(xdr_mountres3));
          if (!res.Decode(r->results())) {
            NFSEDGE_LOG(kWarn) << "MNT " << path << ": upstream results do not decode";
            ReplyMountError(*call, MNT3ERR_SERVERFAULT);
            return;
          }
          if (res->fhs_status == MNT3_OK) {
            const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
            const std::string root(fh.fhandle3_val, fh.fhandle3_len);
            // The export's own root: ".." from it leaves the export.
            handles_.Add(root, export_id, true);
            if (!below.empty()) {
              auto w = std::make_shared<Walk>();
              w->call = call;
              w->export_id = export_id;
              w->path = path;
              w->components = below;
              w->cred = cred;
              w->fh = root;
              w->full_args = full_args;
              w->rules = rules;
              w->restarts = restarts;
              WalkNext(w);
              return;
            }
            RecordMount(call->peer().HostString(), path);
            NFSEDGE_LOG(kInfo) << "MNT " << path << " by " << call->peer().ToString();
            ReplyMounted(*call, root);
            return;
          }
        }
        StoreBE32(r->record.data(), call->xid());
        call->Reply(std::move(r->record));
      });
  if (!s.ok()) {
    NFSEDGE_LOG(kWarn) << "MNT " << path << ": " << s.ToString();
    if (!own_path || !MountKnownRoot(*call, export_id, path)) {
      ReplyMountError(*call, MNT3ERR_SERVERFAULT);
    }
  }
}

bool MountService::MountKnownRoot(IncomingCall& call, uint32_t export_id,
                                  const std::string& path) {
  std::optional<std::string> root = handles_.RootOf(export_id);
  if (!root) return false;
  NFSEDGE_LOG(kWarn) << "MNT " << path << " by " << call.peer().ToString()
                     << ": the upstream cannot be reached; answered with the export's root"
                     << " handle from an earlier mount";
  RecordMount(call.peer().HostString(), path);
  ReplyMounted(call, *root);
  return true;
}

void MountService::WalkNext(const std::shared_ptr<Walk>& w) {
  // A reload since the walk began (clients, `secure`, squashing): the mount
  // starts over under the rules in force now, with the credential they map.
  if (exports_.updates() != w->rules) {
    Restart(w->call, w->path, w->restarts);
    return;
  }
  if (w->next == w->components.size()) {
    MountDone(w);
    return;
  }
  LOOKUP3args a{};
  a.what.dir.data.data_val = w->fh.data();
  a.what.dir.data.data_len = static_cast<u_int>(w->fh.size());
  std::string name = w->components[w->next];
  a.what.name = name.data();
  std::string args;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args), &a, &args);
  Status s = nfs_->Call(kNfsProgram, kNfsVersion, NFSPROC3_LOOKUP, w->cred, args,
                        [this, w](StatusOr<RpcReply> r) {
                          if (!r.ok() || r->header.reply_stat != kMsgAccepted ||
                              r->header.accept_stat != kSuccess) {
                            NFSEDGE_LOG(kWarn) << "MNT " << w->path << ": upstream LOOKUP failed";
                            ReplyMountError(*w->call, MNT3ERR_SERVERFAULT);
                            return;
                          }
                          XdrValue<LOOKUP3res> res(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res));
                          if (!res.Decode(r->results())) {
                            ReplyMountError(*w->call, MNT3ERR_SERVERFAULT);
                            return;
                          }
                          if (res->status != NFS3_OK) {
                            MountError(w, MountStatusOf(res->status));
                            return;
                          }
                          const LOOKUP3resok& ok = res->LOOKUP3res_u.resok;
                          const std::string fh(ok.object.data.data_val, ok.object.data.data_len);
                          if (ok.obj_attributes.attributes_follow) {
                            Descend(w, fh, ok.obj_attributes.post_op_attr_u.attributes.type);
                          } else {
                            DescendAfterGetattr(w, fh);  // post-op attributes are optional
                          }
                        });
  if (!s.ok()) {
    NFSEDGE_LOG(kWarn) << "MNT " << w->path << ": " << s.ToString();
    ReplyMountError(*w->call, MNT3ERR_SERVERFAULT);
  }
}

void MountService::Descend(const std::shared_ptr<Walk>& w, const std::string& fh, ftype3 type) {
  // Only a directory, known to be one: a symlink would lead out of the
  // export.
  if (type != NF3DIR) {
    NFSEDGE_LOG(kInfo) << "MNT " << w->path << " from " << w->call->peer().ToString()
                       << " refused: \"" << w->components[w->next] << "\" is not a directory";
    ReplyMountError(*w->call, MNT3ERR_NOTDIR);
    return;
  }
  // A directory of the export on the way down: its ".." (the directory
  // before it) is the export's too (NfsService::RefuseWayOut).
  handles_.Add(fh, w->export_id);
  w->fh = fh;
  w->next++;
  WalkNext(w);
}

void MountService::DescendAfterGetattr(const std::shared_ptr<Walk>& w, const std::string& fh) {
  GETATTR3args a{};
  std::string copy = fh;
  a.object.data.data_val = copy.data();
  a.object.data.data_len = static_cast<u_int>(copy.size());
  std::string args;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3args), &a, &args);
  Status s = nfs_->Call(kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, w->cred, args,
                        [this, w, fh](StatusOr<RpcReply> r) {
                          XdrValue<GETATTR3res> res(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
                          if (!Succeeded(r) || !res.Decode(r->results()) ||
                              res->status != NFS3_OK) {
                            NFSEDGE_LOG(kWarn) << "MNT " << w->path << ": upstream GETATTR failed";
                            ReplyMountError(*w->call, MNT3ERR_SERVERFAULT);
                            return;
                          }
                          Descend(w, fh, res->GETATTR3res_u.resok.obj_attributes.type);
                        });
  if (!s.ok()) {
    NFSEDGE_LOG(kWarn) << "MNT " << w->path << ": " << s.ToString();
    ReplyMountError(*w->call, MNT3ERR_SERVERFAULT);
  }
}

void MountService::MountError(const std::shared_ptr<Walk>& w, mountstat3 status) {
  // The upstream's own answer for the whole path, as a client of it would
  // get (servers differ: NOENT or ACCES for a missing directory), unless it
  // mounts it: then the path leads elsewhere than the walk found (a
  // symlink followed, or a race), and it is refused.
  Status s = upstream_.Call(
      kMountProgram, kMountVersion, kMnt, w->cred, w->full_args,
      [this, w, status](StatusOr<RpcReply> r) {
        if (r.ok() && r->header.reply_stat == kMsgAccepted && r->header.accept_stat == kSuccess &&
            r->results().size() >= 4 && LoadBE32(r->results().data()) != MNT3_OK) {
          StoreBE32(r->record.data(), w->call->xid());
          w->call->Reply(std::move(r->record));
          return;
        }
        ReplyMountError(*w->call, status == MNT3ERR_NOENT ? MNT3ERR_ACCES : status);
      });
  if (!s.ok()) ReplyMountError(*w->call, status);
}

void MountService::MountDone(const std::shared_ptr<Walk>& w) {
  handles_.Add(w->fh, w->export_id, /*root=*/false, /*mounted=*/true);
  RecordMount(w->call->peer().HostString(), w->path);
  NFSEDGE_LOG(kInfo) << "MNT " << w->path << " by " << w->call->peer().ToString();
  ReplyMounted(*w->call, w->fh);
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
