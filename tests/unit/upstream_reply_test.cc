// What a client gets when the upstream's reply cannot be passed on as it
// is: results that do not decode (truncated, or of another procedure), and
// a refusal of the program itself (PROG_UNAVAIL, PROG_MISMATCH), which
// speaks of the upstream's versions, not of this proxy's.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "client_calls.h"
#include "programs_bed.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

using test_xdr::Fh;
using test_xdr::Proc;
using test_xdr::Xdr;

constexpr char kRootFh[] = "ROOT-HANDLE-0001";

class UpstreamReplyTest : public ProgramsBed {
 protected:
  void SetUp() override {
    StartDataExport(kRootFh);
  }
  // The status of an NFS3 call's results.
  static uint32_t StatusOf(const std::string& results) {
    XdrReader r(results);
    uint32_t st = 0xffffffff;
    EXPECT_TRUE(r.ReadU32(&st));
    return st;
  }
  std::string LookupArgs(const char* name) {
    LOOKUP3args a{};
    a.what.dir = Fh(root_);
    a.what.name = const_cast<char*>(name);
    return Xdr(Proc(xdr_LOOKUP3args), a);
  }
  const std::string root_ = kRootFh;  // outlives the handles viewing it
};

// An OK whose results stop short: the handle it would hand out cannot be
// registered for the export, an FSINFO not clamped. The client is told of
// a server fault, not given what it cannot decode either.
TEST_F(UpstreamReplyTest, ResultsThatDoNotDecodeAreAServerFault) {
  up_->set_responder([](const FakeUpstream::Seen&) -> std::optional<std::string> {
    std::string out;
    XdrWriter w(&out);
    w.WriteU32(NFS3_OK);
    w.WriteU32(16);  // a handle's length, and no handle
    return out;
  });
  loop_.Start();
  BlockingClient c(port_);
  ASSERT_EQ(test_calls::MountPath(c, 1, "/data").first, static_cast<uint32_t>(MNT3_OK));
  EXPECT_EQ(StatusOf(test_calls::CallResults(c, 2, kNfsProgram, NFSPROC3_LOOKUP, LookupArgs("f"))),
            static_cast<uint32_t>(NFS3ERR_SERVERFAULT));
  FSINFO3args fa{Fh(root_)};
  EXPECT_EQ(StatusOf(test_calls::CallResults(c, 3, kNfsProgram, NFSPROC3_FSINFO,
                                             Xdr(Proc(xdr_FSINFO3args), fa))),
            static_cast<uint32_t>(NFS3ERR_SERVERFAULT));
}

// PROG_MISMATCH from the upstream names its versions; this proxy serves
// version 3. Such a refusal reaches the client as a server fault of the
// call (CallResults fails the test on any reply but an accepted SUCCESS).
TEST_F(UpstreamReplyTest, TheUpstreamsRefusalOfTheProgramIsNotPassedOn) {
  up_->set_refuser([](const FakeUpstream::Seen& s) -> std::optional<AcceptStat> {
    return s.proc == NFSPROC3_GETATTR ? kProgMismatch : kProgUnavail;
  });
  loop_.Start();
  BlockingClient c(port_);
  ASSERT_EQ(test_calls::MountPath(c, 1, "/data").first, static_cast<uint32_t>(MNT3_OK));
  GETATTR3args g{Fh(root_)};
  EXPECT_EQ(StatusOf(test_calls::CallResults(c, 2, kNfsProgram, NFSPROC3_GETATTR,
                                             Xdr(Proc(xdr_GETATTR3args), g))),
            static_cast<uint32_t>(NFS3ERR_SERVERFAULT));
  EXPECT_EQ(StatusOf(test_calls::CallResults(c, 3, kNfsProgram, NFSPROC3_LOOKUP, LookupArgs("f"))),
            static_cast<uint32_t>(NFS3ERR_SERVERFAULT));
  loop_.RunSync([&] { EXPECT_EQ(up_->calls.size(), 2u); });

  // And from the upstream's mountd: MNT is a server fault.
  loop_.RunSync([&] {
    mount_up_->set_refuser(
        [](const FakeUpstream::Seen&) -> std::optional<AcceptStat> { return kProgMismatch; });
  });
  BlockingClient d(port_);
  EXPECT_EQ(test_calls::MountPath(d, 4, "/data").first,
            static_cast<uint32_t>(MNT3ERR_SERVERFAULT));
}

}  // namespace
}  // namespace nfsedge
