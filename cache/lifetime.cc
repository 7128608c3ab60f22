#include "cache/lifetime.h"

#include <algorithm>

namespace nfsedge {

Duration ComputeLifetime(const Lifetime& l, WallTime now, WallTime last_change) {
  Duration age = now > last_change ? now - last_change : Duration(0);
  Duration d = std::max(age / 10, l.min);
  return std::min(d, l.max);
}

}  // namespace nfsedge
