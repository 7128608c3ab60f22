// fuzz_seed_gen: writes the seed corpora of the fuzz targets: valid calls
// and replies of every NFSv3 and MOUNTv3 procedure, encoded with the
// project's XDR types, framed records, and config files.
//
//   fuzz_seed_gen DIR    writes DIR/<target>/<seed> (DIR/nfs3_args/07_WRITE...)
//
// The output is deterministic; tests/fuzz/corpus holds what it writes
// (ctest fuzz_seeds_current checks that they agree).
#include <rpc/xdr/mount3.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "proxy/nfs_procs.h"
#include "rpc/auth_sys.h"
#include "rpc/record_marking.h"
#include "rpc/rpc_message.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {
namespace {

namespace fs = std::filesystem;

class SeedWriter {
 public:
  explicit SeedWriter(fs::path dir) : dir_(std::move(dir)) {}

  void Add(const std::string& target, const std::string& name, const std::string& bytes) {
    fs::create_directories(dir_ / target);
    std::ofstream out(dir_ / target / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "fuzz_seed_gen: cannot write " << (dir_ / target / name) << "\n";
      ok_ = false;
    }
  }
  bool ok() const { return ok_; }

 private:
  fs::path dir_;
  bool ok_ = true;
};

template <typename T>
std::string Enc(bool_t (*proc)(XDR*, T*), const T& value) {
  std::string out;
  if (!XdrEncode(reinterpret_cast<xdrproc_t>(proc), &value, &out)) {
    std::cerr << "fuzz_seed_gen: a seed does not encode\n";
    std::exit(1);
  }
  return out;
}

std::string Byte(uint32_t b) { return std::string(1, static_cast<char>(b)); }

// Storage the encoded structures point into; lives for the whole run.
char kDirHandle[] = "fh3:export-7:dir:0000000000000002";
char kFileHandle[] = "fh3:export-7:file:0000000000000007";
char kName[] = "file.txt";
char kOtherName[] = "renamed.txt";
char kSubdir[] = "subdir";
char kLinkName[] = "link";
char kLinkTarget[] = "../target/file.txt";
char kData[] = "hello, nfsedge\n";
char kMountPath[] = "/export";
char kMountSubPath[] = "/export/data/projects";
char kRoot[] = "/";

nfs_fh3 Fh(char* bytes, size_t len) {
  nfs_fh3 fh{};
  fh.data.data_len = static_cast<u_int>(len);
  fh.data.data_val = bytes;
  return fh;
}
nfs_fh3 DirFh() { return Fh(kDirHandle, sizeof(kDirHandle) - 1); }
nfs_fh3 FileFh() { return Fh(kFileHandle, sizeof(kFileHandle) - 1); }

fattr3 Attr(ftype3 type, uint64_t fileid) {
  fattr3 a{};
  a.type = type;
  a.mode = type == NF3DIR ? 0755 : 0644;
  a.nlink = type == NF3DIR ? 3 : 1;
  a.uid = 1000;
  a.gid = 1000;
  a.size = type == NF3DIR ? 4096 : 15;
  a.used = 4096;
  a.fsid = 0x1234;
  a.fileid = fileid;
  a.atime = {1704067200, 1};
  a.mtime = {1704067100, 2};
  a.ctime = {1704067100, 3};
  return a;
}

post_op_attr PostOp(ftype3 type, uint64_t fileid) {
  post_op_attr p{};
  p.attributes_follow = TRUE;
  p.post_op_attr_u.attributes = Attr(type, fileid);
  return p;
}

wcc_data Wcc() {
  wcc_data w{};
  w.before.attributes_follow = TRUE;
  w.before.pre_op_attr_u.attributes = {4096, {1704067100, 2}, {1704067100, 3}};
  w.after = PostOp(NF3DIR, 2);
  return w;
}

sattr3 SetAll() {
  sattr3 s{};
  s.mode.set_it = TRUE;
  s.mode.set_mode3_u.mode = 0640;
  s.uid.set_it = TRUE;
  s.uid.set_uid3_u.uid = 1000;
  s.gid.set_it = TRUE;
  s.gid.set_gid3_u.gid = 1000;
  s.size.set_it = TRUE;
  s.size.set_size3_u.size = 0;
  s.atime.set_it = SET_TO_SERVER_TIME;
  s.mtime.set_it = SET_TO_CLIENT_TIME;
  s.mtime.set_mtime_u.mtime = {1704067200, 0};
  return s;
}

sattr3 SetMode() {
  sattr3 s{};
  s.mode.set_it = TRUE;
  s.mode.set_mode3_u.mode = 0755;
  return s;
}

diropargs3 Dirop(char* name) { return diropargs3{DirFh(), name}; }

// ---- NFSv3 arguments: one byte of procedure number, then the arguments.

// The first arguments written for each procedure, for the cache's seeds.
std::string g_args[kNfsProcCount];

void NfsArgs(SeedWriter* w) {
  auto add = [&](uint32_t proc, const char* variant, const std::string& args) {
    char name[64];
    std::snprintf(name, sizeof(name), "%02u_%s%s", proc, FindNfsProc(proc)->name, variant);
    w->Add("nfs3_args", name, Byte(proc) + args);
    if (g_args[proc].empty()) g_args[proc] = args;
  };
  add(0, "", "");
  add(1, "", Enc(xdr_GETATTR3args, GETATTR3args{FileFh()}));
  {
    SETATTR3args a{FileFh(), SetAll(), {}};
    a.guard.check = TRUE;
    a.guard.sattrguard3_u.obj_ctime = {1704067100, 3};
    add(2, "_guarded", Enc(xdr_SETATTR3args, a));
    add(2, "_mode", Enc(xdr_SETATTR3args, SETATTR3args{FileFh(), SetMode(), {}}));
  }
  add(3, "", Enc(xdr_LOOKUP3args, LOOKUP3args{Dirop(kName)}));
  add(4, "", Enc(xdr_ACCESS3args, ACCESS3args{FileFh(), 0x3f}));
  add(5, "", Enc(xdr_READLINK3args, READLINK3args{FileFh()}));
  add(6, "", Enc(xdr_READ3args, READ3args{FileFh(), 4096, 32768}));
  {
    WRITE3args a{FileFh(), 8192, sizeof(kData) - 1, FILE_SYNC, {}};
    a.data.data_len = sizeof(kData) - 1;
    a.data.data_val = kData;
    add(7, "", Enc(xdr_WRITE3args, a));
  }
  {
    CREATE3args a{Dirop(kName), {}};
    a.how.mode = UNCHECKED;
    a.how.createhow3_u.obj_attributes = SetAll();
    add(8, "_unchecked", Enc(xdr_CREATE3args, a));
    a.how.mode = GUARDED;
    a.how.createhow3_u.obj_attributes = SetMode();
    add(8, "_guarded", Enc(xdr_CREATE3args, a));
    a.how.mode = EXCLUSIVE;
    std::memcpy(a.how.createhow3_u.verf, "verifier", NFS3_CREATEVERFSIZE);
    add(8, "_exclusive", Enc(xdr_CREATE3args, a));
  }
  add(9, "", Enc(xdr_MKDIR3args, MKDIR3args{Dirop(kSubdir), SetMode()}));
  add(10, "", Enc(xdr_SYMLINK3args, SYMLINK3args{Dirop(kLinkName), {SetMode(), kLinkTarget}}));
  {
    MKNOD3args a{Dirop(kName), {}};
    a.what.type = NF3CHR;
    a.what.mknoddata3_u.device = {SetMode(), {1, 3}};
    add(11, "_chr", Enc(xdr_MKNOD3args, a));
    a.what.type = NF3FIFO;
    a.what.mknoddata3_u.pipe_attributes = SetMode();
    add(11, "_fifo", Enc(xdr_MKNOD3args, a));
  }
  add(12, "", Enc(xdr_REMOVE3args, REMOVE3args{Dirop(kName)}));
  add(13, "", Enc(xdr_RMDIR3args, RMDIR3args{Dirop(kSubdir)}));
  add(14, "", Enc(xdr_RENAME3args, RENAME3args{Dirop(kName), Dirop(kOtherName)}));
  add(15, "", Enc(xdr_LINK3args, LINK3args{FileFh(), Dirop(kOtherName)}));
  {
    READDIR3args a{DirFh(), 0, {}, 4096};
    add(16, "", Enc(xdr_READDIR3args, a));
    READDIRPLUS3args b{DirFh(), 3, {}, 1024, 8192};
    std::memcpy(b.cookieverf, "cookieve", NFS3_COOKIEVERFSIZE);
    add(17, "", Enc(xdr_READDIRPLUS3args, b));
  }
  add(18, "", Enc(xdr_FSSTAT3args, FSSTAT3args{DirFh()}));
  add(19, "", Enc(xdr_FSINFO3args, FSINFO3args{DirFh()}));
  add(20, "", Enc(xdr_PATHCONF3args, PATHCONF3args{DirFh()}));
  add(21, "", Enc(xdr_COMMIT3args, COMMIT3args{FileFh(), 0, 0}));
}

// ---- Upstream replies: one byte of procedure (22: MOUNT MNT), then the
// reply record.

std::string Reply(const std::string& results) {
  return EncodeAcceptedReply(0x5eed0001, kSuccess) + results;
}

std::string NfsOkResults(uint32_t proc) {
  switch (proc) {
    case 0:
      return "";
    case 1: {
      GETATTR3res r{};
      r.GETATTR3res_u.resok.obj_attributes = Attr(NF3REG, 7);
      return Enc(xdr_GETATTR3res, r);
    }
    case 2: {
      SETATTR3res r{};
      r.SETATTR3res_u.resok.obj_wcc = Wcc();
      return Enc(xdr_SETATTR3res, r);
    }
    case 3: {
      LOOKUP3res r{};
      r.LOOKUP3res_u.resok = {FileFh(), PostOp(NF3REG, 7), PostOp(NF3DIR, 2)};
      return Enc(xdr_LOOKUP3res, r);
    }
    case 4: {
      ACCESS3res r{};
      r.ACCESS3res_u.resok = {PostOp(NF3REG, 7), 0x1f};
      return Enc(xdr_ACCESS3res, r);
    }
    case 5: {
      READLINK3res r{};
      r.READLINK3res_u.resok = {PostOp(NF3LNK, 8), kLinkTarget};
      return Enc(xdr_READLINK3res, r);
    }
    case 6: {
      READ3res r{};
      r.READ3res_u.resok = {PostOp(NF3REG, 7), sizeof(kData) - 1, TRUE, {}};
      r.READ3res_u.resok.data.data_len = sizeof(kData) - 1;
      r.READ3res_u.resok.data.data_val = kData;
      return Enc(xdr_READ3res, r);
    }
    case 7: {
      WRITE3res r{};
      r.WRITE3res_u.resok.file_wcc = Wcc();
      r.WRITE3res_u.resok.count = sizeof(kData) - 1;
      r.WRITE3res_u.resok.committed = FILE_SYNC;
      std::memcpy(r.WRITE3res_u.resok.verf, "writever", NFS3_WRITEVERFSIZE);
      return Enc(xdr_WRITE3res, r);
    }
    case 8:
    case 9:
    case 10:
    case 11: {
      // CREATE, MKDIR, SYMLINK and MKNOD share one result layout.
      CREATE3res r{};
      r.CREATE3res_u.resok.obj.handle_follows = TRUE;
      r.CREATE3res_u.resok.obj.post_op_fh3_u.handle = FileFh();
      r.CREATE3res_u.resok.obj_attributes = PostOp(proc == 9 ? NF3DIR : NF3REG, 9);
      r.CREATE3res_u.resok.dir_wcc = Wcc();
      return Enc(xdr_CREATE3res, r);
    }
    case 12:
    case 13: {
      REMOVE3res r{};
      r.REMOVE3res_u.resok.dir_wcc = Wcc();
      return Enc(xdr_REMOVE3res, r);
    }
    case 14: {
      RENAME3res r{};
      r.RENAME3res_u.resok = {Wcc(), Wcc()};
      return Enc(xdr_RENAME3res, r);
    }
    case 15: {
      LINK3res r{};
      r.LINK3res_u.resok = {PostOp(NF3REG, 7), Wcc()};
      return Enc(xdr_LINK3res, r);
    }
    case 16: {
      static char dot[] = ".", dotdot[] = "..";
      entry3 e3{7, kName, 3, nullptr};
      entry3 e2{1, dotdot, 2, &e3};
      entry3 e1{2, dot, 1, &e2};
      READDIR3res r{};
      r.READDIR3res_u.resok.dir_attributes = PostOp(NF3DIR, 2);
      std::memcpy(r.READDIR3res_u.resok.cookieverf, "cookieve", NFS3_COOKIEVERFSIZE);
      r.READDIR3res_u.resok.reply = {&e1, TRUE};
      return Enc(xdr_READDIR3res, r);
    }
    case 17: {
      static char dot[] = ".";
      entryplus3 e2{7, kName, 2, PostOp(NF3REG, 7), {}, nullptr};
      e2.name_handle.handle_follows = TRUE;
      e2.name_handle.post_op_fh3_u.handle = FileFh();
      entryplus3 e1{2, dot, 1, PostOp(NF3DIR, 2), {}, &e2};
      e1.name_handle.handle_follows = TRUE;
      e1.name_handle.post_op_fh3_u.handle = DirFh();
      READDIRPLUS3res r{};
      r.READDIRPLUS3res_u.resok.dir_attributes = PostOp(NF3DIR, 2);
      std::memcpy(r.READDIRPLUS3res_u.resok.cookieverf, "cookieve", NFS3_COOKIEVERFSIZE);
      r.READDIRPLUS3res_u.resok.reply = {&e1, FALSE};
      return Enc(xdr_READDIRPLUS3res, r);
    }
    case 18: {
      FSSTAT3res r{};
      FSSTAT3resok& ok = r.FSSTAT3res_u.resok;
      ok.obj_attributes = PostOp(NF3DIR, 2);
      ok.tbytes = 1ull << 40;
      ok.fbytes = ok.abytes = 1ull << 39;
      ok.tfiles = 1000000;
      ok.ffiles = ok.afiles = 500000;
      return Enc(xdr_FSSTAT3res, r);
    }
    case 19: {
      FSINFO3res r{};
      FSINFO3resok& ok = r.FSINFO3res_u.resok;
      ok.obj_attributes = PostOp(NF3DIR, 2);
      ok.rtmax = ok.rtpref = ok.wtmax = ok.wtpref = 1 << 20;
      ok.rtmult = ok.wtmult = 4096;
      ok.dtpref = 65536;
      ok.maxfilesize = ~0ull;
      ok.time_delta = {0, 1};
      ok.properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
      return Enc(xdr_FSINFO3res, r);
    }
    case 20: {
      PATHCONF3res r{};
      r.PATHCONF3res_u.resok = {PostOp(NF3DIR, 2), 32000, 255, TRUE, TRUE, FALSE, TRUE};
      return Enc(xdr_PATHCONF3res, r);
    }
    case 21: {
      COMMIT3res r{};
      r.COMMIT3res_u.resok.file_wcc = Wcc();
      std::memcpy(r.COMMIT3res_u.resok.verf, "writever", NFS3_WRITEVERFSIZE);
      return Enc(xdr_COMMIT3res, r);
    }
  }
  return "";
}

void UpstreamReplies(SeedWriter* w) {
  for (uint32_t proc = 0; proc < kNfsProcCount; ++proc) {
    const NfsProc& p = *FindNfsProc(proc);
    char name[64];
    std::snprintf(name, sizeof(name), "%02u_%s_ok", proc, p.name);
    w->Add("upstream_reply", name, Byte(proc) + Reply(NfsOkResults(proc)));
    if (proc == 0) continue;
    std::snprintf(name, sizeof(name), "%02u_%s_err", proc, p.name);
    w->Add("upstream_reply", name, Byte(proc) + Reply(EncodeNfsError(p, NFS3ERR_STALE)));
  }
  {
    static int flavors[] = {1, 0};
    mountres3 r{};
    r.fhs_status = MNT3_OK;
    r.mountres3_u.mountinfo.fhandle.fhandle3_len = sizeof(kDirHandle) - 1;
    r.mountres3_u.mountinfo.fhandle.fhandle3_val = kDirHandle;
    r.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 2;
    r.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
    w->Add("upstream_reply", "22_MNT_ok", Byte(kNfsProcCount) + Reply(Enc(xdr_mountres3, r)));
    mountres3 e{};
    e.fhs_status = MNT3ERR_ACCES;
    w->Add("upstream_reply", "22_MNT_err", Byte(kNfsProcCount) + Reply(Enc(xdr_mountres3, e)));
  }
  // Replies that carry no results.
  w->Add("upstream_reply", "hdr_prog_mismatch",
         Byte(1) + EncodeAcceptedReply(0x5eed0002, kProgMismatch, 3, 3));
  w->Add("upstream_reply", "hdr_garbage_args",
         Byte(1) + EncodeAcceptedReply(0x5eed0003, kGarbageArgs));
  w->Add("upstream_reply", "hdr_rpc_mismatch", Byte(1) + EncodeRpcMismatchReply(0x5eed0004));
  w->Add("upstream_reply", "hdr_auth_error",
         Byte(1) + EncodeAuthErrorReply(0x5eed0005, kAuthTooWeak));
}

// ---- Metadata cache: steps of (op, args, results, seconds).
// REQUIRES: NfsArgs ran (g_args).

std::string Len16(const std::string& bytes) {
  return Byte(static_cast<uint32_t>(bytes.size() >> 8)) + Byte(bytes.size() & 0xff) + bytes;
}

std::string Step(uint32_t op, const std::string& args, const std::string& results,
                 uint32_t seconds = 1) {
  return Byte(op) + Len16(args) + Len16(results) + Byte(seconds);
}

void MetadataSteps(SeedWriter* w) {
  constexpr uint32_t kUser = 0x80, kReadOnly = 0x40;
  // Every procedure learned, ok then failed, then asked again.
  std::string all, fail;
  for (uint32_t proc = 1; proc < kNfsProcCount; ++proc) {
    all += Step(proc, g_args[proc], NfsOkResults(proc));
    fail += Step(proc | kUser, g_args[proc], EncodeNfsError(*FindNfsProc(proc), NFS3ERR_IO));
  }
  w->Add("metadata_cache", "all_ok", all + all);
  w->Add("metadata_cache", "all_failed", all + fail + all);

  // GETATTR learned, then answered from the cache, then expired.
  const std::string getattr = Step(1, g_args[1], NfsOkResults(1), 0);
  w->Add("metadata_cache", "getattr", getattr + getattr + Step(1, g_args[1], "", 200) + getattr);

  // LOOKUP answered once the directory's attributes and its search
  // permission are known.
  ACCESS3res dir_access{};
  dir_access.ACCESS3res_u.resok = {PostOp(NF3DIR, 2), 0x3f};
  const std::string access_dir =
      Step(4, Enc(xdr_ACCESS3args, ACCESS3args{DirFh(), 0x3f}), Enc(xdr_ACCESS3res, dir_access));
  const std::string lookup = Step(3, g_args[3], NfsOkResults(3));
  w->Add("metadata_cache", "lookup", lookup + access_dir + lookup + Step(3 | kUser, g_args[3], ""));
  w->Add("metadata_cache", "lookup_readonly",
         Step(3 | kReadOnly, g_args[3], NfsOkResults(3)) +
             Step(4 | kReadOnly, g_args[4], NfsOkResults(4)) + Step(4 | kReadOnly, g_args[4], ""));
  LOOKUP3res noent{};
  noent.status = NFS3ERR_NOENT;
  noent.LOOKUP3res_u.resfail.dir_attributes = PostOp(NF3DIR, 2);
  w->Add("metadata_cache", "lookup_negative",
         Step(3, g_args[3], Enc(xdr_LOOKUP3res, noent)) + access_dir + lookup);

  // Names learned from READDIRPLUS, then changed by CREATE, RENAME, REMOVE.
  w->Add("metadata_cache", "readdirplus_changes",
         Step(17, g_args[17], NfsOkResults(17)) + access_dir + lookup +
             Step(8, g_args[8], NfsOkResults(8)) + lookup + Step(14, g_args[14], NfsOkResults(14)) +
             lookup + Step(12, g_args[12], NfsOkResults(12)) + lookup);
}

// ---- Client calls: one whole call record.

OpaqueAuth Sys(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids, std::string machine) {
  AuthSys a;
  a.stamp = 0x12345678;
  a.machine = std::move(machine);
  a.uid = uid;
  a.gid = gid;
  a.gids = std::move(gids);
  return OpaqueAuth{kAuthSys, EncodeAuthSys(a)};
}

std::string Call(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, OpaqueAuth cred,
                 const std::string& args) {
  CallHeader h;
  h.xid = xid;
  h.prog = prog;
  h.vers = vers;
  h.proc = proc;
  h.cred = std::move(cred);
  return EncodeCallHeader(h) + args;
}

std::string MountArgs(char* path) { return Enc(xdr_dirpath, path); }

void RpcCalls(SeedWriter* w) {
  const OpaqueAuth user = Sys(1000, 1000, {1000, 27, 100}, "client.example");
  const OpaqueAuth root = Sys(0, 0, {0, 10}, "admin");
  std::vector<uint32_t> many(16);
  for (uint32_t i = 0; i < many.size(); ++i) many[i] = 100 + i;
  const OpaqueAuth full = Sys(1000, 1000, many, std::string(64, 'm'));
  w->Add("rpc_call", "nfs_null_none", Call(1, kNfsProgram, kNfsVersion, 0, {}, ""));
  w->Add("rpc_call", "nfs_getattr_sys",
         Call(2, kNfsProgram, kNfsVersion, 1, user, Enc(xdr_GETATTR3args, GETATTR3args{FileFh()})));
  w->Add(
      "rpc_call", "nfs_lookup_root",
      Call(3, kNfsProgram, kNfsVersion, 3, root, Enc(xdr_LOOKUP3args, LOOKUP3args{Dirop(kName)})));
  w->Add("rpc_call", "nfs_rename_16gids",
         Call(4, kNfsProgram, kNfsVersion, 14, full,
              Enc(xdr_RENAME3args, RENAME3args{Dirop(kName), Dirop(kOtherName)})));
  w->Add("rpc_call", "mount_mnt_sys", Call(5, 100005, 3, 1, user, MountArgs(kMountPath)));
  CallHeader bad;
  bad.xid = 6;
  bad.rpcvers = 3;
  bad.prog = kNfsProgram;
  bad.vers = kNfsVersion;
  w->Add("rpc_call", "rpcvers_3", EncodeCallHeader(bad));
  w->Add("rpc_call", "nfs_null_sys", Call(7, kNfsProgram, kNfsVersion, 0, user, ""));
  w->Add("rpc_call", "authsys_body", user.body);
}

// ---- MOUNTv3 arguments: one byte of procedure number, then the arguments.

void MountArgsSeeds(SeedWriter* w) {
  w->Add("mount3_args", "0_NULL", Byte(0));
  w->Add("mount3_args", "1_MNT", Byte(1) + MountArgs(kMountPath));
  w->Add("mount3_args", "1_MNT_root", Byte(1) + MountArgs(kRoot));
  w->Add("mount3_args", "2_DUMP", Byte(2));
  w->Add("mount3_args", "3_UMNT", Byte(3) + MountArgs(kMountSubPath));
  w->Add("mount3_args", "4_UMNTALL", Byte(4));
  w->Add("mount3_args", "5_EXPORT", Byte(5));
}

// ---- Record marking: 2 bytes of size limit, 1 byte of cutting, the stream.

std::string Fragment(const std::string& bytes, bool last) {
  char mark[4];
  StoreBE32(mark, (last ? kLastFragment : 0) | static_cast<uint32_t>(bytes.size()));
  return std::string(mark, 4) + bytes;
}

void Records(SeedWriter* w) {
  const std::string call =
      Call(9, kNfsProgram, kNfsVersion, 1, {}, Enc(xdr_GETATTR3args, GETATTR3args{FileFh()}));
  const std::string limit_8k("\x20\x00", 2);
  w->Add("record_marking", "one_record", limit_8k + Byte(0) + EncodeRecord(call));
  w->Add("record_marking", "three_fragments",
         limit_8k + Byte(7) + Fragment(call.substr(0, 8), false) +
             Fragment(call.substr(8, 20), false) + Fragment(call.substr(28), true));
  w->Add("record_marking", "two_records",
         limit_8k + Byte(1) + EncodeRecord(call) + EncodeRecord(call.substr(0, 40)));
  w->Add("record_marking", "empty_last_fragment",
         limit_8k + Byte(3) + Fragment(call, false) + Fragment("", true));
  w->Add("record_marking", "too_large", std::string("\x00\x20", 2) + Byte(0) + EncodeRecord(call));
  w->Add("record_marking", "truncated", limit_8k + Byte(5) + EncodeRecord(call).substr(0, 30));
}

// ---- Config files.

void Configs(SeedWriter* w) {
  w->Add("config", "minimal.toml", "[[export]]\npath = \"/export\"\nclients = [\"10.0.0.0/8\"]\n");
  w->Add("config", "full.toml", R"([server]
listen = "0.0.0.0"
nfs_port = 2049
mount_port = 20048
rpcbind = "auto"
max_connections = 1024
max_calls_per_connection = 128
max_record_size = 1114112
max_handles = 1048576
shutdown_grace = 10

[upstream]
host = "127.0.0.1"
nfs_port = 2049
mount_port = 0
connections = 2
max_in_flight = 128
max_queued = 4096
call_timeout_ms = 60000
reconnect_min_ms = 100
reconnect_max_ms = 5000
privileged_port = true

[cache]
max_attr_entries = 1000000
max_access_entries = 1000000
max_name_entries = 1000000
max_dir_bytes = "64M"
max_link_bytes = "16M"
refresh_ahead_ms = 1000
memory_bytes = "1G"
block_size = "64K"
disk_dir = "/var/cache/nfsedge"
disk_bytes = "16G"
disk_policy = "all"
disk_threads = 2
read_size = 0
readahead_max_bytes = "16M"
readahead_fetches = 16
readahead_cursors = 8192

[log]
level = "info"

[[export]]
path = "/data"
upstream_path = "/srv/data"
clients = ["10.0.0.0/8", "192.168.0.0/16", "127.0.0.1", "fd00::/8"]
access = "rw"
root_squash = true
anon_uid = 65534
anon_gid = 65534
acregmin = 3
acregmax = 60
acdirmin = 30
acdirmax = 60

[[export]]
path = "/data/ro"
clients = ["::1"]
access = "ro"
root_squash = false
)");
  w->Add("config", "errors.toml", R"(typo = 1
[server]
nfs_port = 70000
rpcbind = "maybe"
[cache]
block_size = "3K"
disk_dir = "relative"
[[export]]
path = "/a/../b"
clients = []
acregmin = 90
acregmax = 60
[[export]]
path = "/a/../b"
)");
  w->Add("config", "syntax_error.toml", "[server\nlisten = \"::\"\n[[export]]\npath = '/x'\n");
  w->Add("config", "inline_tables.toml",
         "server = { listen = \"::\", nfs_port = 0 }\nexport = [ { path = \"/\", clients = "
         "[\"0.0.0.0/0\"] } ]\n");
}

}  // namespace
}  // namespace nfsedge

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seed_gen DIR\n";
    return 2;
  }
  nfsedge::SeedWriter w{std::filesystem::path(argv[1])};
  nfsedge::NfsArgs(&w);
  nfsedge::UpstreamReplies(&w);
  nfsedge::RpcCalls(&w);
  nfsedge::MountArgsSeeds(&w);
  nfsedge::MetadataSteps(&w);
  nfsedge::Records(&w);
  nfsedge::Configs(&w);
  return w.ok() ? 0 : 1;
}
