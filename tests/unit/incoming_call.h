// A client's NFSv3 call as the RPC server hands it to a program, without a
// socket, for the unit tests that drive NfsService.
#ifndef NFSEDGE_TESTS_UNIT_INCOMING_CALL_H_
#define NFSEDGE_TESTS_UNIT_INCOMING_CALL_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "proxy/nfs_procs.h"
#include "rpc/rpc_message.h"
#include "rpc/rpc_server.h"
#include "rpc/sockaddr.h"

namespace nfsedge {

// The call `xid` of procedure `proc` with `args` (XDR) for `cred`, from
// 127.0.0.1; `on_results` gets the results of its reply (which must be an
// accepted SUCCESS) when it is sent.
inline std::shared_ptr<IncomingCall> IncomingNfsCall(uint32_t xid, uint32_t proc,
                                                     const OpaqueAuth& cred,
                                                     const std::string& args,
                                                     std::function<void(std::string)> on_results) {
  CallHeader h;
  h.xid = xid;
  h.prog = kNfsProgram;
  h.vers = kNfsVersion;
  h.proc = proc;
  h.cred = cred;
  const std::string record = EncodeCallHeader(h) + args;
  ParsedCall parsed = ParseCall(record);
  EXPECT_EQ(parsed.error, CallError::kNone);
  auto call = std::make_shared<IncomingCall>(std::weak_ptr<ServerConnection>(), record, parsed,
                                             *ResolveAddress("127.0.0.1", 700));
  call->AddReplyHook([on_results = std::move(on_results)](std::string_view reply) {
    if (reply.empty()) return;  // destroyed unanswered
    StatusOr<ReplyHeader> rh = ParseReply(reply);
    EXPECT_TRUE(rh.ok() && rh->accept_stat == kSuccess);
    if (rh.ok()) on_results(std::string(reply.substr(rh->results_offset)));
  });
  return call;
}

}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_UNIT_INCOMING_CALL_H_
