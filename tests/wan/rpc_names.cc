#include "rpc_names.h"

#include <iterator>

namespace nfsedge::wan {

namespace {

constexpr const char* kNfs3Procs[] = {
    "NULL",    "GETATTR",     "SETATTR", "LOOKUP", "ACCESS",   "READLINK", "READ",   "WRITE",
    "CREATE",  "MKDIR",       "SYMLINK", "MKNOD",  "REMOVE",   "RMDIR",    "RENAME", "LINK",
    "READDIR", "READDIRPLUS", "FSSTAT",  "FSINFO", "PATHCONF", "COMMIT"};

constexpr const char* kMount3Procs[] = {"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"};

constexpr const char* kNfs4Procs[] = {"NULL", "COMPOUND"};

struct ProgramNames {
  uint32_t prog;
  uint32_t vers;
  const char* prefix;
  const char* const* procs;
  uint32_t proc_count;
};

constexpr ProgramNames kPrograms[] = {
    {kNfsProgram, 3, "NFS3", kNfs3Procs, std::size(kNfs3Procs)},
    {kMountProgram, 3, "MOUNT3", kMount3Procs, std::size(kMount3Procs)},
    {kNfsProgram, 4, "NFS4", kNfs4Procs, std::size(kNfs4Procs)},
};

}  // namespace

std::string RpcProcedureName(uint32_t prog, uint32_t vers, uint32_t proc) {
  for (const ProgramNames& p : kPrograms) {
    if (p.prog == prog && p.vers == vers && proc < p.proc_count) {
      return std::string(p.prefix) + "." + p.procs[proc];
    }
  }
  return "";
}

}  // namespace nfsedge::wan
