// Plain C++ values for NFSv3 / MOUNTv3 (RFC 1813) arguments and results, as
// returned by RawNfs. Deliberately free of libnfs' and the project's rpcgen
// types (which share names like GETATTR3args), so any test can include it.
//
// Thread safety: plain values.

#ifndef NFSEDGE_TESTS_HARNESS_NFS_TYPES_H_
#define NFSEDGE_TESTS_HARNESS_NFS_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nfsedge::harness {

// nfsstat3 values.
inline constexpr uint32_t kNfs3Ok = 0;
inline constexpr uint32_t kNfs3ErrPerm = 1;
inline constexpr uint32_t kNfs3ErrNoent = 2;
inline constexpr uint32_t kNfs3ErrIo = 5;
inline constexpr uint32_t kNfs3ErrAcces = 13;
inline constexpr uint32_t kNfs3ErrExist = 17;
inline constexpr uint32_t kNfs3ErrXdev = 18;
inline constexpr uint32_t kNfs3ErrNotdir = 20;
inline constexpr uint32_t kNfs3ErrIsdir = 21;
inline constexpr uint32_t kNfs3ErrInval = 22;
inline constexpr uint32_t kNfs3ErrRofs = 30;
inline constexpr uint32_t kNfs3ErrNametoolong = 63;
inline constexpr uint32_t kNfs3ErrNotempty = 66;
inline constexpr uint32_t kNfs3ErrStale = 70;
inline constexpr uint32_t kNfs3ErrBadhandle = 10001;
inline constexpr uint32_t kNfs3ErrNotSync = 10002;
inline constexpr uint32_t kNfs3ErrBadCookie = 10003;
inline constexpr uint32_t kNfs3ErrNotsupp = 10004;
inline constexpr uint32_t kNfs3ErrServerfault = 10006;
inline constexpr uint32_t kNfs3ErrJukebox = 10008;

// mountstat3 values.
inline constexpr uint32_t kMnt3Ok = 0;
inline constexpr uint32_t kMnt3ErrPerm = 1;
inline constexpr uint32_t kMnt3ErrNoent = 2;
inline constexpr uint32_t kMnt3ErrAcces = 13;

// ftype3.
enum class FileType : uint32_t {
  kReg = 1,
  kDir = 2,
  kBlk = 3,
  kChr = 4,
  kLnk = 5,
  kSock = 6,
  kFifo = 7
};
// stable_how.
enum class Stable : uint32_t { kUnstable = 0, kDataSync = 1, kFileSync = 2 };
// ACCESS3 bits.
inline constexpr uint32_t kAccessRead = 0x01, kAccessLookup = 0x02, kAccessModify = 0x04,
                          kAccessExtend = 0x08, kAccessDelete = 0x10, kAccessExecute = 0x20;
inline constexpr uint32_t kAccessAll = 0x3f;

// Returns "NFS3ERR_NOENT" etc. (or the number).
std::string NfsStatName(uint32_t status);
std::string MountStatName(uint32_t status);

struct NfsTime {
  uint32_t seconds = 0;
  uint32_t nseconds = 0;
  bool operator==(const NfsTime&) const = default;
};

struct Fattr {
  uint32_t type = 0;  // FileType
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;
  uint32_t rdev1 = 0, rdev2 = 0;
  uint64_t fsid = 0;
  uint64_t fileid = 0;
  NfsTime atime, mtime, ctime;
  // "type=1 mode=0644 nlink=1 uid=0 gid=0 size=5": the fields that must agree
  // between two servers exporting the same file system (not ids or times).
  std::string Summary() const;
};

// sattr3: unset fields are not changed.
struct Sattr {
  enum class TimeHow : uint32_t { kDontChange = 0, kServerTime = 1, kClientTime = 2 };
  std::optional<uint32_t> mode, uid, gid;
  std::optional<uint64_t> size;
  TimeHow atime_how = TimeHow::kDontChange, mtime_how = TimeHow::kDontChange;
  NfsTime atime, mtime;  // Used iff *_how == kClientTime.
};

struct WccAttr {
  uint64_t size = 0;
  NfsTime mtime, ctime;
};
struct Wcc {
  std::optional<WccAttr> before;
  std::optional<Fattr> after;
};

// Common to every result. rpc_ok is false iff no valid accepted reply arrived
// (timeout, connection lost, RPC-level rejection); then rpc_error says why
// and the other fields are meaningless.
struct RpcResult {
  bool rpc_ok = false;
  std::string rpc_error;
};
struct NfsResult : RpcResult {
  uint32_t status = 0xffffffffu;  // nfsstat3.
  bool ok() const { return rpc_ok && status == kNfs3Ok; }
  // "NFS3_OK" / "NFS3ERR_NOENT" / "RPC failure: ...".
  std::string StatusString() const;
};

struct GetattrResult : NfsResult {
  Fattr attr;
};
struct WccResult : NfsResult {
  Wcc wcc;
};  // SETATTR, REMOVE, RMDIR.
struct LookupResult : NfsResult {
  std::string fh;
  std::optional<Fattr> attr, dir_attr;
};
struct AccessResult : NfsResult {
  uint32_t access = 0;
  std::optional<Fattr> attr;
};
struct ReadlinkResult : NfsResult {
  std::string target;
};
struct ReadResult : NfsResult {
  uint32_t count = 0;
  bool eof = false;
  std::string data;
  std::optional<Fattr> attr;
};
struct WriteResult : NfsResult {
  uint32_t count = 0;
  uint32_t committed = 0;  // Stable
  std::string verf;        // 8 bytes.
  Wcc wcc;
};
// CREATE, MKDIR, SYMLINK, MKNOD.
struct CreateResult : NfsResult {
  std::string fh;  // Empty if the server sent no handle.
  std::optional<Fattr> attr;
  Wcc dir_wcc;
};
struct RenameResult : NfsResult {
  Wcc from_wcc, to_wcc;
};
struct LinkResult : NfsResult {
  std::optional<Fattr> attr;
  Wcc dir_wcc;
};
struct DirEntry {
  uint64_t fileid = 0;
  std::string name;
  uint64_t cookie = 0;
  std::optional<Fattr> attr;  // READDIRPLUS only.
  std::string fh;             // READDIRPLUS only; empty if not sent.
};
struct ReaddirResult : NfsResult {
  std::optional<Fattr> dir_attr;
  std::string cookieverf;  // 8 bytes.
  std::vector<DirEntry> entries;
  bool eof = false;
  int pages = 0;  // Calls made (ReaddirAll).
};
struct FsstatResult : NfsResult {
  uint64_t tbytes = 0, fbytes = 0, abytes = 0, tfiles = 0, ffiles = 0, afiles = 0;
  uint32_t invarsec = 0;
};
struct FsinfoResult : NfsResult {
  uint32_t rtmax = 0, rtpref = 0, rtmult = 0, wtmax = 0, wtpref = 0, wtmult = 0, dtpref = 0;
  uint64_t maxfilesize = 0;
  NfsTime time_delta;
  uint32_t properties = 0;
};
struct PathconfResult : NfsResult {
  uint32_t linkmax = 0, name_max = 0;
  bool no_trunc = false, chown_restricted = false, case_insensitive = false,
       case_preserving = false;
};
struct CommitResult : NfsResult {
  std::string verf;
  Wcc wcc;
};

// MOUNTv3.
struct MntResult : RpcResult {
  uint32_t status = 0xffffffffu;  // mountstat3.
  std::string fh;
  std::vector<int32_t> auth_flavors;
  bool ok() const { return rpc_ok && status == kMnt3Ok; }
};
struct MountEntry {
  std::string hostname, directory;
};
struct DumpResult : RpcResult {
  std::vector<MountEntry> mounts;
};
struct ExportEntry {
  std::string dir;
  std::vector<std::string> groups;
};
struct ExportResult : RpcResult {
  std::vector<ExportEntry> exports;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_NFS_TYPES_H_
