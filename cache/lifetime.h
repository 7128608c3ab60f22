// Lifetime: how long cached attributes (and what is derived from them) may be
// used without asking the upstream again.
//
// An export configures min and max lifetimes per object kind, with the names
// NFS clients use: acregmin/acregmax for files, acdirmin/acdirmax for
// directories. Within those bounds an entry lives a tenth of the time since
// the object last changed (max(mtime, ctime)), so objects that changed
// recently are rechecked often and old ones rarely:
//
//     lifetime = clamp((wall_now - last_change) / 10, min, max)
//
// This is the BSD clients' rule (FreeBSD ncl_getattrcache, NetBSD
// nfs_attrtimeo). The Linux client uses the same bounds but a different
// growth rule (its timeout doubles after each revalidation that finds no
// change, and drops to min on a change); the BSD rule needs no history per
// entry. A last change in the future (clock skew) counts as "just now".
// min = max = 0 means "always revalidate": such an entry is never fresh.
//
// Thread-safety: plain values and a pure function.
#ifndef NFSEDGE_CACHE_LIFETIME_H_
#define NFSEDGE_CACHE_LIFETIME_H_

#include <rpc/xdr/nfs3.h>

#include "cache/clock.h"

namespace nfsedge {

struct Lifetime {
  Duration min{0};
  Duration max{0};
};

// One export's lifetimes for files (acreg*) and directories (acdir*).
struct ExportLifetimes {
  Lifetime reg;
  Lifetime dir;

  // Returns `dir` for directories and `reg` for every other type.
  const Lifetime& For(ftype3 type) const { return type == NF3DIR ? dir : reg; }
};

// Returns clamp((now - last_change) / 10, l.min, l.max). If l.min > l.max
// (a config Validate() should refuse), l.max wins: never longer than max.
Duration ComputeLifetime(const Lifetime& l, WallTime now, WallTime last_change);

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_LIFETIME_H_
