// Helpers of MetadataCache's answers (metadata_cache.cc, metadata_static.cc):
// a result encoded as XDR, post-op attributes filled in. Internal to proxy/.
#ifndef NFSEDGE_PROXY_METADATA_ENCODE_H_
#define NFSEDGE_PROXY_METADATA_ENCODE_H_

#include <rpc/xdr/nfs3.h>

#include <string>

#include "rpc/xdr_codec.h"

namespace nfsedge::metadata_encode {

template <typename T>
std::string Encode(xdrproc_t proc, const T& value) {
  std::string out;
  XdrEncode(proc, &value, &out);
  return out;
}

inline void SetPostOp(post_op_attr* p, const fattr3& a) {
  p->attributes_follow = TRUE;
  p->post_op_attr_u.attributes = a;
}

}  // namespace nfsedge::metadata_encode

#endif  // NFSEDGE_PROXY_METADATA_ENCODE_H_
