// ONC RPC record marking over TCP (RFC 5531 section 11).
//
// A record is sent as one or more fragments, each preceded by a 4-byte mark:
// the high bit says "last fragment", the low 31 bits give its length.
// RecordReader reassembles records from a stream of bytes, with a limit on
// the size of a whole record; EncodeRecord frames a record as one fragment.
//
// Thread-safety: a RecordReader belongs to one connection; not synchronized.
#ifndef NFSEDGE_RPC_RECORD_MARKING_H_
#define NFSEDGE_RPC_RECORD_MARKING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct evbuffer;

namespace nfsedge {

inline constexpr uint32_t kLastFragment = 0x80000000u;

class RecordReader {
 public:
  enum class Result {
    kRecord,    // *record holds one complete record
    kNeedMore,  // not enough bytes yet
    kTooLarge,  // the record exceeds the limit: close the connection
  };

  explicit RecordReader(size_t max_record_size) : max_record_size_(max_record_size) {}

  // Consumes bytes from `in` until a record completes or `in` runs dry.
  Result Next(evbuffer* in, std::string* record);

  // Same, over a plain byte string (consumed bytes are erased from `*in`).
  Result Next(std::string* in, std::string* record);

  size_t max_record_size() const { return max_record_size_; }

 private:
  const size_t max_record_size_;
  std::string partial_;  // fragments of the record being assembled
};

// Returns `head` followed by `body` framed as a single last fragment (one
// allocation, each byte copied once).
std::string EncodeRecord(std::string_view head, std::string_view body = {});

// Writes the 4-byte mark for a last fragment of `len` bytes into `mark`.
void EncodeRecordMark(size_t len, char mark[4]);

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_RECORD_MARKING_H_
