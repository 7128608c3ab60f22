// RpcRecordParser: finds ONC RPC messages in one direction of a TCP byte stream, for counting.
//
// On TCP, ONC RPC messages are framed by record marking (RFC 5531 section 11): each fragment is
// a 4-byte big-endian header (high bit: last fragment of the record; low 31 bits: fragment
// length) followed by that many bytes; a record is one or more fragments and holds one message.
// The parser accepts the stream in arbitrary pieces (a header or message split across reads,
// fed even one byte at a time) and reports each message once, as soon as its leading words are
// known: for a CALL the xid, msg_type, rpcvers, prog, vers and proc (the first 24 bytes of the
// record, gathered across fragments if a sender splits them); for a REPLY the xid and msg_type.
//
// The stream is a peer's, so nothing in it is trusted: a fragment longer than the configured
// maximum or a msg_type that is neither CALL nor REPLY marks the stream as not RPC, after which
// the parser ignores the rest of it (failed() is true). It never crashes or allocates per byte.
//
// Thread safety: not thread-safe; one parser per stream direction, used by one thread.

#ifndef NFSEDGE_TESTS_WAN_RPC_RECORD_PARSER_H_
#define NFSEDGE_TESTS_WAN_RPC_RECORD_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <functional>

namespace nfsedge::wan {

constexpr uint32_t kRpcCall = 0;
constexpr uint32_t kRpcReply = 1;

// The leading words of an RPC message. prog, vers and proc are meaningful only for a CALL.
struct RpcMessageHeader {
  uint32_t xid = 0;
  uint32_t msg_type = 0;
  uint32_t rpcvers = 0;
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
};

class RpcRecordParser {
 public:
  using MessageFn = std::function<void(const RpcMessageHeader&)>;

  // Default bound on a fragment's length: NFSv3 READ/WRITE carry at most a few MB per record.
  static constexpr uint32_t kDefaultMaxFragmentBytes = 64u << 20;

  explicit RpcRecordParser(MessageFn on_message,
                           uint32_t max_fragment_bytes = kDefaultMaxFragmentBytes);

  RpcRecordParser(const RpcRecordParser&) = delete;
  RpcRecordParser& operator=(const RpcRecordParser&) = delete;

  // Consumes the next `n` bytes of the stream.
  void Feed(const uint8_t* data, size_t n);

  // Returns true iff the stream was found not to be RPC; Feed() then ignores its input.
  bool failed() const { return failed_; }

  // Returns the number of records that ended before their leading words were complete (for
  // example a CALL of 12 bytes) or that carried rpcvers != 2.
  uint64_t malformed_records() const { return malformed_records_; }

 private:
  static constexpr size_t kCallHeaderBytes = 24;
  static constexpr size_t kReplyHeaderBytes = 8;

  void ConsumeBody(const uint8_t* data, size_t n);
  void MaybeReport();
  void EndFragment();

  // Constant after construction.
  const MessageFn on_message_;
  const uint32_t max_fragment_bytes_;

  bool failed_ = false;
  uint64_t malformed_records_ = 0;

  // Fragment header being read: bytes gathered so far (0..4) and their value.
  size_t mark_bytes_ = 0;
  uint32_t mark_ = 0;
  // Fragment body being read: bytes left, and whether it is the record's last fragment.
  bool in_body_ = false;
  uint32_t body_left_ = 0;
  bool last_fragment_ = false;
  // Leading bytes of the current record, across fragments.
  uint8_t head_[kCallHeaderBytes] = {};
  size_t head_bytes_ = 0;
  bool reported_ = false;
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_RPC_RECORD_PARSER_H_
