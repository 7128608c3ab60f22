// Builders of NFSv3 attribute structures for the cache tests.
#ifndef NFSEDGE_TESTS_CACHE_TEST_ATTRS_H_
#define NFSEDGE_TESTS_CACHE_TEST_ATTRS_H_

#include <rpc/xdr/nfs3.h>

#include <chrono>
#include <cstdint>

#include "cache/change_id.h"
#include "cache/clock.h"

namespace nfsedge {

inline nfstime3 ToNfsTime(WallTime t) {
  auto since = t.time_since_epoch();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  nfstime3 out;
  out.seconds = static_cast<uint32_t>(secs.count());
  out.nseconds = static_cast<uint32_t>((since - secs).count());
  return out;
}

// Attributes of an object last changed (mtime and ctime) at `changed`.
inline fattr3 MakeAttr(ftype3 type, uint64_t size, WallTime changed, uint32_t mode = 0644,
                       uint32_t uid = 1000, uint32_t gid = 1000) {
  fattr3 a{};
  a.type = type;
  a.mode = mode;
  a.nlink = 1;
  a.uid = uid;
  a.gid = gid;
  a.size = size;
  a.used = size;
  a.fileid = 42;
  a.atime = ToNfsTime(changed);
  a.mtime = ToNfsTime(changed);
  a.ctime = ToNfsTime(changed);
  return a;
}

// Post-op attributes: `a`, or none if null.
inline post_op_attr PostOp(const fattr3* a) {
  post_op_attr p{};
  p.attributes_follow = a != nullptr;
  if (a) p.post_op_attr_u.attributes = *a;
  return p;
}

// wcc data with `before` and `after` attributes, each absent if null.
inline wcc_data MakeWcc(const fattr3* before, const fattr3* after) {
  wcc_data w{};
  w.before.attributes_follow = before != nullptr;
  if (before) {
    w.before.pre_op_attr_u.attributes.size = before->size;
    w.before.pre_op_attr_u.attributes.mtime = before->mtime;
    w.before.pre_op_attr_u.attributes.ctime = before->ctime;
  }
  w.after = PostOp(after);
  return w;
}

}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_CACHE_TEST_ATTRS_H_
