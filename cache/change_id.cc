#include "cache/change_id.h"

#include <algorithm>

namespace nfsedge {

WallTime NfsTime::ToWall() const {
  return WallTime(std::chrono::seconds(seconds) + std::chrono::nanoseconds(nseconds));
}

ChangeId ChangeId::FromFattr(const fattr3& a) {
  return {a.size, NfsTime::From(a.mtime), NfsTime::From(a.ctime)};
}

ChangeId ChangeId::FromWcc(const wcc_attr& a) {
  return {a.size, NfsTime::From(a.mtime), NfsTime::From(a.ctime)};
}

WallTime ChangeId::LastChange() const { return std::max(mtime, ctime).ToWall(); }

DirChange DirChange::FromWcc(const wcc_data& w) {
  DirChange c;
  if (w.before.attributes_follow) {
    c.before = ChangeId::FromWcc(w.before.pre_op_attr_u.attributes);
  }
  if (w.after.attributes_follow) {
    c.after = ChangeId::FromFattr(w.after.post_op_attr_u.attributes);
  }
  return c;
}

}  // namespace nfsedge
