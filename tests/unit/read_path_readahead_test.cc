// ReadPath read-ahead depth against the measured upstream path: the window
// of read-ahead follows min(max(2 x bdp, 2 x read_size), readahead_max),
// where bdp is what the PathEstimator measured from the ReadPath's own
// fetches. The upstream is reached through a simulated path (fake clock,
// base round trip, one bottleneck of a given rate), so the estimator
// measures a real bandwidth-delay product, and the tests check that the
// window grows to about twice it, shrinks when it drops, is capped by the
// configured ceiling and never falls below two upstream READs.

#include <map>

#include "read_path_fixture.h"
#include "rpc/rpc_message.h"

namespace nfsedge {
namespace {

using namespace read_path_test;  // NOLINT: test file, the fixture's names throughout.
using std::chrono::milliseconds;

constexpr uint32_t kReadSize = 16 * kBlock;  // upstream READs of 64 KiB
constexpr uint64_t kFileSize = 32 << 20;
constexpr double kMiB = 1 << 20;

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

class ReadPathReadaheadTest : public ReadPathTest {
 protected:
  // A ReadPath with upstream READs of kReadSize, read-ahead up to `ceiling`,
  // and no bound on read-ahead fetches in flight that the tests would meet,
  // and a new file for the client to read from its start (the path and its
  // estimate stay).
  void Start(uint64_t ceiling) {
    Settle();  // nothing on the path for the ReadPath replaced here
    ceiling_ = ceiling;
    ReadPathOptions o;
    o.read_size = kReadSize;
    o.readahead_max = ceiling;
    o.max_background = 4096;
    MakeReadPath(o);
    file_ = "FILE-HANDLE-" + std::to_string(++files_started_);
    SetFile(Content(kFileSize, files_started_), kWall0 - 3600);
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    hold_ = true;
    first_call_ = up_.calls.size();
    next_ = 0;
  }

  // The path between the proxy and the upstream: every reply arrives a base
  // round trip after its call, then waits for the bottleneck, which passes
  // `rate` bytes per second in FIFO order.
  void SetPath(Duration rtt, double rate) {
    rtt_ = rtt;
    rate_ = rate;
  }
  // Bandwidth-delay product of the simulated path, from its base round trip.
  // The estimator's RTT also holds the transmission of the smallest reply
  // it saw (one block to one READ), so it measures up to kReadSize more.
  double PathBdp() const { return rate_ * std::chrono::duration<double>(rtt_).count(); }
  // Expects the estimate to be the path's BDP, and `window` (the window
  // the estimate gave, `limit`) to be twice that.
  void ExpectTwiceThePath(uint64_t window, uint64_t limit) {
    const double bdp = static_cast<double>(path_.bdp());
    EXPECT_GE(bdp, 0.9 * PathBdp());
    EXPECT_LE(bdp, 1.05 * (PathBdp() + kReadSize));
    EXPECT_EQ(window, RoundUp(limit, kBlock)) << "2 x the estimate of the moment";
    EXPECT_GE(static_cast<double>(window), 2 * 0.9 * PathBdp());
    EXPECT_LE(static_cast<double>(window), 2 * 1.05 * (PathBdp() + kReadSize));
  }

  // Gives every call not yet on the path its arrival time.
  void Schedule() {
    const MonoTime now = clock_.MonoNow();
    for (; scheduled_ < up_.calls.size(); ++scheduled_) {
      const double bytes = static_cast<double>(Respond(up_.calls[scheduled_]).size());
      const MonoTime start = std::max(now + rtt_, link_free_);
      link_free_ = start + std::chrono::duration_cast<Duration>(
                               std::chrono::duration<double>(bytes / rate_));
      due_.emplace(link_free_, Due{scheduled_, now});
    }
  }
  // Delivers the next reply on the path (time moves to its arrival).
  // Returns false iff no call is on the path.
  bool Step() {
    Schedule();
    if (due_.empty()) return false;
    auto [at, due] = *due_.begin();
    due_.erase(due_.begin());
    clock_.Advance(at - clock_.MonoNow());
    Deliver(due.call, Respond(up_.calls[due.call]),
            std::chrono::time_point_cast<std::chrono::steady_clock::duration>(due.sent));
    Drain();
    return true;
  }
  // Delivers every call on the path, and those their replies cause.
  void Settle() {
    while (Step()) {
    }
  }
  // Answers call `i` with `results`, stamped as sent at `sent_at` by the
  // transport.
  void Deliver(size_t i, const std::string& results,
               std::chrono::steady_clock::time_point sent_at, uint32_t transmissions = 1) {
    std::string record = EncodeAcceptedReply(static_cast<uint32_t>(9000 + i), kSuccess) + results;
    StatusOr<ReplyHeader> h = ParseReply(record);
    ASSERT_TRUE(h.ok());
    RpcReply reply{*h, record};
    reply.sent_at = sent_at;
    reply.transmissions = transmissions;
    ReplyCallback done = std::move(up_.calls[i].done);  // (done may grow calls)
    done(std::move(reply));
  }

  // Furthest byte the proxy asked the upstream for.
  uint64_t Furthest() const {
    uint64_t end = 0;
    for (size_t i = first_call_; i < up_.calls.size(); ++i) {
      if (up_.calls[i].proc != NFSPROC3_READ) continue;
      XdrValue<READ3args> a(Proc(xdr_READ3args));
      EXPECT_TRUE(a.Decode(up_.calls[i].args));
      end = std::max<uint64_t>(end, a->offset + a->count);
    }
    return end;
  }

  // The client reads `chunk` bytes at next_ and waits for the answer.
  // Returns the read-ahead window the read left: how far beyond its end the
  // proxy had asked the upstream for, with *limit (if given) the window the
  // formula gives from the estimate of that moment.
  uint64_t ClientRead(uint32_t chunk, uint64_t* limit = nullptr) {
    Outcome out;
    Read(next_, chunk, &out);
    Drain();
    const uint64_t end = next_ + chunk;
    const uint64_t window = Furthest() - end;
    if (limit != nullptr) {
      *limit = std::min(std::max<uint64_t>(2 * path_.bdp(), 2 * kReadSize), ceiling_);
    }
    while (out.replies + out.forwards == 0 && Step()) {
    }
    ExpectData(out, next_, chunk);
    next_ = end;
    return window;
  }
  // Reads sequentially in chunks of kReadSize for `reads` reads; returns
  // the window left by the last one and sets *limit as ClientRead does.
  uint64_t ReadOn(int reads, uint64_t* limit) {
    uint64_t window = 0;
    for (int i = 0; i < reads; ++i) window = ClientRead(kReadSize, limit);
    return window;
  }

  uint64_t ceiling_ = 0;
  int files_started_ = 0;
  size_t first_call_ = 0;  // the first call for the current file
  Duration rtt_ = milliseconds(50);
  double rate_ = 40 * kMiB;
  MonoTime link_free_{};
  struct Due {
    size_t call;
    MonoTime sent;
  };
  std::multimap<MonoTime, Due> due_;
  size_t scheduled_ = 0;
  uint64_t next_ = 0;  // the client's next offset
};

// A long fat path (50 ms, 40 MiB/s: about 2 MiB in flight): read-ahead
// grows from two READs to about twice the measured BDP, exactly what the
// formula gives from the estimate; a smaller ceiling caps it.
TEST_F(ReadPathReadaheadTest, WindowGrowsToTwiceTheMeasuredBdp) {
  Start(64 << 20);
  SetPath(milliseconds(50), 40 * kMiB);
  uint64_t limit = 0;
  const uint64_t early = ClientRead(kReadSize, &limit);
  EXPECT_EQ(early, 0u) << "one read is not a stream yet";
  const uint64_t second = ClientRead(kReadSize, &limit);
  EXPECT_EQ(second, RoundUp(limit, kBlock));
  EXPECT_LE(second, 2u * 2 * kReadSize) << "the first sample is one READ per round trip";

  const uint64_t window = ReadOn(120, &limit);
  ASSERT_TRUE(path_.min_rtt());
  EXPECT_GE(*path_.min_rtt(), milliseconds(50));
  EXPECT_LE(*path_.min_rtt(), milliseconds(52)) << "the base RTT plus one READ's transmission";
  ExpectTwiceThePath(window, limit);
  EXPECT_GT(window, 8u * kReadSize) << "well above the floor";

  // The same path with a ceiling of 1 MiB: the window stops there.
  Start(1 << 20);
  const uint64_t capped = ReadOn(120, &limit);
  EXPECT_GT(2 * path_.bdp(), ceiling_) << "the path would allow more";
  EXPECT_EQ(capped, ceiling_);
}

// The path slows down to an eighth (5 MiB/s) after a pause longer than the
// estimator's windows: the window shrinks to about twice the new BDP.
TEST_F(ReadPathReadaheadTest, WindowShrinksWhenTheBdpDrops) {
  Start(64 << 20);
  SetPath(milliseconds(50), 40 * kMiB);
  uint64_t limit = 0;
  const uint64_t fast = ReadOn(100, &limit);
  ExpectTwiceThePath(fast, limit);
  Settle();
  const uint64_t fetched = Furthest();

  clock_.Advance(std::chrono::seconds(11));  // the client pauses
  SetPath(milliseconds(50), 5 * kMiB);
  // What was read ahead is used first (no time passes, the estimate keeps
  // the fast path); then the window is refilled at the new rate.
  const uint64_t samples = path_.samples();
  for (int i = 0; i < 300 && path_.samples() == samples; ++i) ClientRead(kReadSize);
  uint64_t window = ClientRead(kReadSize, &limit);
  for (int i = 0; i < 300 && window > RoundUp(limit, kBlock); ++i) {
    window = ClientRead(kReadSize, &limit);
  }
  EXPECT_GT(next_, fetched) << "the old window was used first";
  const uint64_t slow = ReadOn(60, &limit);
  ExpectTwiceThePath(slow, limit);
  EXPECT_LT(slow, fast / 4) << "the window follows the path down";
}

// Without a measured path (replies without delay: min RTT 0, BDP 0) the
// window is two upstream READs; a ceiling below that wins.
TEST_F(ReadPathReadaheadTest, FloorIsTwoReadsAndTheCeilingWinsOverIt) {
  Start(64 << 20);
  SetPath(Duration::zero(), 1e15);
  uint64_t window = 0;
  for (int i = 0; i < 12; ++i) window = ClientRead(kBlock);
  EXPECT_EQ(path_.bdp(), 0u);
  EXPECT_EQ(window, 2u * kReadSize);

  Start(8 * kBlock);
  for (int i = 0; i < 12; ++i) window = ClientRead(kBlock);
  EXPECT_EQ(window, 8u * kBlock);
}

// The path's RTT sample runs from when the call left the transport
// (RpcReply::sent_at), not from when the ReadPath made it: time waiting in
// the proxy's own scheduler queue is not path delay.
TEST_F(ReadPathReadaheadTest, QueueWaitIsNotTakenForRoundTrip) {
  Start(0);
  Outcome out;
  Read(0, kBlock, &out);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  clock_.Advance(milliseconds(30));  // queued behind other calls
  const auto left =
      std::chrono::time_point_cast<std::chrono::steady_clock::duration>(clock_.MonoNow());
  clock_.Advance(milliseconds(50));
  Deliver(0, Respond(up_.calls[0]), left);
  Drain();
  ExpectData(out, 0, kBlock);
  ASSERT_TRUE(path_.min_rtt());
  EXPECT_EQ(*path_.min_rtt(), milliseconds(50));
  EXPECT_EQ(*path_.srtt(), milliseconds(50));

  // A reply without a stamp (or with one that is not of this clock) counts
  // from when the fetch was made.
  Outcome far;
  Read(1 << 20, kBlock, &far);
  Drain();
  ASSERT_EQ(up_.calls.size(), 2u);
  clock_.Advance(milliseconds(90));
  Deliver(1, Respond(up_.calls[1]), std::chrono::steady_clock::time_point{});
  Outcome later;
  Read(2 << 20, kBlock, &later);
  Drain();
  ASSERT_EQ(up_.calls.size(), 3u);
  clock_.Advance(milliseconds(90));
  Deliver(2, Respond(up_.calls[2]),
          std::chrono::time_point_cast<std::chrono::steady_clock::duration>(clock_.MonoNow() +
                                                                            milliseconds(5)));
  Drain();
  ExpectData(far, 1 << 20, kBlock);
  ExpectData(later, 2 << 20, kBlock);
  EXPECT_EQ(*path_.min_rtt(), milliseconds(50));
  // RFC 6298 smoothing of 50, 90, 90 ms.
  const Duration after_two = (7 * milliseconds(50) + milliseconds(90)) / 8;
  EXPECT_EQ(*path_.srtt(), (7 * after_two + milliseconds(90)) / 8);
  EXPECT_EQ(path_.samples(), 3u);
}

// A READ the transport sent twice (after a timeout or a reconnect) times no
// round trip: its reply may answer either transmission (Karn's rule).
TEST_F(ReadPathReadaheadTest, AReadSentTwiceGivesNoRoundTrip) {
  Start(0);
  Outcome out;
  Read(0, kBlock, &out);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  clock_.Advance(milliseconds(2));
  const auto resent =
      std::chrono::time_point_cast<std::chrono::steady_clock::duration>(clock_.MonoNow());
  clock_.Advance(milliseconds(1));
  Deliver(0, Respond(up_.calls[0]), resent, 2);
  Drain();
  ExpectData(out, 0, kBlock);
  EXPECT_EQ(path_.samples(), 0u);
  EXPECT_FALSE(path_.min_rtt());
}

}  // namespace
}  // namespace nfsedge
