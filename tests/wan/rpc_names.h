// Names of the ONC RPC programs and procedures the WAN emulator reports by name.
//
// Table-driven: one row per (program, version) with its procedure names in order; currently
// NFSv3 (RFC 1813), MOUNTv3 (RFC 1813 appendix I) and NFSv4 (NULL and COMPOUND).
//
// Thread safety: the tables are constant; the function is safe for concurrent use.

#ifndef NFSEDGE_TESTS_WAN_RPC_NAMES_H_
#define NFSEDGE_TESTS_WAN_RPC_NAMES_H_

#include <cstdint>
#include <string>

namespace nfsedge::wan {

constexpr uint32_t kNfsProgram = 100003;
constexpr uint32_t kMountProgram = 100005;

// Returns "NFS3.GETATTR"-style names for a known procedure, or "" iff the program, version or
// procedure is unknown.
std::string RpcProcedureName(uint32_t prog, uint32_t vers, uint32_t proc);

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_RPC_NAMES_H_
