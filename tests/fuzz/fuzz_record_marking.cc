// Fuzz target: RPC record marking (rpc/record_marking.h).
//
// Input: 2 bytes of record size limit (big-endian), 1 byte choosing how the
// stream is cut into reads, then the byte stream a peer sends. The stream is
// fed in those pieces to a RecordReader over a string and to one over an
// evbuffer; both must yield exactly the records (or the kTooLarge verdict)
// of a plain reference reading of the whole stream, and every record must
// come back unchanged through EncodeRecord.
#include <event2/buffer.h>

#include <memory>
#include <string>
#include <vector>

#include "rpc/record_marking.h"
#include "rpc/xdr_codec.h"
#include "tests/fuzz/fuzz_util.h"

namespace nfsedge::fuzz {
namespace {

struct Outcome {
  std::vector<std::string> records;
  bool too_large = false;
};

// Reference: reads the whole stream at once, fragment by fragment.
Outcome Reference(std::string_view s, size_t max) {
  Outcome o;
  std::string partial;
  size_t pos = 0;
  while (s.size() - pos >= 4) {
    uint32_t word = LoadBE32(s.data() + pos);
    size_t len = word & ~kLastFragment;
    if (partial.size() + len > max) {
      o.too_large = true;
      break;
    }
    if (s.size() - pos - 4 < len) break;
    partial.append(s.substr(pos + 4, len));
    pos += 4 + len;
    if (word & kLastFragment) {
      o.records.push_back(std::move(partial));
      partial.clear();
    }
  }
  return o;
}

// Cuts `n` bytes into pieces of 1..limit bytes (a small xorshift sequence);
// seed 0 means one piece.
std::vector<size_t> Pieces(size_t n, uint8_t seed) {
  std::vector<size_t> out;
  if (seed == 0) {
    if (n) out.push_back(n);
    return out;
  }
  uint32_t x = seed * 2654435761u;
  size_t limit = (seed % 64) + 1;
  while (n > 0) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    size_t piece = std::min(n, size_t{x % limit} + 1);
    out.push_back(piece);
    n -= piece;
  }
  return out;
}

// Drains every complete record; returns false iff the reader said kTooLarge.
template <typename In>
bool Drain(RecordReader* reader, In* in, Outcome* o) {
  for (;;) {
    std::string record;
    switch (reader->Next(in, &record)) {
      case RecordReader::Result::kRecord:
        FUZZ_CHECK(record.size() <= reader->max_record_size());
        o->records.push_back(std::move(record));
        break;
      case RecordReader::Result::kNeedMore:
        return true;
      case RecordReader::Result::kTooLarge:
        o->too_large = true;
        return false;
    }
  }
}

bool SameOutcome(const Outcome& a, const Outcome& b) {
  return a.too_large == b.too_large && a.records == b.records;
}

}  // namespace
}  // namespace nfsedge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  if (size < 3) return 0;
  size_t max = (size_t{data[0]} << 8) | data[1];
  uint8_t seed = data[2];
  std::string_view stream = AsView(data + 3, size - 3);
  const Outcome want = Reference(stream, max);

  // Over a string, as a test or a tool would use it.
  RecordReader str_reader(max);
  Outcome from_string;
  std::string str_in;
  // Over an evbuffer, as the server and the client use it.
  RecordReader ev_reader(max);
  Outcome from_evbuffer;
  std::unique_ptr<evbuffer, void (*)(evbuffer*)> ev_in(evbuffer_new(), evbuffer_free);
  FUZZ_CHECK(ev_in != nullptr);

  bool str_open = true, ev_open = true;  // a connection is closed at kTooLarge
  size_t pos = 0;
  for (size_t piece : Pieces(stream.size(), seed)) {
    if (str_open) {
      str_in.append(stream.substr(pos, piece));
      str_open = Drain(&str_reader, &str_in, &from_string);
    }
    if (ev_open) {
      FUZZ_CHECK(evbuffer_add(ev_in.get(), stream.data() + pos, piece) == 0);
      ev_open = Drain(&ev_reader, ev_in.get(), &from_evbuffer);
    }
    pos += piece;
  }
  FUZZ_CHECK(SameOutcome(from_string, want));
  FUZZ_CHECK(SameOutcome(from_evbuffer, want));

  // What EncodeRecord frames, a reader gives back unchanged.
  for (const std::string& r : want.records) {
    std::string framed = EncodeRecord(r);
    FUZZ_CHECK(framed.size() == r.size() + 4);
    RecordReader again(r.size());
    std::string back;
    FUZZ_CHECK(again.Next(&framed, &back) == RecordReader::Result::kRecord);
    FUZZ_CHECK(back == r);
    FUZZ_CHECK(framed.empty());
  }
  return 0;
}
