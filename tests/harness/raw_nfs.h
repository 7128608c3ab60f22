// RawNfs is a synchronous NFSv3 + MOUNTv3 client over one TCP connection,
// built on libnfs 4.0's raw RPC layer. It issues exactly the call asked for
// (every procedure, any arguments, a chosen AUTH_SYS credential, a chosen
// source address and port) and returns the reply as plain structs
// (harness/nfs_types.h), so tests can compare two servers' answers.
//
// Every call is bounded by the connection's timeout. A call that times out
// or loses the connection leaves the RawNfs disconnected: later calls fail
// at once with rpc_ok == false.
//
// The libnfs headers stay inside the .cc files (their rpcgen types clash
// with the project's); this header may be included anywhere.
//
// Thread safety: a RawNfs is not thread-safe; use one per thread.

#ifndef NFSEDGE_TESTS_HARNESS_RAW_NFS_H_
#define NFSEDGE_TESTS_HARNESS_RAW_NFS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/net.h"
#include "harness/nfs_types.h"
#include "harness/status.h"
#include "harness/wait.h"

namespace nfsedge::harness {

struct Credential {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
  std::string machine = "nfsedge-test";
};

class RawNfs {
 public:
  struct Options {
    TcpEndpoint endpoint;  // host, port, source address, privileged port.
    Credential credential;
    Millis timeout = Millis(15000);  // Per call (and for connecting).
  };

  static StatusOr<std::unique_ptr<RawNfs>> Connect(const Options& options);
  ~RawNfs();
  RawNfs(const RawNfs&) = delete;
  RawNfs& operator=(const RawNfs&) = delete;

  // Credential for the following calls.
  void SetCredential(const Credential& cred);
  void SetTimeout(Millis timeout) { timeout_ = timeout; }
  // Returns true iff the connection is still usable.
  bool connected() const;
  uint16_t local_port() const { return local_port_; }

  // NFSv3 (program 100003 version 3). Handles are opaque byte strings.
  NfsResult Null();
  GetattrResult Getattr(const std::string& fh);
  // `guard_ctime`: SETATTR fails with NOT_SYNC unless it equals the ctime.
  WccResult Setattr(const std::string& fh, const Sattr& attr,
                    std::optional<NfsTime> guard_ctime = std::nullopt);
  LookupResult Lookup(const std::string& dir, const std::string& name);
  AccessResult Access(const std::string& fh, uint32_t access);
  ReadlinkResult Readlink(const std::string& fh);
  ReadResult Read(const std::string& fh, uint64_t offset, uint32_t count);
  WriteResult Write(const std::string& fh, uint64_t offset, const std::string& data, Stable stable);
  // UNCHECKED (guarded == false) or GUARDED create.
  CreateResult Create(const std::string& dir, const std::string& name, const Sattr& attr,
                      bool guarded = false);
  // EXCLUSIVE create. REQUIRES: verifier.size() == 8.
  CreateResult CreateExclusive(const std::string& dir, const std::string& name,
                               const std::string& verifier);
  CreateResult Mkdir(const std::string& dir, const std::string& name, const Sattr& attr);
  CreateResult Symlink(const std::string& dir, const std::string& name, const std::string& target,
                       const Sattr& attr = {});
  // FIFO / SOCK use `attr`; CHR / BLK also the device numbers.
  CreateResult Mknod(const std::string& dir, const std::string& name, FileType type,
                     const Sattr& attr, uint32_t major = 0, uint32_t minor = 0);
  WccResult Remove(const std::string& dir, const std::string& name);
  WccResult Rmdir(const std::string& dir, const std::string& name);
  RenameResult Rename(const std::string& from_dir, const std::string& from_name,
                      const std::string& to_dir, const std::string& to_name);
  LinkResult Link(const std::string& fh, const std::string& dir, const std::string& name);
  // One READDIR / READDIRPLUS call. `cookieverf` empty means all zeroes.
  ReaddirResult Readdir(const std::string& dir, uint64_t cookie, const std::string& cookieverf,
                        uint32_t count);
  ReaddirResult Readdirplus(const std::string& dir, uint64_t cookie, const std::string& cookieverf,
                            uint32_t dircount, uint32_t maxcount);
  FsstatResult Fsstat(const std::string& fh);
  FsinfoResult Fsinfo(const std::string& fh);
  PathconfResult Pathconf(const std::string& fh);
  CommitResult Commit(const std::string& fh, uint64_t offset, uint32_t count);

  // MOUNTv3 (program 100005 version 3).
  RpcResult MountNull();
  MntResult Mnt(const std::string& path);
  DumpResult Dump();
  RpcResult Umnt(const std::string& path);
  RpcResult Umntall();
  ExportResult Export();

  // Conveniences built on the calls above.
  // Reads the whole directory following cookies; `pages` counts the calls.
  // Fails (status != OK or rpc_ok false) if any call fails or a page makes no
  // progress.
  ReaddirResult ReaddirAll(const std::string& dir, bool plus, uint32_t count = 4096,
                           int max_pages = 100000);
  // LOOKUPs each component of `path` ("a/b/c") from `root`.
  LookupResult LookupPath(const std::string& root, const std::string& path);
  // Writes `data` at `offset` in calls of at most `chunk` bytes.
  WriteResult WriteAll(const std::string& fh, uint64_t offset, const std::string& data,
                       Stable stable, uint32_t chunk = 1 << 20);
  // Reads up to `length` bytes from `offset` in calls of at most `chunk`
  // bytes, stopping at EOF.
  ReadResult ReadAll(const std::string& fh, uint64_t offset, uint64_t length,
                     uint32_t chunk = 1 << 20);

  struct Impl;  // Defined in raw_nfs_impl.h.

 private:
  RawNfs(std::unique_ptr<Impl> impl, Millis timeout, uint16_t local_port);

  std::unique_ptr<Impl> impl_;
  Millis timeout_;
  uint16_t local_port_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_RAW_NFS_H_
