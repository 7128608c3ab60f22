#include "rpc/rpc_message.h"

#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

bool ReadAuth(XdrReader* r, OpaqueAuth* a) {
  return r->ReadU32(&a->flavor) && r->ReadOpaque(&a->body, kMaxAuthBytes);
}

void WriteAuth(XdrWriter* w, const OpaqueAuth& a) {
  w->WriteU32(a.flavor);
  w->WriteOpaque(a.body);
}

}  // namespace

ParsedCall ParseCall(std::string_view record) {
  ParsedCall p;
  XdrReader r(record);
  uint32_t mtype;
  if (!r.ReadU32(&p.header.xid) || !r.ReadU32(&mtype) || mtype != kCall ||
      !r.ReadU32(&p.header.rpcvers)) {
    p.error = CallError::kMalformed;
    return p;
  }
  if (p.header.rpcvers != kRpcVersion) {
    p.error = CallError::kRpcMismatch;
    return p;
  }
  if (!r.ReadU32(&p.header.prog) || !r.ReadU32(&p.header.vers) || !r.ReadU32(&p.header.proc)) {
    p.error = CallError::kMalformed;
    return p;
  }
  if (!ReadAuth(&r, &p.header.cred)) {
    p.error = CallError::kBadAuth;
    return p;
  }
  if (!ReadAuth(&r, &p.header.verf)) {
    p.error = CallError::kBadVerf;
    return p;
  }
  p.args_offset = r.offset();
  return p;
}

std::string EncodeCallHeader(const CallHeader& h) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(h.xid);
  w.WriteU32(kCall);
  w.WriteU32(h.rpcvers);
  w.WriteU32(h.prog);
  w.WriteU32(h.vers);
  w.WriteU32(h.proc);
  WriteAuth(&w, h.cred);
  WriteAuth(&w, h.verf);
  return out;
}

StatusOr<ReplyHeader> ParseReply(std::string_view record) {
  ReplyHeader h;
  XdrReader r(record);
  uint32_t mtype, stat;
  if (!r.ReadU32(&h.xid) || !r.ReadU32(&mtype) || mtype != kReply || !r.ReadU32(&stat)) {
    return ProtocolError("reply header truncated or not a reply");
  }
  if (stat == kMsgAccepted) {
    h.reply_stat = kMsgAccepted;
    OpaqueAuth verf;
    uint32_t astat;
    if (!ReadAuth(&r, &verf) || !r.ReadU32(&astat) || astat > kSystemErr) {
      return ProtocolError("accepted reply malformed");
    }
    h.accept_stat = static_cast<AcceptStat>(astat);
    if (h.accept_stat == kProgMismatch &&
        (!r.ReadU32(&h.mismatch_low) || !r.ReadU32(&h.mismatch_high))) {
      return ProtocolError("PROG_MISMATCH reply truncated");
    }
    h.results_offset = r.offset();
    return h;
  }
  if (stat != kMsgDenied) return ProtocolError("bad reply_stat");
  h.reply_stat = kMsgDenied;
  uint32_t rstat;
  if (!r.ReadU32(&rstat)) return ProtocolError("denied reply truncated");
  if (rstat == kRpcMismatch) {
    h.reject_stat = kRpcMismatch;
    if (!r.ReadU32(&h.mismatch_low) || !r.ReadU32(&h.mismatch_high)) {
      return ProtocolError("RPC_MISMATCH reply truncated");
    }
  } else if (rstat == kAuthError) {
    h.reject_stat = kAuthError;
    uint32_t a;
    if (!r.ReadU32(&a)) return ProtocolError("AUTH_ERROR reply truncated");
    h.auth_stat = static_cast<AuthStat>(a);
  } else {
    return ProtocolError("bad reject_stat");
  }
  return h;
}

std::string EncodeAcceptedReply(uint32_t xid, AcceptStat stat, uint32_t low, uint32_t high) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(xid);
  w.WriteU32(kReply);
  w.WriteU32(kMsgAccepted);
  WriteAuth(&w, OpaqueAuth{});
  w.WriteU32(stat);
  if (stat == kProgMismatch) {
    w.WriteU32(low);
    w.WriteU32(high);
  }
  return out;
}

std::string EncodeRpcMismatchReply(uint32_t xid) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(xid);
  w.WriteU32(kReply);
  w.WriteU32(kMsgDenied);
  w.WriteU32(kRpcMismatch);
  w.WriteU32(kRpcVersion);
  w.WriteU32(kRpcVersion);
  return out;
}

std::string EncodeAuthErrorReply(uint32_t xid, AuthStat stat) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(xid);
  w.WriteU32(kReply);
  w.WriteU32(kMsgDenied);
  w.WriteU32(kAuthError);
  w.WriteU32(stat);
  return out;
}

bool RefusesTheProgram(const ReplyHeader& h) {
  if (h.reply_stat == kMsgDenied) return h.reject_stat == kRpcMismatch;
  return h.accept_stat == kProgUnavail || h.accept_stat == kProgMismatch;
}

std::string DescribeRefusal(const ReplyHeader& h) {
  const std::string range =
      " " + std::to_string(h.mismatch_low) + ".." + std::to_string(h.mismatch_high);
  if (h.reply_stat == kMsgDenied) {
    return h.reject_stat == kRpcMismatch ? "RPC_MISMATCH" + range
                                         : "AUTH_ERROR " + std::to_string(h.auth_stat);
  }
  if (h.accept_stat == kProgMismatch) return "PROG_MISMATCH" + range;
  if (h.accept_stat == kProgUnavail) return "PROG_UNAVAIL";
  return "accept_stat " + std::to_string(h.accept_stat);
}

}  // namespace nfsedge
