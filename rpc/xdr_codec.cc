#include "rpc/xdr_codec.h"

namespace nfsedge {

bool XdrEncode(xdrproc_t proc, const void* obj, std::string* out) {
  void* p = const_cast<void*>(obj);
  unsigned long size = xdr_sizeof(proc, p);
  size_t base = out->size();
  out->resize(base + size);
  XDR xdrs;
  xdrmem_create(&xdrs, out->data() + base, static_cast<u_int>(size), XDR_ENCODE);
  bool ok = proc(&xdrs, p);
  xdr_destroy(&xdrs);
  if (!ok) out->resize(base);
  return ok;
}

bool XdrDecode(xdrproc_t proc, void* obj, std::string_view data) {
  XDR xdrs;
  xdrmem_create(&xdrs, const_cast<char*>(data.data()), static_cast<u_int>(data.size()),
                XDR_DECODE);
  bool ok = proc(&xdrs, obj);
  xdr_destroy(&xdrs);
  return ok;
}

bool XdrReader::ReadU32(uint32_t* v) {
  if (remaining() < 4) return false;
  *v = LoadBE32(data_.data() + pos_);
  pos_ += 4;
  return true;
}

bool XdrReader::ReadU64(uint64_t* v) {
  uint32_t hi, lo;
  if (remaining() < 8) return false;
  ReadU32(&hi);
  ReadU32(&lo);
  *v = (uint64_t{hi} << 32) | lo;
  return true;
}

bool XdrReader::ReadFixed(std::string* v, uint32_t len) {
  size_t padded = (size_t{len} + 3) & ~size_t{3};
  if (remaining() < padded) return false;
  v->assign(data_.data() + pos_, len);
  pos_ += padded;
  return true;
}

bool XdrReader::ReadOpaque(std::string* v, uint32_t max_len) {
  size_t start = pos_;
  uint32_t len;
  if (!ReadU32(&len)) return false;
  if (len > max_len || !ReadFixed(v, len)) {
    pos_ = start;
    return false;
  }
  return true;
}

void XdrWriter::WriteU32(uint32_t v) {
  char b[4];
  StoreBE32(b, v);
  out_->append(b, 4);
}

void XdrWriter::WriteU64(uint64_t v) {
  WriteU32(static_cast<uint32_t>(v >> 32));
  WriteU32(static_cast<uint32_t>(v));
}

void XdrWriter::WriteFixed(std::string_view v) {
  out_->append(v);
  out_->append((4 - v.size() % 4) % 4, '\0');
}

void XdrWriter::WriteOpaque(std::string_view v) {
  WriteU32(static_cast<uint32_t>(v.size()));
  WriteFixed(v);
}

}  // namespace nfsedge
