// RawNfs: the 22 NFSv3 procedures.

#include <cstring>

#include "harness/raw_nfs_impl.h"

namespace nfsedge::harness {
namespace {

std::string Verf(const char* v, size_t n) { return std::string(v, n); }

// Copies an 8-byte verifier; shorter input is zero-padded.
void SetVerf(char* dst, const std::string& src, size_t n) {
  std::memset(dst, 0, n);
  std::memcpy(dst, src.data(), std::min(n, src.size()));
}

}  // namespace

NfsResult RawNfs::Null() {
  NfsResult r;
  impl_->Call(
      &r, [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_null_async(rpc, cb, p); },
      [&](void*) { r.status = kNfs3Ok; }, timeout_);
  return r;
}

GetattrResult RawNfs::Getattr(const std::string& fh) {
  GetattrResult r;
  GETATTR3args args{};
  args.object = ToFh(fh);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_getattr_async(rpc, cb, &args, p);
      },
      [&](void* data) {
        auto* res = static_cast<GETATTR3res*>(data);
        r.status = res->status;
        if (res->status == NFS3_OK) r.attr = ToFattr(res->GETATTR3res_u.resok.obj_attributes);
      },
      timeout_);
  return r;
}

WccResult RawNfs::Setattr(const std::string& fh, const Sattr& attr,
                          std::optional<NfsTime> guard_ctime) {
  WccResult r;
  SETATTR3args args{};
  args.object = ToFh(fh);
  args.new_attributes = ToSattr(attr);
  args.guard.check = guard_ctime.has_value();
  if (guard_ctime)
    args.guard.sattrguard3_u.obj_ctime = {guard_ctime->seconds, guard_ctime->nseconds};
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_setattr_async(rpc, cb, &args, p);
      },
      [&](void* data) {
        auto* res = static_cast<SETATTR3res*>(data);
        r.status = res->status;
        r.wcc = ToWcc(res->status == NFS3_OK ? res->SETATTR3res_u.resok.obj_wcc
                                             : res->SETATTR3res_u.resfail.obj_wcc);
      },
      timeout_);
  return r;
}

LookupResult RawNfs::Lookup(const std::string& dir, const std::string& name) {
  LookupResult r;
  LOOKUP3args args{};
  args.what.dir = ToFh(dir);
  args.what.name = Str(name);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_lookup_async(rpc, cb, &args, p);
      },
      [&](void* data) {
        auto* res = static_cast<LOOKUP3res*>(data);
        r.status = res->status;
        if (res->status == NFS3_OK) {
          const LOOKUP3resok& ok = res->LOOKUP3res_u.resok;
          r.fh = ToString(ok.object);
          r.attr = ToFattr(ok.obj_attributes);
          r.dir_attr = ToFattr(ok.dir_attributes);
        } else {
          r.dir_attr = ToFattr(res->LOOKUP3res_u.resfail.dir_attributes);
        }
      },
      timeout_);
  return r;
}

AccessResult RawNfs::Access(const std::string& fh, uint32_t access) {
  AccessResult r;
  ACCESS3args args{};
  args.object = ToFh(fh);
  args.access = access;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_access_async(rpc, cb, &args, p);
      },
      [&](void* data) {
        auto* res = static_cast<ACCESS3res*>(data);
        r.status = res->status;
        if (res->status == NFS3_OK) {
          r.access = res->ACCESS3res_u.resok.access;
          r.attr = ToFattr(res->ACCESS3res_u.resok.obj_attributes);
        }
      },
      timeout_);
  return r;
}

ReadlinkResult RawNfs::Readlink(const std::string& fh) {
  ReadlinkResult r;
  READLINK3args args{};
  args.symlink = ToFh(fh);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_readlink_async(rpc, cb, &args, p);
      },
      [&](void* data) {
        auto* res = static_cast<READLINK3res*>(data);
        r.status = res->status;
        if (res->status == NFS3_OK && res->READLINK3res_u.resok.data) {
          r.target = res->READLINK3res_u.resok.data;
        }
      },
      timeout_);
  return r;
}

ReadResult RawNfs::Read(const std::string& fh, uint64_t offset, uint32_t count) {
  ReadResult r;
  READ3args args{};
  args.file = ToFh(fh);
  args.offset = offset;
  args.count = count;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_read_async(rpc, cb, &args, p); },
      [&](void* data) {
        auto* res = static_cast<READ3res*>(data);
        r.status = res->status;
        if (res->status == NFS3_OK) {
          const READ3resok& ok = res->READ3res_u.resok;
          r.count = ok.count;
          r.eof = ok.eof;
          r.data.assign(ok.data.data_val ? ok.data.data_val : "", ok.data.data_len);
          r.attr = ToFattr(ok.file_attributes);
        }
      },
      timeout_);
  return r;
}

WriteResult RawNfs::Write(const std::string& fh, uint64_t offset, const std::string& data,
                          Stable stable) {
  WriteResult r;
  WRITE3args args{};
  args.file = ToFh(fh);
  args.offset = offset;
  args.count = static_cast<count3>(data.size());
  args.stable = static_cast<stable_how>(stable);
  args.data.data_len = static_cast<u_int>(data.size());
  args.data.data_val = const_cast<char*>(data.data());
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_write_async(rpc, cb, &args, p); },
      [&](void* d) {
        auto* res = static_cast<WRITE3res*>(d);
        r.status = res->status;
        if (res->status == NFS3_OK) {
          const WRITE3resok& ok = res->WRITE3res_u.resok;
          r.count = ok.count;
          r.committed = ok.committed;
          r.verf = Verf(ok.verf, NFS3_WRITEVERFSIZE);
          r.wcc = ToWcc(ok.file_wcc);
        } else {
          r.wcc = ToWcc(res->WRITE3res_u.resfail.file_wcc);
        }
      },
      timeout_);
  return r;
}

namespace {

// Decoder shared by CREATE, MKDIR, SYMLINK and MKNOD (same result layout).
template <typename Res, typename Ok, typename Fail>
void DecodeCreate(const Res* res, const Ok& ok, const Fail& fail, CreateResult* r) {
  r->status = res->status;
  if (res->status == NFS3_OK) {
    r->fh = ToHandle(ok.obj);
    r->attr = ToFattr(ok.obj_attributes);
    r->dir_wcc = ToWcc(ok.dir_wcc);
  } else {
    r->dir_wcc = ToWcc(fail.dir_wcc);
  }
}

}  // namespace

CreateResult RawNfs::Create(const std::string& dir, const std::string& name, const Sattr& attr,
                            bool guarded) {
  CreateResult r;
  CREATE3args args{};
  args.where.dir = ToFh(dir);
  args.where.name = Str(name);
  args.how.mode = guarded ? GUARDED : UNCHECKED;
  if (guarded) {
    args.how.createhow3_u.g_obj_attributes = ToSattr(attr);
  } else {
    args.how.createhow3_u.obj_attributes = ToSattr(attr);
  }
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_create_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<CREATE3res*>(d);
        DecodeCreate(res, res->CREATE3res_u.resok, res->CREATE3res_u.resfail, &r);
      },
      timeout_);
  return r;
}

CreateResult RawNfs::CreateExclusive(const std::string& dir, const std::string& name,
                                     const std::string& verifier) {
  CreateResult r;
  CREATE3args args{};
  args.where.dir = ToFh(dir);
  args.where.name = Str(name);
  args.how.mode = EXCLUSIVE;
  SetVerf(args.how.createhow3_u.verf, verifier, NFS3_CREATEVERFSIZE);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_create_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<CREATE3res*>(d);
        DecodeCreate(res, res->CREATE3res_u.resok, res->CREATE3res_u.resfail, &r);
      },
      timeout_);
  return r;
}

CreateResult RawNfs::Mkdir(const std::string& dir, const std::string& name, const Sattr& attr) {
  CreateResult r;
  MKDIR3args args{};
  args.where.dir = ToFh(dir);
  args.where.name = Str(name);
  args.attributes = ToSattr(attr);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_mkdir_async(rpc, cb, &args, p); },
      [&](void* d) {
        auto* res = static_cast<MKDIR3res*>(d);
        DecodeCreate(res, res->MKDIR3res_u.resok, res->MKDIR3res_u.resfail, &r);
      },
      timeout_);
  return r;
}

CreateResult RawNfs::Symlink(const std::string& dir, const std::string& name,
                             const std::string& target, const Sattr& attr) {
  CreateResult r;
  SYMLINK3args args{};
  args.where.dir = ToFh(dir);
  args.where.name = Str(name);
  args.symlink.symlink_attributes = ToSattr(attr);
  args.symlink.symlink_data = Str(target);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_symlink_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<SYMLINK3res*>(d);
        DecodeCreate(res, res->SYMLINK3res_u.resok, res->SYMLINK3res_u.resfail, &r);
      },
      timeout_);
  return r;
}

CreateResult RawNfs::Mknod(const std::string& dir, const std::string& name, FileType type,
                           const Sattr& attr, uint32_t major, uint32_t minor) {
  CreateResult r;
  MKNOD3args args{};
  args.where.dir = ToFh(dir);
  args.where.name = Str(name);
  args.what.type = static_cast<ftype3>(type);
  switch (type) {
    case FileType::kChr:
    case FileType::kBlk: {
      devicedata3& dev = type == FileType::kChr ? args.what.mknoddata3_u.chr_device
                                                : args.what.mknoddata3_u.blk_device;
      dev.dev_attributes = ToSattr(attr);
      dev.spec = {major, minor};
      break;
    }
    case FileType::kSock:
      args.what.mknoddata3_u.sock_attributes = ToSattr(attr);
      break;
    case FileType::kFifo:
      args.what.mknoddata3_u.pipe_attributes = ToSattr(attr);
      break;
    default:
      break;  // Other types carry no data (the server answers BADTYPE).
  }
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_mknod_async(rpc, cb, &args, p); },
      [&](void* d) {
        auto* res = static_cast<MKNOD3res*>(d);
        DecodeCreate(res, res->MKNOD3res_u.resok, res->MKNOD3res_u.resfail, &r);
      },
      timeout_);
  return r;
}

WccResult RawNfs::Remove(const std::string& dir, const std::string& name) {
  WccResult r;
  REMOVE3args args{};
  args.object.dir = ToFh(dir);
  args.object.name = Str(name);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_remove_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<REMOVE3res*>(d);
        r.status = res->status;
        r.wcc = ToWcc(res->status == NFS3_OK ? res->REMOVE3res_u.resok.dir_wcc
                                             : res->REMOVE3res_u.resfail.dir_wcc);
      },
      timeout_);
  return r;
}

WccResult RawNfs::Rmdir(const std::string& dir, const std::string& name) {
  WccResult r;
  RMDIR3args args{};
  args.object.dir = ToFh(dir);
  args.object.name = Str(name);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_rmdir_async(rpc, cb, &args, p); },
      [&](void* d) {
        auto* res = static_cast<RMDIR3res*>(d);
        r.status = res->status;
        r.wcc = ToWcc(res->status == NFS3_OK ? res->RMDIR3res_u.resok.dir_wcc
                                             : res->RMDIR3res_u.resfail.dir_wcc);
      },
      timeout_);
  return r;
}

RenameResult RawNfs::Rename(const std::string& from_dir, const std::string& from_name,
                            const std::string& to_dir, const std::string& to_name) {
  RenameResult r;
  RENAME3args args{};
  args.from.dir = ToFh(from_dir);
  args.from.name = Str(from_name);
  args.to.dir = ToFh(to_dir);
  args.to.name = Str(to_name);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_rename_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<RENAME3res*>(d);
        r.status = res->status;
        const auto& w = res->status == NFS3_OK ? res->RENAME3res_u.resok.fromdir_wcc
                                               : res->RENAME3res_u.resfail.fromdir_wcc;
        const auto& t = res->status == NFS3_OK ? res->RENAME3res_u.resok.todir_wcc
                                               : res->RENAME3res_u.resfail.todir_wcc;
        r.from_wcc = ToWcc(w);
        r.to_wcc = ToWcc(t);
      },
      timeout_);
  return r;
}

LinkResult RawNfs::Link(const std::string& fh, const std::string& dir, const std::string& name) {
  LinkResult r;
  LINK3args args{};
  args.file = ToFh(fh);
  args.link.dir = ToFh(dir);
  args.link.name = Str(name);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_nfs3_link_async(rpc, cb, &args, p); },
      [&](void* d) {
        auto* res = static_cast<LINK3res*>(d);
        r.status = res->status;
        if (res->status == NFS3_OK) {
          r.attr = ToFattr(res->LINK3res_u.resok.file_attributes);
          r.dir_wcc = ToWcc(res->LINK3res_u.resok.linkdir_wcc);
        } else {
          r.attr = ToFattr(res->LINK3res_u.resfail.file_attributes);
          r.dir_wcc = ToWcc(res->LINK3res_u.resfail.linkdir_wcc);
        }
      },
      timeout_);
  return r;
}

}  // namespace nfsedge::harness
