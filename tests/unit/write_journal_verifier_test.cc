// The journal's verifier on a loss, more: it changes only for data that
// was answered from the journal, and its new value is queued before the
// removal of the lost records; the walk of what a write replaced stays
// linear however the overwrites overlap.
#include <chrono>
#include <string>
#include <vector>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

const Status kDiskError(StatusCode::kIoError, "disk");

// A FakeJournal that also records, in `events`, when the verifier changes
// ("v"), in the order of the other queued work.
class EventJournal : public FakeJournal {
 public:
  void ChangeVerifier() override {
    events.push_back("v");
    FakeJournal::ChangeVerifier();
  }
};

class JournalVerifierTest : public JournalTest {
 protected:
  int Index(const std::vector<std::string>& ev, const std::string& e) const {
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i] == e) return static_cast<int>(i);
    }
    return -1;
  }
  // Answers every pending call of both upstreams with `status`.
  void FailPending(nfsstat3 status) {
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (int i = u->Pending(); i >= 0; i = u->Pending()) {
        u->Answer(static_cast<size_t>(i), WriteFail(status));
      }
    }
  }
};

// (rule 2, docs "Edge journal": the verifier changes "where the data lost
// had been answered UNSTABLE") An UNSTABLE write whose append the journal
// refused is answered once stable upstream; the upstream refuses it and
// its client gets the error. Nothing was answered from the journal, yet
// the journal's verifier (shared by every client of every write_back
// export) changes: clients that lost nothing resend.
TEST_F(JournalVerifierTest, RefusedAppendThatFailsUpstreamDoesNotChangeTheJournalVerifier) {
  const Verf before = journal_.verifier();
  WriteBack(1, 0, "aaaa", UNSTABLE);
  journal_.Complete(kDiskError);  // the append refused: answered once stable upstream
  ASSERT_EQ(ReplyOf(1), nullptr);
  Advance(std::chrono::milliseconds(100));
  FailPending(NFS3ERR_NOSPC);  // not kept: nothing acknowledged
  ASSERT_NE(ReplyOf(1), nullptr);
  EXPECT_EQ(ReplyOf(1)->status, NFS3ERR_NOSPC);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_EQ(journal_.verifier(), before)
      << "data never answered from the journal changed the journal's verifier for every client";
  EXPECT_EQ(wp_->stats().verifier_changes, 0u);
}

// (rule 2, crash between the change and its write) Data answered UNSTABLE
// from the journal is given up on: its record's removal and the new
// verifier go to the journal's writer thread, which writes what it finds
// queued in one batch. The verifier change must be queued first: else the
// removal could reach the disk in an earlier batch, and a crash then leave
// no record and the old verifier, which the client's COMMIT after the
// restart would get with OK.
TEST_F(JournalVerifierTest, VerifierChangeIsQueuedNoLaterThanTheLostRecordsRemoval) {
  EventJournal ej;
  options_.journal = &ej;
  Make();
  WriteBack(1, 0, "aaaa", UNSTABLE);
  ej.Complete();
  ASSERT_NE(ReplyOf(1), nullptr);
  ASSERT_EQ(ReplyOf(1)->status, NFS3_OK);
  RefuseUntilGivenUp(NFS3ERR_DQUOT);
  ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
  const int v = Index(ej.events, "v");
  const int removed = Index(ej.events, "-1");
  ASSERT_GE(v, 0) << "no verifier change";
  ASSERT_GE(removed, 0) << "the lost record is not removed";
  std::string seen;
  for (const auto& e : ej.events) seen += e + " ";
  EXPECT_LT(v, removed) << "the lost record's removal is queued before the new verifier: "
                        << seen;
}

// (rules 8, 9) Unevidenced writes overwriting each other alternately over
// [0, 10) and [5, 10) while the first is upstream: what each replaced
// forms a graph where X(k+1) -> {X(k), Y(k)} and Y(k) -> X(k). Walked
// without remembering what it has seen, a refusal of the last write would
// visit about 2^k records, on the event loop.
TEST_F(JournalVerifierTest, KeepsAcknowledgedIsNotExponentialInOverwrites) {
  // Walked without remembering what it has seen, 40 rounds would keep the
  // loop busy for hours: the test binary's time limit would end it.
  constexpr int kRounds = 40;
  WriteBack(1, 0, "0000000000", FILE_SYNC, /*may_buffer=*/false);  // lone: at once
  ASSERT_EQ(up_.calls.size(), 1u);
  int tag = 2;
  for (int k = 0; k < kRounds; ++k) {
    WriteBack(tag++, 0, "xxxxxxxxxx", FILE_SYNC, /*may_buffer=*/false);
    WriteBack(tag++, 5, "yyyyy", FILE_SYNC, /*may_buffer=*/false);
  }
  WriteBack(tag++, 0, "zzzzzzzzzz", FILE_SYNC, /*may_buffer=*/false);
  journal_.Complete();
  up_.Answer(0, WriteOk(10, FILE_SYNC, kV1, Attr(10, 3)));
  Advance(std::chrono::milliseconds(20));
  int pending = up_.Pending();
  ASSERT_GE(pending, 0);
  ASSERT_EQ(DecodeWriteArgs(up_.calls[static_cast<size_t>(pending)].args).data, "zzzzzzzzzz");
  up_.Answer(static_cast<size_t>(pending), WriteFail(NFS3ERR_NOSPC));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u) << "nothing acknowledged: dropped with the error";
  journal_.Complete();  // the records' removals on disk
  EXPECT_EQ(replies_.size(), static_cast<size_t>(tag - 1)) << "every write answered";
}

}  // namespace
}  // namespace nfsedge::write_path_test
