// NfsConnection: the procedures the workloads use, each a libnfs raw async
// call plus the decoding of its reply.

// clang-format off
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
// clang-format on

#include <cstring>

#include "nfs_connection.h"

namespace nfsedge::bench {
namespace {

harness::Fattr ToFattr(const fattr3& a) {
  harness::Fattr f;
  f.type = a.type;
  f.mode = a.mode;
  f.nlink = a.nlink;
  f.uid = a.uid;
  f.gid = a.gid;
  f.size = a.size;
  f.used = a.used;
  f.fsid = a.fsid;
  f.fileid = a.fileid;
  f.atime = {a.atime.seconds, a.atime.nseconds};
  f.mtime = {a.mtime.seconds, a.mtime.nseconds};
  f.ctime = {a.ctime.seconds, a.ctime.nseconds};
  return f;
}

std::optional<harness::Fattr> ToFattr(const post_op_attr& a) {
  if (!a.attributes_follow) return std::nullopt;
  return ToFattr(a.post_op_attr_u.attributes);
}

std::string Bytes(const char* p, size_t n) { return p ? std::string(p, n) : std::string(); }
std::string ToString(const nfs_fh3& fh) { return Bytes(fh.data.data_val, fh.data.data_len); }

// The result points into `bytes`: it must outlive the queueing call.
nfs_fh3 ToFh(const std::string& bytes) {
  nfs_fh3 fh{};
  fh.data.data_len = static_cast<u_int>(bytes.size());
  fh.data.data_val = const_cast<char*>(bytes.data());
  return fh;
}

char* Str(const std::string& s) { return const_cast<char*>(s.c_str()); }

}  // namespace

Status NfsConnection::Mnt(const std::string& path, Callback cb) {
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<mountres3*>(data);
    r->status = res->fhs_status;
    if (res->fhs_status == MNT3_OK) {
      const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
      r->fh = Bytes(fh.fhandle3_val, fh.fhandle3_len);
    }
  };
  return Queue("MOUNT3.MNT", std::move(cb), decode, [&](void* p) {
    return rpc_mount3_mnt_async(rpc_, &NfsConnection::OnReply, Str(path), p);
  });
}

Status NfsConnection::Fsinfo(const std::string& fh, Callback cb) {
  FSINFO3args args{};
  args.fsroot = ToFh(fh);
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<FSINFO3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      const FSINFO3resok& ok = res->FSINFO3res_u.resok;
      r->rtmax = ok.rtmax;
      r->wtmax = ok.wtmax;
      r->dtpref = ok.dtpref;
      r->attr = ToFattr(ok.obj_attributes);
    }
  };
  return Queue("NFS3.FSINFO", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_fsinfo_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Getattr(const std::string& fh, Callback cb) {
  GETATTR3args args{};
  args.object = ToFh(fh);
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<GETATTR3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) r->attr = ToFattr(res->GETATTR3res_u.resok.obj_attributes);
  };
  return Queue("NFS3.GETATTR", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_getattr_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Lookup(const std::string& dir, const std::string& name, Callback cb) {
  LOOKUP3args args{};
  args.what.dir = ToFh(dir);
  args.what.name = Str(name);
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<LOOKUP3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      r->fh = ToString(res->LOOKUP3res_u.resok.object);
      r->attr = ToFattr(res->LOOKUP3res_u.resok.obj_attributes);
    }
  };
  return Queue("NFS3.LOOKUP", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_lookup_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Access(const std::string& fh, uint32_t bits, Callback cb) {
  ACCESS3args args{};
  args.object = ToFh(fh);
  args.access = bits;
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<ACCESS3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      r->access = res->ACCESS3res_u.resok.access;
      r->attr = ToFattr(res->ACCESS3res_u.resok.obj_attributes);
    }
  };
  return Queue("NFS3.ACCESS", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_access_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Read(const std::string& fh, uint64_t offset, uint32_t count, Callback cb) {
  READ3args args{};
  args.file = ToFh(fh);
  args.offset = offset;
  args.count = count;
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<READ3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      const READ3resok& ok = res->READ3res_u.resok;
      r->count = ok.count;
      r->eof = ok.eof;
      r->data = ok.data.data_val;
      // A count that disagrees with the data is reported as a short read.
      if (ok.data.data_len < r->count) r->count = ok.data.data_len;
      r->attr = ToFattr(ok.file_attributes);
    }
  };
  return Queue("NFS3.READ", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_read_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Write(const std::string& fh, uint64_t offset, const char* data, uint32_t len,
                            harness::Stable stable, Callback cb) {
  WRITE3args args{};
  args.file = ToFh(fh);
  args.offset = offset;
  args.count = len;
  args.stable = static_cast<stable_how>(stable);
  args.data.data_len = len;
  args.data.data_val = const_cast<char*>(data);
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<WRITE3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      const WRITE3resok& ok = res->WRITE3res_u.resok;
      r->count = ok.count;
      r->committed = ok.committed;
      r->verf = Bytes(ok.verf, NFS3_WRITEVERFSIZE);
      r->attr = ToFattr(ok.file_wcc.after);
    }
  };
  return Queue("NFS3.WRITE", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_write_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Commit(const std::string& fh, uint64_t offset, uint32_t count, Callback cb) {
  COMMIT3args args{};
  args.file = ToFh(fh);
  args.offset = offset;
  args.count = count;
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<COMMIT3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      r->verf = Bytes(res->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
      r->attr = ToFattr(res->COMMIT3res_u.resok.file_wcc.after);
    }
  };
  return Queue("NFS3.COMMIT", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_commit_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Create(const std::string& dir, const std::string& name, Callback cb) {
  CREATE3args args{};
  args.where.dir = ToFh(dir);
  args.where.name = Str(name);
  args.how.mode = UNCHECKED;
  args.how.createhow3_u.obj_attributes.mode.set_it = 1;
  args.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<CREATE3res*>(data);
    r->status = res->status;
    if (res->status == NFS3_OK) {
      const CREATE3resok& ok = res->CREATE3res_u.resok;
      if (ok.obj.handle_follows) r->fh = ToString(ok.obj.post_op_fh3_u.handle);
      r->attr = ToFattr(ok.obj_attributes);
    }
  };
  return Queue("NFS3.CREATE", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_create_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

Status NfsConnection::Readdirplus(const std::string& dir, uint64_t cookie,
                                  const std::string& cookieverf, uint32_t dircount,
                                  uint32_t maxcount, Callback cb) {
  READDIRPLUS3args args{};
  args.dir = ToFh(dir);
  args.cookie = cookie;
  std::memcpy(args.cookieverf, cookieverf.data(),
              std::min(cookieverf.size(), sizeof(args.cookieverf)));
  args.dircount = dircount;
  args.maxcount = maxcount;
  auto decode = [](void* data, NfsReply* r) {
    auto* res = static_cast<READDIRPLUS3res*>(data);
    r->status = res->status;
    if (res->status != NFS3_OK) return;
    const READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
    r->cookieverf = Bytes(ok.cookieverf, NFS3_COOKIEVERFSIZE);
    r->eof = ok.reply.eof;
    for (const entryplus3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
      harness::DirEntry d;
      d.fileid = e->fileid;
      d.name = e->name ? e->name : "";
      d.cookie = e->cookie;
      d.attr = ToFattr(e->name_attributes);
      if (e->name_handle.handle_follows) d.fh = ToString(e->name_handle.post_op_fh3_u.handle);
      r->entries.push_back(std::move(d));
    }
  };
  return Queue("NFS3.READDIRPLUS", std::move(cb), decode, [&](void* p) {
    return rpc_nfs3_readdirplus_async(rpc_, &NfsConnection::OnReply, &args, p);
  });
}

}  // namespace nfsedge::bench
