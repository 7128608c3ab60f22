// DESIGN rule 7 for every procedure it names: a retransmission of a call
// that is not idempotent (CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR,
// RENAME, LINK, a guarded SETATTR), sent again on a new connection as a
// client does after a reconnect, gets the first call's reply and does not
// run again upstream (where its second run would answer otherwise: EXIST,
// NOENT). An unguarded SETATTR runs again: it is idempotent.
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "client_calls.h"
#include "programs_bed.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

constexpr char kRootFh[] = "ROOT-HANDLE-0001";

// A procedure, its arguments (under the export's root) and the number of
// zero words after the status of its failure results (wcc data and the
// like, nothing set).
struct Mutation {
  const char* name;
  uint32_t proc;
  std::string args;
  int fail_words;
  bool runs_once;
};

void PrintTo(const Mutation& m, std::ostream* os) { *os << m.name; }

std::string Dirop(const std::string& name) {
  std::string out;
  XdrWriter w(&out);
  w.WriteOpaque(kRootFh);
  w.WriteOpaque(name);
  return out;
}
// A sattr3 that sets nothing.
std::string NoAttrs() { return std::string(6 * 4, '\0'); }

std::vector<Mutation> Mutations() {
  std::vector<Mutation> m;
  m.push_back({"CREATE", NFSPROC3_CREATE, Dirop("f") + std::string(4, '\0') + NoAttrs(), 2, true});
  m.push_back({"MKDIR", NFSPROC3_MKDIR, Dirop("d") + NoAttrs(), 2, true});
  {
    std::string a = Dirop("l") + NoAttrs();
    XdrWriter(&a).WriteOpaque("target");
    m.push_back({"SYMLINK", NFSPROC3_SYMLINK, a, 2, true});
  }
  {
    std::string a = Dirop("p");
    XdrWriter(&a).WriteU32(NF3FIFO);
    a += NoAttrs();
    m.push_back({"MKNOD", NFSPROC3_MKNOD, a, 2, true});
  }
  m.push_back({"REMOVE", NFSPROC3_REMOVE, Dirop("f"), 2, true});
  m.push_back({"RMDIR", NFSPROC3_RMDIR, Dirop("d"), 2, true});
  m.push_back({"RENAME", NFSPROC3_RENAME, Dirop("a") + Dirop("b"), 4, true});
  {
    std::string a;
    XdrWriter(&a).WriteOpaque(kRootFh);
    a += Dirop("hard");
    m.push_back({"LINK", NFSPROC3_LINK, a, 3, true});
  }
  for (bool guarded : {true, false}) {
    std::string a;
    XdrWriter w(&a);
    w.WriteOpaque(kRootFh);
    a += NoAttrs();
    XdrWriter g(&a);
    g.WriteU32(guarded ? 1 : 0);
    if (guarded) {
      g.WriteU32(1700000000);
      g.WriteU32(0);
    }
    m.push_back({guarded ? "GuardedSETATTR" : "UnguardedSETATTR", NFSPROC3_SETATTR, a, 2,
                 guarded});
  }
  return m;
}

class RetransmissionTest : public ProgramsBed, public ::testing::WithParamInterface<Mutation> {
 protected:
  void SetUp() override {
    StartDataExport(kRootFh);
    // The first run of a call fails one way (EXIST), any later run another
    // (NOENT), as a second CREATE or REMOVE of one name would.
    const int words = GetParam().fail_words;
    up_->set_responder([this, words](const FakeUpstream::Seen&) -> std::optional<std::string> {
      std::string out;
      XdrWriter(&out).WriteU32(runs_++ == 0 ? NFS3ERR_EXIST : NFS3ERR_NOENT);
      out.append(4 * words, '\0');
      return out;
    });
    loop_.Start();
  }
  size_t Runs() {
    size_t n = 0;
    loop_.RunSync([&] { n = runs_; });
    return n;
  }
  size_t runs_ = 0;  // on the loop's thread
};

TEST_P(RetransmissionTest, ARetransmissionOnANewConnectionRunsOnceIfNotIdempotent) {
  const Mutation& m = GetParam();
  {
    BlockingClient c(port_);
    ASSERT_EQ(test_calls::MountPath(c, 1, "/data").first, static_cast<uint32_t>(MNT3_OK));
  }
  const std::string call = MakeCall(77, kNfsProgram, 3, m.proc, m.args, SysCred(1000, 100));
  std::optional<std::string> first, again;
  {
    BlockingClient a(port_);
    a.SendRecord(call);
    first = a.ReadRecord();
  }
  BlockingClient b(port_);
  b.SendRecord(call);
  again = b.ReadRecord();
  ASSERT_TRUE(first && again);
  StatusOr<ReplyHeader> h1 = ParseReply(*first), h2 = ParseReply(*again);
  ASSERT_TRUE(h1.ok() && h2.ok());
  ASSERT_EQ(h1->accept_stat, kSuccess) << "the arguments did not decode";
  XdrReader r1(std::string_view(*first).substr(h1->results_offset));
  XdrReader r2(std::string_view(*again).substr(h2->results_offset));
  uint32_t s1 = 0, s2 = 0;
  ASSERT_TRUE(r1.ReadU32(&s1) && r2.ReadU32(&s2));
  EXPECT_EQ(s1, static_cast<uint32_t>(NFS3ERR_EXIST));
  if (m.runs_once) {
    EXPECT_EQ(Runs(), 1u) << m.name << " ran again upstream";
    EXPECT_EQ(s2, s1);
    EXPECT_EQ(*again, *first);
  } else {
    EXPECT_EQ(Runs(), 2u) << m.name << " is idempotent: it runs again";
    EXPECT_EQ(s2, static_cast<uint32_t>(NFS3ERR_NOENT));
  }
}

INSTANTIATE_TEST_SUITE_P(Procedures, RetransmissionTest, ::testing::ValuesIn(Mutations()),
                         [](const ::testing::TestParamInfo<Mutation>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace nfsedge
