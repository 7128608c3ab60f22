/* Decoders that are safe on untrusted input, used by the generated XDR code
 * (rpc/xdr/bound_decoders.cmake rewrites rpcgen's output to call them) and
 * defined in rpc/xdr_bounded.cc.
 *
 * nfsedge_xdr_bytes, _string and _array behave as libtirpc's xdr_bytes,
 * xdr_string and xdr_array, except that when decoding from a memory stream
 * they refuse (FALSE) a length that the rest of the input cannot hold,
 * before allocating anything: a few bytes claiming 4 GiB cost nothing.
 * nfsedge_xdr_enum_range decodes an enum and refuses a value outside
 * [min, max]. xdr_dirlist3 and xdr_dirlistplus3 (declared by nfs3.h) decode,
 * encode and free their entry lists iteratively, in constant stack. */
#ifndef NFSEDGE_RPC_XDR_XDR_BOUNDED_H_
#define NFSEDGE_RPC_XDR_XDR_BOUNDED_H_

#include <rpc/rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

bool_t nfsedge_xdr_bytes(XDR* xdrs, char** data, u_int* size, u_int maxsize);
bool_t nfsedge_xdr_string(XDR* xdrs, char** str, u_int maxsize);
// A filename3: a string, and, when decoded, no '/' in it.
bool_t nfsedge_xdr_filename(XDR* xdrs, char** str, u_int maxsize);
bool_t nfsedge_xdr_array(XDR* xdrs, char** array, u_int* count, u_int maxcount, u_int elsize,
                         xdrproc_t elproc);
bool_t nfsedge_xdr_enum_range(XDR* xdrs, enum_t* value, long min, long max);

#ifdef __cplusplus
}
#endif

#endif /* NFSEDGE_RPC_XDR_XDR_BOUNDED_H_ */
