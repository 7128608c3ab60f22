// XDR helpers over libtirpc: encode a value into bytes, decode bytes into a
// value that frees itself, and a small big-endian reader/writer for the RPC
// headers (RFC 5531), which are simple enough to write by hand.
//
// Thread-safety: no shared state; objects are not synchronized.
#ifndef NFSEDGE_RPC_XDR_CODEC_H_
#define NFSEDGE_RPC_XDR_CODEC_H_

#include <rpc/rpc.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace nfsedge {

// Appends the XDR encoding of `*obj` to `*out`.
// Returns true iff `proc` encoded it.
bool XdrEncode(xdrproc_t proc, const void* obj, std::string* out);

// Decodes `data` into `*obj` (zero-initialised by the caller).
// Returns true iff `proc` decoded it; on false `*obj` may hold partial
// allocations and must still be freed with xdr_free.
bool XdrDecode(xdrproc_t proc, void* obj, std::string_view data);

// A decoded XDR value that frees what the decoder allocated.
template <typename T>
class XdrValue {
 public:
  explicit XdrValue(xdrproc_t proc) : proc_(proc) { std::memset(&value_, 0, sizeof(value_)); }
  ~XdrValue() { xdr_free(proc_, reinterpret_cast<char*>(&value_)); }
  XdrValue(const XdrValue&) = delete;
  XdrValue& operator=(const XdrValue&) = delete;

  // Returns true iff `data` decodes as a T.
  bool Decode(std::string_view data) { return XdrDecode(proc_, &value_, data); }
  T& get() { return value_; }
  const T& get() const { return value_; }
  T* operator->() { return &value_; }

 private:
  xdrproc_t proc_;
  T value_;
};

// Big-endian XDR reader over a byte span; every read is bounds-checked.
class XdrReader {
 public:
  explicit XdrReader(std::string_view data) : data_(data) {}

  // Each Read* returns false (and reads nothing) iff the data is too short
  // or, for opaque data, longer than `max_len`.
  bool ReadU32(uint32_t* v);
  bool ReadU64(uint64_t* v);
  bool ReadOpaque(std::string* v, uint32_t max_len);
  bool ReadString(std::string* v, uint32_t max_len) { return ReadOpaque(v, max_len); }
  bool ReadFixed(std::string* v, uint32_t len);

  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Big-endian XDR writer appending to a string.
class XdrWriter {
 public:
  explicit XdrWriter(std::string* out) : out_(out) {}
  void WriteU32(uint32_t v);
  void WriteU64(uint64_t v);
  void WriteOpaque(std::string_view v);  // length + bytes + padding
  void WriteFixed(std::string_view v);   // bytes + padding

 private:
  std::string* out_;
};

// Returns the 32-bit big-endian value at `p`.
inline uint32_t LoadBE32(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}
inline void StoreBE32(void* p, uint32_t v) {
  auto* b = static_cast<unsigned char*>(p);
  b[0] = v >> 24;
  b[1] = v >> 16;
  b[2] = v >> 8;
  b[3] = v;
}

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_XDR_CODEC_H_
