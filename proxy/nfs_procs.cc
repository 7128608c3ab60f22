#include "proxy/nfs_procs.h"

#include <cstring>

#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

using Handles = std::vector<const nfs_fh3*>;

// Argument handle extractors.
template <typename Args, nfs_fh3 Args::*field>
void One(const void* a, Handles* out) {
  out->push_back(&(static_cast<const Args*>(a)->*field));
}
template <typename Args, diropargs3 Args::*field>
void Dir(const void* a, Handles* out) {
  out->push_back(&(static_cast<const Args*>(a)->*field).dir);
}
void RenameArgs(const void* a, Handles* out) {
  const auto* r = static_cast<const RENAME3args*>(a);
  out->push_back(&r->from.dir);
  out->push_back(&r->to.dir);
}
void LinkArgs(const void* a, Handles* out) {
  const auto* l = static_cast<const LINK3args*>(a);
  out->push_back(&l->file);
  out->push_back(&l->link.dir);
}

// Result handle extractors (called only for NFS3_OK results).
void LookupRes(const void* r, Handles* out) {
  out->push_back(&static_cast<const LOOKUP3res*>(r)->LOOKUP3res_u.resok.object);
}
void AddPostOpFh(const post_op_fh3& fh, Handles* out) {
  if (fh.handle_follows) out->push_back(&fh.post_op_fh3_u.handle);
}
void CreateRes(const void* r, Handles* out) {
  AddPostOpFh(static_cast<const CREATE3res*>(r)->CREATE3res_u.resok.obj, out);
}
void MkdirRes(const void* r, Handles* out) {
  AddPostOpFh(static_cast<const MKDIR3res*>(r)->MKDIR3res_u.resok.obj, out);
}
void SymlinkRes(const void* r, Handles* out) {
  AddPostOpFh(static_cast<const SYMLINK3res*>(r)->SYMLINK3res_u.resok.obj, out);
}
void MknodRes(const void* r, Handles* out) {
  AddPostOpFh(static_cast<const MKNOD3res*>(r)->MKNOD3res_u.resok.obj, out);
}
void ReaddirplusRes(const void* r, Handles* out) {
  const auto* res = static_cast<const READDIRPLUS3res*>(r);
  for (const entryplus3* e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
    AddPostOpFh(e->name_handle, out);
  }
}

#define NFS_XDR(T) reinterpret_cast<xdrproc_t>(xdr_##T), sizeof(T)

constexpr uint32_t kIdem = kIdempotent;
constexpr uint32_t kMut = kMutating;

const NfsProc kProcs[kNfsProcCount] = {
    // libtirpc's xdr_void: C, like the rpcgen routines, so calling it through
    // xdrproc_t is what every XDR user does (through void(*)(), the type
    // that converts to any function pointer type without a warning).
    {0, "NULL", reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(xdr_void)), 0,
     reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(xdr_void)), 0, kIdem, nullptr,
     nullptr},
    {1, "GETATTR", NFS_XDR(GETATTR3args), NFS_XDR(GETATTR3res), kIdem | kCacheable,
     One<GETATTR3args, &GETATTR3args::object>, nullptr},
    // SETATTR is idempotent unless guarded; the handler checks the guard.
    {2, "SETATTR", NFS_XDR(SETATTR3args), NFS_XDR(SETATTR3res), kIdem | kMut,
     One<SETATTR3args, &SETATTR3args::object>, nullptr},
    {3, "LOOKUP", NFS_XDR(LOOKUP3args), NFS_XDR(LOOKUP3res), kIdem | kCacheable | kCreatesHandle,
     Dir<LOOKUP3args, &LOOKUP3args::what>, LookupRes},
    {4, "ACCESS", NFS_XDR(ACCESS3args), NFS_XDR(ACCESS3res), kIdem | kCacheable,
     One<ACCESS3args, &ACCESS3args::object>, nullptr},
    {5, "READLINK", NFS_XDR(READLINK3args), NFS_XDR(READLINK3res), kIdem | kCacheable,
     One<READLINK3args, &READLINK3args::symlink>, nullptr},
    {6, "READ", NFS_XDR(READ3args), NFS_XDR(READ3res), kIdem | kDataRead,
     One<READ3args, &READ3args::file>, nullptr},
    {7, "WRITE", NFS_XDR(WRITE3args), NFS_XDR(WRITE3res), kIdem | kMut | kDataWrite,
     One<WRITE3args, &WRITE3args::file>, nullptr},
    {8, "CREATE", NFS_XDR(CREATE3args), NFS_XDR(CREATE3res), kMut | kCreatesHandle,
     Dir<CREATE3args, &CREATE3args::where>, CreateRes},
    {9, "MKDIR", NFS_XDR(MKDIR3args), NFS_XDR(MKDIR3res), kMut | kCreatesHandle,
     Dir<MKDIR3args, &MKDIR3args::where>, MkdirRes},
    {10, "SYMLINK", NFS_XDR(SYMLINK3args), NFS_XDR(SYMLINK3res), kMut | kCreatesHandle,
     Dir<SYMLINK3args, &SYMLINK3args::where>, SymlinkRes},
    {11, "MKNOD", NFS_XDR(MKNOD3args), NFS_XDR(MKNOD3res), kMut | kCreatesHandle,
     Dir<MKNOD3args, &MKNOD3args::where>, MknodRes},
    {12, "REMOVE", NFS_XDR(REMOVE3args), NFS_XDR(REMOVE3res), kMut,
     Dir<REMOVE3args, &REMOVE3args::object>, nullptr},
    {13, "RMDIR", NFS_XDR(RMDIR3args), NFS_XDR(RMDIR3res), kMut,
     Dir<RMDIR3args, &RMDIR3args::object>, nullptr},
    {14, "RENAME", NFS_XDR(RENAME3args), NFS_XDR(RENAME3res), kMut, RenameArgs, nullptr},
    {15, "LINK", NFS_XDR(LINK3args), NFS_XDR(LINK3res), kMut, LinkArgs, nullptr},
    {16, "READDIR", NFS_XDR(READDIR3args), NFS_XDR(READDIR3res), kIdem | kCacheable,
     One<READDIR3args, &READDIR3args::dir>, nullptr},
    {17, "READDIRPLUS", NFS_XDR(READDIRPLUS3args), NFS_XDR(READDIRPLUS3res),
     kIdem | kCacheable | kCreatesHandle, One<READDIRPLUS3args, &READDIRPLUS3args::dir>,
     ReaddirplusRes},
    {18, "FSSTAT", NFS_XDR(FSSTAT3args), NFS_XDR(FSSTAT3res), kIdem | kCacheable,
     One<FSSTAT3args, &FSSTAT3args::fsroot>, nullptr},
    {19, "FSINFO", NFS_XDR(FSINFO3args), NFS_XDR(FSINFO3res), kIdem | kCacheable,
     One<FSINFO3args, &FSINFO3args::fsroot>, nullptr},
    {20, "PATHCONF", NFS_XDR(PATHCONF3args), NFS_XDR(PATHCONF3res), kIdem | kCacheable,
     One<PATHCONF3args, &PATHCONF3args::object>, nullptr},
    // COMMIT changes no file system object (only makes data stable), so a
    // read-only export still answers it.
    {21, "COMMIT", NFS_XDR(COMMIT3args), NFS_XDR(COMMIT3res), kIdem,
     One<COMMIT3args, &COMMIT3args::file>, nullptr},
};

#undef NFS_XDR

}  // namespace

const NfsProc* FindNfsProc(uint32_t proc) {
  return proc < kNfsProcCount ? &kProcs[proc] : nullptr;
}

bool NfsProcSafeToRepeat(uint32_t proc) {
  const NfsProc* p = FindNfsProc(proc);
  return p != nullptr && (p->flags & kIdempotent) && !(p->flags & kMutating);
}

XdrBox::XdrBox(xdrproc_t xdr, size_t size)
    : xdr_(xdr), storage_((size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1) {
  std::memset(storage_.data(), 0, storage_.size() * sizeof(std::max_align_t));
}

XdrBox::~XdrBox() { xdr_free(xdr_, static_cast<char*>(get())); }

bool XdrBox::Decode(std::string_view data) { return XdrDecode(xdr_, get(), data); }

bool XdrBox::Encode(std::string* out) const { return XdrEncode(xdr_, get(), out); }

std::string EncodeNfsError(const NfsProc& p, nfsstat3 status) {
  XdrBox res(p.res_xdr, p.res_size);
  // Every NFSv3 result is a union whose discriminant, the status, comes
  // first; all-zero failure arms mean "no attributes follow".
  std::memcpy(res.get(), &status, sizeof(status));
  std::string out;
  res.Encode(&out);
  return out;
}

}  // namespace nfsedge
