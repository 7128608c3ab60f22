// The NFSv3 procedure table: one descriptor per procedure (RFC 1813 section
// 3), with its XDR routines, its flags, and where the file handles are in
// its arguments and results. Handlers are chosen by these flags, not by
// switch statements over procedure numbers (STYLE habit 10).
//
// Thread-safety: the table is constant.
#ifndef NFSEDGE_PROXY_NFS_PROCS_H_
#define NFSEDGE_PROXY_NFS_PROCS_H_

#include <rpc/xdr/nfs3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nfsedge {

// The bytes of handle `fh` (viewed, not copied).
inline std::string_view HandleBytes(const nfs_fh3& fh) {
  return std::string_view(fh.data.data_val, fh.data.data_len);
}

inline constexpr uint32_t kNfsProgram = 100003;
inline constexpr uint32_t kNfsVersion = 3;
inline constexpr uint32_t kNfsProcCount = 22;

enum NfsProcFlags : uint32_t {
  kIdempotent = 1u << 0,    // safe to repeat (RFC 1813 section 4.1)
  kMutating = 1u << 1,      // changes the file system: refused on ro exports
  kCacheable = 1u << 2,     // reads metadata that a cache may answer
  kCreatesHandle = 1u << 3, // results carry new handles to register
  kDataRead = 1u << 4,
  kDataWrite = 1u << 5,
};

struct NfsProc {
  uint32_t proc;
  const char* name;
  xdrproc_t args_xdr;
  size_t args_size;
  xdrproc_t res_xdr;
  size_t res_size;
  uint32_t flags;
  // Appends the handles found in decoded arguments `args`.
  void (*arg_handles)(const void* args, std::vector<const nfs_fh3*>* out);
  // Appends the handles found in decoded successful results `res`.
  void (*result_handles)(const void* res, std::vector<const nfs_fh3*>* out);
};

// Returns the descriptor of NFSv3 procedure `proc`, or null iff unknown.
const NfsProc* FindNfsProc(uint32_t proc);

// Returns true iff the upstream may run NFSv3 procedure `proc` twice with the
// same arguments and no harm, whatever ran between the two: the calls that
// change nothing, and COMMIT. False for WRITE (a late second run would undo a
// later write of the same bytes) and for every other mutation.
bool NfsProcSafeToRepeat(uint32_t proc);

// Returns the XDR encoding of a failed result of `p` with `status` and no
// attributes (every optional part "not present").
std::string EncodeNfsError(const NfsProc& p, nfsstat3 status);

// A zeroed, suitably aligned block holding a decoded XDR value of run-time
// size, freed with its XDR routine.
class XdrBox {
 public:
  XdrBox(xdrproc_t xdr, size_t size);
  ~XdrBox();
  XdrBox(const XdrBox&) = delete;
  XdrBox& operator=(const XdrBox&) = delete;

  // Returns true iff `data` decodes.
  bool Decode(std::string_view data);
  // Returns true iff the value encodes; appends to `*out`.
  bool Encode(std::string* out) const;
  void* get() { return storage_.data(); }
  const void* get() const { return storage_.data(); }

 private:
  xdrproc_t xdr_;
  std::vector<std::max_align_t> storage_;
};

// Every ACCESS bit: what speculative and prefetch ACCESS calls ask for.
inline constexpr uint32_t kAllAccessBits = 0x3f;

// Returns an nfs_fh3 viewing the bytes of `fh` (for encoding arguments).
// REQUIRES: `fh` outlives the result and is not changed meanwhile.
inline nfs_fh3 FhView(const std::string& fh) {
  nfs_fh3 h{};
  h.data.data_val = const_cast<char*>(fh.data());
  h.data.data_len = static_cast<u_int>(fh.size());
  return h;
}

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_NFS_PROCS_H_
