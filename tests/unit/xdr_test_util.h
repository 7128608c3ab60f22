// Small XDR helpers shared by the unit-test fixtures: encoding a value,
// viewing a handle, wrapping attributes.
#ifndef NFSEDGE_TESTS_UNIT_XDR_TEST_UTIL_H_
#define NFSEDGE_TESTS_UNIT_XDR_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <rpc/xdr/nfs3.h>

#include <string>

#include "rpc/xdr_codec.h"

namespace nfsedge::test_xdr {

template <typename F>
inline xdrproc_t Proc(F f) {
  return reinterpret_cast<xdrproc_t>(f);
}

template <typename T>
inline std::string Xdr(xdrproc_t proc, const T& v) {
  std::string out;
  EXPECT_TRUE(XdrEncode(proc, &v, &out));
  return out;
}

// REQUIRES: `bytes` outlives the result.
inline nfs_fh3 Fh(const std::string& bytes) {
  nfs_fh3 fh{};
  fh.data.data_val = const_cast<char*>(bytes.data());
  fh.data.data_len = static_cast<u_int>(bytes.size());
  return fh;
}

inline std::string Bytes(const nfs_fh3& fh) {
  return std::string(fh.data.data_val, fh.data.data_len);
}

inline post_op_attr PostOp(const fattr3& a) {
  post_op_attr p{};
  p.attributes_follow = TRUE;
  p.post_op_attr_u.attributes = a;
  return p;
}

// wcc data of an object that was `before` and is `after`.
inline wcc_data Wcc(const fattr3& before, const fattr3& after) {
  wcc_data w{};
  w.before.attributes_follow = TRUE;
  w.before.pre_op_attr_u.attributes.size = before.size;
  w.before.pre_op_attr_u.attributes.mtime = before.mtime;
  w.before.pre_op_attr_u.attributes.ctime = before.ctime;
  w.after = PostOp(after);
  return w;
}

}  // namespace nfsedge::test_xdr

#endif  // NFSEDGE_TESTS_UNIT_XDR_TEST_UTIL_H_
