// ChangeId, PermId and DirChange: the parts of an object's upstream
// attributes that version what the caches hold about it.
//
// ChangeId (DESIGN rule 5): size, mtime and ctime. Every cached answer derived
// from an object (data blocks, names in a directory, directory pages) records
// the ChangeId it was read under and is used only while the freshest known
// ChangeId is equal. NFSv3 offers nothing better; on a server with coarse
// timestamps two changes within one tick with the same size are
// indistinguishable (a limit every NFSv3 client shares).
//
// PermId: mode, uid and gid, what a permission check depends on besides ACLs.
// ACCESS results are tied to it rather than to the ChangeId (see
// access_cache.h for why).
//
// DirChange: a mutation's wcc_data on a directory, reduced to ChangeIds.
//
// Thread-safety: plain values.
#ifndef NFSEDGE_CACHE_CHANGE_ID_H_
#define NFSEDGE_CACHE_CHANGE_ID_H_

#include <rpc/xdr/nfs3.h>

#include <compare>
#include <cstdint>
#include <optional>

#include "cache/clock.h"

namespace nfsedge {

// An nfstime3 with ordering.
struct NfsTime {
  uint32_t seconds = 0;
  uint32_t nseconds = 0;

  static NfsTime From(const nfstime3& t) { return {t.seconds, t.nseconds}; }
  WallTime ToWall() const;
  friend auto operator<=>(const NfsTime&, const NfsTime&) = default;
};

struct ChangeId {
  uint64_t size = 0;
  NfsTime mtime;
  NfsTime ctime;

  static ChangeId FromFattr(const fattr3& a);
  static ChangeId FromWcc(const wcc_attr& a);

  // The latest of mtime and ctime: when the object last changed.
  WallTime LastChange() const;
  // Returns true iff `*this` certainly describes an earlier state of the
  // object than `other` (its ctime is older; ctime never goes back on a
  // server whose clock does not). Used to ignore replies that arrive out of
  // order.
  bool OlderThan(const ChangeId& other) const { return ctime < other.ctime; }

  friend bool operator==(const ChangeId&, const ChangeId&) = default;
};

struct PermId {
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;

  static PermId FromFattr(const fattr3& a) { return {a.mode, a.uid, a.gid}; }
  friend bool operator==(const PermId&, const PermId&) = default;
};

struct DirChange {
  std::optional<ChangeId> before;  // wcc before: absent if the server did not say
  std::optional<ChangeId> after;   // wcc after: absent if the server did not say

  static DirChange FromWcc(const wcc_data& w);
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_CHANGE_ID_H_
