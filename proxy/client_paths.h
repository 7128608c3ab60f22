// ClientPaths: the client-visible path of a file handle, worked out
// backwards from the names the metadata cache remembers, for operators
// (`nfsedge status`). Best effort: a name seen long ago may since have been
// renamed or removed elsewhere.
//
// Thread-safety: runs on the event loop's thread.
#ifndef NFSEDGE_PROXY_CLIENT_PATHS_H_
#define NFSEDGE_PROXY_CLIENT_PATHS_H_

#include <string>
#include <vector>

#include "cache/handle_registry.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"

namespace nfsedge {

// Returns, for each of `handles`, its path below an export's root
// ("/data/projects/a.txt": the remembered names up to a handle that MNT
// handed out as an export's root), or, when the chain of names breaks, the
// handle in hex followed by the names known below it ("0a1b... .../a.txt").
// Makes at most kMaxPathDepth + 1 passes over the remembered names,
// whatever the number of handles.
std::vector<std::string> ClientPaths(const std::vector<std::string>& handles,
                                     const MetadataCache& meta, const HandleRegistry& registry,
                                     const ExportTable& exports);

inline constexpr size_t kMaxPathDepth = 64;

// Returns the first `max` bytes of `bytes` in lower-case hex.
std::string HexBytes(std::string_view bytes, size_t max);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CLIENT_PATHS_H_
