// Safe decoders for the generated XDR code: see rpc/xdr/xdr_bounded.h.

#include "rpc/xdr/xdr_bounded.h"

#include <array>
#include <cstdlib>
#include <cstring>

#include "rpc/xdr/nfs3.h"

namespace {

// Returns true iff `xdrs` decodes from memory (xdrmem_create), whose x_handy
// is then the number of input bytes left.
bool DecodingFromMemory(const XDR* xdrs) {
  // libtirpc has one set of operations for aligned buffers, one for others.
  using Ops = decltype(xdrs->x_ops);
  static const std::array<Ops, 2> kMemOps = [] {
    alignas(8) static char buf[16];
    XDR aligned, unaligned;
    xdrmem_create(&aligned, buf, 8, XDR_DECODE);
    xdrmem_create(&unaligned, buf + 1, 8, XDR_DECODE);
    return std::array<Ops, 2>{aligned.x_ops, unaligned.x_ops};
  }();
  return xdrs->x_op == XDR_DECODE && (xdrs->x_ops == kMemOps[0] || xdrs->x_ops == kMemOps[1]);
}

// When decoding from memory, reads the length word ahead (without consuming
// it) and returns false iff `units` of `unit_bytes` each, after it, cannot
// fit in the input. Other streams and operations: true.
bool LengthFits(XDR* xdrs, u_int unit_bytes) {
  if (!DecodingFromMemory(xdrs)) return true;
  u_int pos = xdr_getpos(xdrs);
  u_int units = 0;
  if (!xdr_u_int(xdrs, &units)) return false;
  u_int left = xdrs->x_handy;
  if (!xdr_setpos(xdrs, pos)) return false;
  return static_cast<unsigned long long>(units) * unit_bytes <= left;
}

// Decodes, encodes or frees the fields of one list entry, not its link.
bool_t EntryFields(XDR* xdrs, entry3* e) {
  return xdr_fileid3(xdrs, &e->fileid) && xdr_filename3(xdrs, &e->name) &&
         xdr_cookie3(xdrs, &e->cookie);
}
bool_t EntryFields(XDR* xdrs, entryplus3* e) {
  return xdr_fileid3(xdrs, &e->fileid) && xdr_filename3(xdrs, &e->name) &&
         xdr_cookie3(xdrs, &e->cookie) && xdr_post_op_attr(xdrs, &e->name_attributes) &&
         xdr_post_op_fh3(xdrs, &e->name_handle);
}

// An XDR list of optional-data entries ("entry *next"), the way rpcgen's
// xdr_pointer chain puts it on the wire, without one stack frame per entry.
// Entries are allocated and freed as libtirpc's xdr_reference does (calloc,
// free), so the two may mix.
template <typename Entry>
bool_t XdrEntryList(XDR* xdrs, Entry** head) {
  switch (xdrs->x_op) {
    case XDR_ENCODE:
      for (Entry* e = *head;; e = e->nextentry) {
        bool_t more = e != nullptr;
        if (!xdr_bool(xdrs, &more)) return FALSE;
        if (!more) return TRUE;
        if (!EntryFields(xdrs, e)) return FALSE;
      }
    case XDR_DECODE:
      for (Entry** link = head;;) {
        bool_t more;
        if (!xdr_bool(xdrs, &more)) return FALSE;
        if (!more) {
          // An entry left from an earlier decode into the same object is freed.
          Entry* rest = *link;
          *link = nullptr;
          XDR freeing{};
          freeing.x_op = XDR_FREE;
          XdrEntryList(&freeing, &rest);
          return TRUE;
        }
        if (*link == nullptr) {
          *link = static_cast<Entry*>(calloc(1, sizeof(Entry)));
          if (*link == nullptr) return FALSE;
        }
        // Linked before it is filled, so that xdr_free releases a partial list.
        if (!EntryFields(xdrs, *link)) return FALSE;
        link = &(*link)->nextentry;
      }
    case XDR_FREE:
      for (Entry* e = *head; e != nullptr;) {
        Entry* next = e->nextentry;
        EntryFields(xdrs, e);
        free(e);
        e = next;
      }
      *head = nullptr;
      return TRUE;
  }
  return FALSE;
}

}  // namespace

extern "C" {

bool_t nfsedge_xdr_bytes(XDR* xdrs, char** data, u_int* size, u_int maxsize) {
  if (*data == nullptr && !LengthFits(xdrs, 1)) return FALSE;
  return xdr_bytes(xdrs, data, size, maxsize);
}

bool_t nfsedge_xdr_string(XDR* xdrs, char** str, u_int maxsize) {
  if (*str == nullptr && !LengthFits(xdrs, 1)) return FALSE;
  // A string with a NUL inside (a name "a\0b") would be one name to the
  // upstream, which compares counted bytes, and another ("a") to the C
  // code that reads it here: refused, as Linux's server refuses it.
  u_int length = 0;
  const bool check = DecodingFromMemory(xdrs);
  if (check) {
    const u_int pos = xdr_getpos(xdrs);
    if (!xdr_u_int(xdrs, &length) || !xdr_setpos(xdrs, pos)) return FALSE;
  }
  if (!xdr_string(xdrs, str, maxsize)) return FALSE;
  return !check || std::strlen(*str) == length;
}

bool_t nfsedge_xdr_filename(XDR* xdrs, char** str, u_int maxsize) {
  // One name in a directory: a '/' would make it a path to an upstream
  // that resolves it as one ("../x" past the export's root, where the
  // proxy's checks look at ".." alone). Refused, as Linux's server does.
  if (!nfsedge_xdr_string(xdrs, str, maxsize)) return FALSE;
  return xdrs->x_op != XDR_DECODE || std::strchr(*str, '/') == nullptr;
}

bool_t nfsedge_xdr_array(XDR* xdrs, char** array, u_int* count, u_int maxcount, u_int elsize,
                         xdrproc_t elproc) {
  // Every XDR item but void takes at least 4 bytes on the wire.
  if (*array == nullptr && !LengthFits(xdrs, 4)) return FALSE;
  return xdr_array(xdrs, array, count, maxcount, elsize, elproc);
}

bool_t nfsedge_xdr_enum_range(XDR* xdrs, enum_t* value, long min, long max) {
  if (xdrs->x_op == XDR_DECODE) {
    // Decoded into an int first: an out-of-range value never enters the enum.
    int v;
    if (!xdr_int(xdrs, &v)) return FALSE;
    if (v < min || v > max) return FALSE;
    *value = v;
    return TRUE;
  }
  return xdr_enum(xdrs, value);
}

bool_t xdr_dirlist3(XDR* xdrs, dirlist3* objp) {
  return XdrEntryList(xdrs, &objp->entries) && xdr_bool(xdrs, &objp->eof);
}

bool_t xdr_dirlistplus3(XDR* xdrs, dirlistplus3* objp) {
  return XdrEntryList(xdrs, &objp->entries) && xdr_bool(xdrs, &objp->eof);
}

}  // extern "C"
