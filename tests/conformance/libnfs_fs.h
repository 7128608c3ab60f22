// LibnfsFs: the Fs backend of the libnfs high-level synchronous API (nfs_open,
// nfs_pread, nfs_pwrite, nfs_rename, ...). Each instance is its own NFSv3 client: its
// own nfs_context, TCP connection and MOUNT, so two instances against one server are two
// clients (the close-to-open mode uses that).
//
// libnfs' headers clash with the project's rpcgen headers: only libnfs_fs.cc includes
// them, and this header declares nothing of libnfs.
//
// Thread safety: not thread-safe (see Fs).

#ifndef NFSEDGE_TESTS_CONFORMANCE_LIBNFS_FS_H_
#define NFSEDGE_TESTS_CONFORMANCE_LIBNFS_FS_H_

#include <memory>
#include <string>

#include "conformance/fs.h"

namespace nfsedge::fsx {

// Mounts `url` (nfs://host/export?version=3&nfsport=N&mountport=M; any libnfs URL
// argument). libnfs' directory cache is off unless the URL sets dircache=1; the umask is
// 0; calls time out after 60 s. Returns nullptr and sets *error iff the mount fails.
std::unique_ptr<Fs> ConnectLibnfs(const std::string& url, std::string* error);

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_LIBNFS_FS_H_
