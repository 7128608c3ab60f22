#include "rpc/record_marking.h"

#include <event2/buffer.h>

#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// Byte source over either an evbuffer or a string.
struct EvSource {
  evbuffer* b;
  size_t size() const { return evbuffer_get_length(b); }
  void Peek(char* out, size_t n) const { evbuffer_copyout(b, out, n); }
  void Drain(size_t n) { evbuffer_drain(b, n); }
  void MoveTo(std::string* out, size_t n) {
    size_t base = out->size();
    out->resize(base + n);
    evbuffer_remove(b, out->data() + base, n);
  }
};

struct StringSource {
  std::string* s;
  size_t size() const { return s->size(); }
  void Peek(char* out, size_t n) const { s->copy(out, n); }
  void Drain(size_t n) { s->erase(0, n); }
  void MoveTo(std::string* out, size_t n) {
    out->append(*s, 0, n);
    s->erase(0, n);
  }
};

template <typename Source>
RecordReader::Result ReadRecord(Source src, size_t max, std::string* partial,
                                std::string* record) {
  for (;;) {
    if (src.size() < 4) return RecordReader::Result::kNeedMore;
    char mark[4];
    src.Peek(mark, 4);
    uint32_t word = LoadBE32(mark);
    bool last = (word & kLastFragment) != 0;
    size_t len = word & ~kLastFragment;
    if (partial->size() + len > max) return RecordReader::Result::kTooLarge;
    if (src.size() < 4 + len) return RecordReader::Result::kNeedMore;
    src.Drain(4);
    src.MoveTo(partial, len);
    if (last) {
      record->swap(*partial);
      partial->clear();
      return RecordReader::Result::kRecord;
    }
  }
}

}  // namespace

RecordReader::Result RecordReader::Next(evbuffer* in, std::string* record) {
  return ReadRecord(EvSource{in}, max_record_size_, &partial_, record);
}

RecordReader::Result RecordReader::Next(std::string* in, std::string* record) {
  return ReadRecord(StringSource{in}, max_record_size_, &partial_, record);
}

void EncodeRecordMark(size_t len, char mark[4]) {
  StoreBE32(mark, kLastFragment | static_cast<uint32_t>(len));
}

std::string EncodeRecord(std::string_view head, std::string_view body) {
  std::string out;
  out.reserve(4 + head.size() + body.size());
  out.resize(4);
  EncodeRecordMark(head.size() + body.size(), out.data());
  out.append(head).append(body);
  return out;
}

}  // namespace nfsedge
