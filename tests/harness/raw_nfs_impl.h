// Internal to RawNfs: the libnfs context, the synchronous call loop and the
// conversions between libnfs' rpcgen types and harness/nfs_types.h.
//
// Includes libnfs' raw headers: include only from raw_nfs*.cc, never
// together with the project's rpc/ headers (same type names).
//
// Thread safety: not thread-safe, like RawNfs.

#ifndef NFSEDGE_TESTS_HARNESS_RAW_NFS_IMPL_H_
#define NFSEDGE_TESTS_HARNESS_RAW_NFS_IMPL_H_

// clang-format off
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
// clang-format on

#include <functional>
#include <string>

#include "harness/nfs_types.h"
#include "harness/raw_nfs.h"
#include "harness/wait.h"

namespace nfsedge::harness {

struct RawNfs::Impl {
  ~Impl();

  // Queues a call with `issue(rpc, cb, private_data)` (a libnfs *_async
  // function; returns 0 iff queued) and services the socket until the reply
  // arrives or `timeout` passes. `on_reply(data)` decodes the reply while
  // libnfs still owns it. Returns true iff a reply arrived; else `*error`
  // says why, and the connection is closed.
  using Issue = std::function<int(rpc_context*, rpc_cb, void*)>;
  bool Run(const Issue& issue, const std::function<void(void*)>& on_reply, Millis timeout,
           std::string* error);

  // Same, filling `result->rpc_ok` / `result->rpc_error`.
  template <typename Result>
  void Call(Result* result, const Issue& issue, const std::function<void(void*)>& on_reply,
            Millis timeout) {
    result->rpc_ok = Run(issue, on_reply, timeout, &result->rpc_error);
  }

  rpc_context* rpc = nullptr;
  bool broken = false;  // Set when a call failed at the transport level.
};

// libnfs -> harness.
Fattr ToFattr(const fattr3& a);
std::optional<Fattr> ToFattr(const post_op_attr& a);
Wcc ToWcc(const wcc_data& w);
std::string ToString(const nfs_fh3& fh);
std::string ToHandle(const post_op_fh3& fh);

// harness -> libnfs. The result points into `bytes` / `s`: they must outlive
// the call.
nfs_fh3 ToFh(const std::string& bytes);
sattr3 ToSattr(const Sattr& s);
char* Str(const std::string& s);

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_RAW_NFS_IMPL_H_
