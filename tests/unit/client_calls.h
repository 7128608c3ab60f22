// A test client's calls over a BlockingClient (test_loop.h): one v3 call's
// results, and MNT; and a fake upstream mountd's answer.
#ifndef NFSEDGE_TESTS_UNIT_CLIENT_CALLS_H_
#define NFSEDGE_TESTS_UNIT_CLIENT_CALLS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "proxy/mount_service.h"
#include "rpc/rpc_message.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"

namespace nfsedge {
namespace test_calls {

// Sends a version 3 call of `prog` as uid 1000 and returns its results (""
// and a test failure if no accepted reply comes).
inline std::string CallResults(BlockingClient& c, uint32_t xid, uint32_t prog, uint32_t proc,
                               const std::string& args) {
  c.SendRecord(MakeCall(xid, prog, 3, proc, args, SysCred(1000, 100)));
  std::optional<std::string> reply = c.ReadRecord();
  EXPECT_TRUE(reply.has_value());
  if (!reply) return "";
  StatusOr<ReplyHeader> h = ParseReply(*reply);
  EXPECT_TRUE(h.ok() && h->accept_stat == kSuccess);
  return h.ok() ? reply->substr(h->results_offset) : "";
}

// MNT `path`; returns the status and the handle.
inline std::pair<uint32_t, std::string> MountPath(BlockingClient& c, uint32_t xid,
                                                  const std::string& path) {
  std::string args;
  XdrWriter(&args).WriteOpaque(path);
  const std::string r = CallResults(c, xid, kMountProgram, /*MNT*/ 1, args);
  XdrReader rd(r);
  uint32_t status = 0xffffffff;
  std::string fh;
  if (rd.ReadU32(&status) && status == MNT3_OK) {
    EXPECT_TRUE(rd.ReadString(&fh, 64));
  }
  return {status, fh};
}

// A fake upstream mountd's answer to MNT `s`: the root handle `mounts` has
// for the path (AUTH_SYS), else MNT3ERR_NOENT.
inline std::string MountdAnswer(const FakeUpstream::Seen& s,
                                const std::map<std::string, std::string>& mounts) {
  std::string path;
  XdrReader r(s.args);
  EXPECT_TRUE(r.ReadString(&path, 1024));
  std::string out;
  XdrWriter w(&out);
  auto it = mounts.find(path);
  if (it == mounts.end()) {
    w.WriteU32(MNT3ERR_NOENT);
    return out;
  }
  w.WriteU32(MNT3_OK);
  w.WriteOpaque(it->second);
  w.WriteU32(1);
  w.WriteU32(kAuthSys);
  return out;
}

}  // namespace test_calls
}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_UNIT_CLIENT_CALLS_H_
