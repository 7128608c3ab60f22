// Builders of NFSv3 XDR values for the unit tests: handles viewing a
// string, post-op attributes, encoded results.
#ifndef NFSEDGE_TESTS_UNIT_NFS_XDR_BUILDERS_H_
#define NFSEDGE_TESTS_UNIT_NFS_XDR_BUILDERS_H_

#include <gtest/gtest.h>
#include <rpc/xdr/nfs3.h>

#include <string>

#include "rpc/xdr_codec.h"

namespace nfsedge {

// Returns an nfs_fh3 viewing `bytes` (which must outlive it).
inline nfs_fh3 Fh(const std::string& bytes) {
  nfs_fh3 fh{};
  fh.data.data_val = const_cast<char*>(bytes.data());
  fh.data.data_len = static_cast<u_int>(bytes.size());
  return fh;
}

// Post-op attributes that follow: `a`.
inline post_op_attr PostOp(const fattr3& a) {
  post_op_attr p{};
  p.attributes_follow = TRUE;
  p.post_op_attr_u.attributes = a;
  return p;
}

// Returns the XDR encoding of `v` (a test failure if it does not encode).
template <typename T>
std::string Xdr(xdrproc_t proc, const T& v) {
  std::string out;
  EXPECT_TRUE(XdrEncode(proc, &v, &out));
  return out;
}

// FSINFO results with the server's largest and preferred write sizes (the
// largest a 32-bit count allows, and 1 MiB, unless told): what a client's
// mount tells the write path (WritePath::LearnFsinfo).
inline std::string FsinfoResults(uint32_t wtmax = 0xffffffffu, uint32_t wtpref = 1u << 20) {
  FSINFO3res r{};
  r.status = NFS3_OK;
  r.FSINFO3res_u.resok.wtmax = wtmax;
  r.FSINFO3res_u.resok.wtpref = wtpref;
  r.FSINFO3res_u.resok.rtmax = 1u << 20;
  r.FSINFO3res_u.resok.rtpref = 1u << 20;
  return Xdr(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res), r);
}

}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_UNIT_NFS_XDR_BUILDERS_H_
