#include "rpc_record_parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace nfsedge::wan {

namespace {

constexpr uint32_t kLastFragmentBit = 0x80000000u;
constexpr uint32_t kRpcVersion = 2;

uint32_t ReadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

RpcRecordParser::RpcRecordParser(MessageFn on_message, uint32_t max_fragment_bytes)
    : on_message_(std::move(on_message)), max_fragment_bytes_(max_fragment_bytes) {}

void RpcRecordParser::Feed(const uint8_t* data, size_t n) {
  while (n > 0 && !failed_) {
    if (!in_body_) {
      mark_ = (mark_ << 8) | *data;
      ++data;
      --n;
      if (++mark_bytes_ < 4) continue;
      const uint32_t length = mark_ & ~kLastFragmentBit;
      last_fragment_ = (mark_ & kLastFragmentBit) != 0;
      mark_bytes_ = 0;
      mark_ = 0;
      if (length > max_fragment_bytes_) {
        failed_ = true;
        return;
      }
      in_body_ = true;
      body_left_ = length;
      if (length == 0) EndFragment();
      continue;
    }
    const size_t take = std::min<size_t>(body_left_, n);
    ConsumeBody(data, take);
    data += take;
    n -= take;
    body_left_ -= static_cast<uint32_t>(take);
    if (body_left_ == 0) EndFragment();
  }
}

void RpcRecordParser::ConsumeBody(const uint8_t* data, size_t n) {
  if (head_bytes_ >= kCallHeaderBytes || reported_) return;
  const size_t copy = std::min(n, kCallHeaderBytes - head_bytes_);
  std::memcpy(head_ + head_bytes_, data, copy);
  head_bytes_ += copy;
  MaybeReport();
}

void RpcRecordParser::MaybeReport() {
  if (reported_ || head_bytes_ < kReplyHeaderBytes) return;
  RpcMessageHeader header;
  header.xid = ReadBigEndian32(head_);
  header.msg_type = ReadBigEndian32(head_ + 4);
  if (header.msg_type == kRpcReply) {
    reported_ = true;
    on_message_(header);
    return;
  }
  if (header.msg_type != kRpcCall) {
    failed_ = true;  // Not an RPC stream (or lost framing): stop interpreting it.
    return;
  }
  if (head_bytes_ < kCallHeaderBytes) return;
  reported_ = true;
  header.rpcvers = ReadBigEndian32(head_ + 8);
  header.prog = ReadBigEndian32(head_ + 12);
  header.vers = ReadBigEndian32(head_ + 16);
  header.proc = ReadBigEndian32(head_ + 20);
  if (header.rpcvers != kRpcVersion) {
    ++malformed_records_;
    return;
  }
  on_message_(header);
}

void RpcRecordParser::EndFragment() {
  in_body_ = false;
  if (!last_fragment_) return;
  if (!reported_) ++malformed_records_;
  head_bytes_ = 0;
  reported_ = false;
}

}  // namespace nfsedge::wan
