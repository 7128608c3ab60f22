// Hand-built ONC RPC (RFC 5531) over a raw TCP socket, for tests that send
// what no well-behaved client would: unknown programs, bad versions, broken
// credentials, undecodable arguments, oversized or garbage records. Also a
// minimal XDR writer/reader to build arguments and read results.
//
// Thread safety: XdrWriter, XdrReader and RawConnection are not thread-safe;
// the free functions are.

#ifndef NFSEDGE_TESTS_HARNESS_RAW_RPC_H_
#define NFSEDGE_TESTS_HARNESS_RAW_RPC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/net.h"
#include "harness/status.h"
#include "harness/wait.h"

namespace nfsedge::harness {

// RPC constants (RFC 5531 section 9).
inline constexpr uint32_t kRpcCall = 0;
inline constexpr uint32_t kRpcReply = 1;
inline constexpr uint32_t kMsgAccepted = 0;
inline constexpr uint32_t kMsgDenied = 1;
inline constexpr uint32_t kAcceptSuccess = 0;
inline constexpr uint32_t kAcceptProgUnavail = 1;
inline constexpr uint32_t kAcceptProgMismatch = 2;
inline constexpr uint32_t kAcceptProcUnavail = 3;
inline constexpr uint32_t kAcceptGarbageArgs = 4;
inline constexpr uint32_t kAcceptSystemErr = 5;
inline constexpr uint32_t kRejectRpcMismatch = 0;
inline constexpr uint32_t kRejectAuthError = 1;
inline constexpr uint32_t kAuthNone = 0;
inline constexpr uint32_t kAuthSys = 1;
inline constexpr uint32_t kAuthDh = 3;
inline constexpr uint32_t kNfsProgram = 100003;
inline constexpr uint32_t kMountProgram = 100005;

class XdrWriter {
 public:
  XdrWriter& U32(uint32_t v);
  XdrWriter& U64(uint64_t v);
  // Variable-length opaque / string: length, bytes, zero padding.
  XdrWriter& Opaque(const std::string& bytes);
  // Fixed-length opaque: bytes and padding, no length.
  XdrWriter& Fixed(const std::string& bytes);
  // Appends bytes verbatim (no padding): for deliberately broken messages.
  XdrWriter& Raw(const std::string& bytes);
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

class XdrReader {
 public:
  explicit XdrReader(std::string data) : data_(std::move(data)) {}
  // Each returns false (and reads nothing) iff too few bytes remain.
  bool U32(uint32_t* v);
  bool U64(uint64_t* v);
  bool Opaque(std::string* bytes, uint32_t max_len = 1u << 30);
  bool Fixed(size_t len, std::string* bytes);
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string data_;
  size_t pos_ = 0;
};

struct AuthSysParams {
  uint32_t stamp = 0;
  std::string machine = "nfsedge-test";
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;
};
// Returns the XDR body of an AUTH_SYS credential.
std::string EncodeAuthSys(const AuthSysParams& p);

// An RPC call message; every header field can be set to a wrong value.
struct RpcCall {
  uint32_t xid = 1;
  uint32_t msg_type = kRpcCall;
  uint32_t rpc_version = 2;
  uint32_t program = kNfsProgram;
  uint32_t version = 3;
  uint32_t procedure = 0;
  uint32_t cred_flavor = kAuthSys;
  std::string cred_body = EncodeAuthSys({});
  uint32_t verf_flavor = kAuthNone;
  std::string verf_body;
  std::string args;  // XDR-encoded arguments, appended verbatim.
};
std::string EncodeCall(const RpcCall& call);

// Wraps `message` in record marking: fragments of at most `max_fragment`
// bytes (0: one fragment), the last one flagged.
std::string FrameRecord(const std::string& message, size_t max_fragment = 0);

// A decoded reply header.
struct RpcReply {
  uint32_t xid = 0;
  uint32_t msg_type = 0;
  uint32_t reply_stat = 0;                       // kMsgAccepted / kMsgDenied.
  uint32_t accept_stat = 0;                      // If accepted.
  uint32_t reject_stat = 0;                      // If denied.
  uint32_t auth_stat = 0;                        // If denied with kRejectAuthError.
  uint32_t mismatch_low = 0, mismatch_high = 0;  // PROG_MISMATCH / RPC_MISMATCH.
  std::string results;                           // Bytes after accept_stat if kAcceptSuccess.
  std::string ToString() const;
};
// Returns an error iff `message` is not a well-formed reply header.
StatusOr<RpcReply> ParseReply(const std::string& message);

// One TCP connection sending raw bytes and reading reply records.
class RawConnection {
 public:
  static StatusOr<std::unique_ptr<RawConnection>> Connect(const TcpEndpoint& ep,
                                                          Millis timeout = Millis(10000));

  int fd() const { return fd_.get(); }
  // Sends all of `bytes`. Returns an error if the peer has closed/reset.
  Status Send(const std::string& bytes);

  enum class Outcome { kRecord, kClosed, kTimeout };
  // Reads one whole record (all fragments) into `*record`. kClosed: EOF or
  // reset before a whole record arrived.
  Outcome ReadRecord(std::string* record, Millis timeout = Millis(10000));
  // Returns true iff the peer closes the connection within `timeout`; any
  // records arriving first are skipped (their count goes to `*records`).
  bool WaitForClose(Millis timeout, int* records = nullptr);

  // Sends `call` as one record, reads one record and parses it.
  StatusOr<RpcReply> Call(const RpcCall& call, Millis timeout = Millis(10000));

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  // Reads exactly `n` bytes unless EOF/error/timeout.
  Outcome ReadExact(size_t n, std::string* out, const Deadline& deadline);

  UniqueFd fd_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_RAW_RPC_H_
