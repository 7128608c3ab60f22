#include "cache/path_estimator.h"

#include <gtest/gtest.h>

namespace nfsedge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kCall = 100000;  // reply bytes per call

class PathEstimatorTest : public ::testing::Test {
 protected:
  // Sends a call of kCall bytes every `gap` for `duration`, each answered
  // `rtt` later, and records the replies as they arrive. The path carries
  // kCall / gap bytes per second and holds kCall x rtt / gap in flight.
  void Run(Duration rtt, Duration gap, Duration duration) {
    const MonoTime start = clock_.MonoNow();
    for (MonoTime sent = start; sent < start + duration; sent += gap) {
      Arrive(sent, rtt, kCall);
    }
  }

  void Arrive(MonoTime sent, Duration rtt, uint64_t bytes) {
    clock_.Advance(sent + rtt - clock_.MonoNow());
    est_.OnSample(PathSample{sent, sent + rtt, bytes});
  }

  FakeClock clock_;
  PathEstimator est_{clock_};  // both windows 10 s
};

TEST_F(PathEstimatorTest, NothingIsKnownBeforeTheFirstSample) {
  EXPECT_FALSE(est_.min_rtt());
  EXPECT_FALSE(est_.srtt());
  EXPECT_EQ(est_.rttvar(), Duration::zero());
  EXPECT_EQ(est_.delivery_rate(), 0.0);
  EXPECT_EQ(est_.bdp(), 0u);

  // A reply stamped before its call was sent is not a sample.
  est_.OnSample(PathSample{clock_.MonoNow(), clock_.MonoNow() - milliseconds(1), kCall});
  EXPECT_EQ(est_.samples(), 0u);
  EXPECT_EQ(est_.bdp(), 0u);

  // One call alone: its bytes over its RTT.
  Arrive(clock_.MonoNow(), milliseconds(100), kCall);
  EXPECT_EQ(*est_.min_rtt(), milliseconds(100));
  EXPECT_DOUBLE_EQ(est_.delivery_rate(), 1e6);
  EXPECT_EQ(est_.bdp(), kCall);
}

TEST_F(PathEstimatorTest, ConstantPathConvergesToItsBdp) {
  Run(milliseconds(100), milliseconds(10), seconds(5));  // 10 MB/s x 100 ms
  EXPECT_EQ(*est_.min_rtt(), milliseconds(100));
  // Ten calls in flight: the path's rate, not one call's 1 MB/s.
  EXPECT_NEAR(est_.delivery_rate(), 1e7, 1e7 * 0.001);
  EXPECT_NEAR(static_cast<double>(est_.bdp()), 1e6, 1e6 * 0.001);
  EXPECT_EQ(est_.samples(), 500u);
}

TEST_F(PathEstimatorTest, OneCallInFlightMeasuresOneCall) {
  Run(milliseconds(100), milliseconds(100), seconds(5));
  EXPECT_NEAR(est_.delivery_rate(), 1e6, 1e6 * 0.001);
  EXPECT_NEAR(static_cast<double>(est_.bdp()), kCall, kCall * 0.001);
}

TEST_F(PathEstimatorTest, MinRttForgetsTheOldBaseAfterTheWindow) {
  Run(milliseconds(50), milliseconds(10), seconds(2));
  const MonoTime last_fast = clock_.MonoNow();
  Run(milliseconds(80), milliseconds(10), seconds(9));
  ASSERT_LT(clock_.MonoNow() - last_fast, seconds(10));
  EXPECT_EQ(*est_.min_rtt(), milliseconds(50));
  Run(milliseconds(80), milliseconds(10), seconds(2));
  EXPECT_EQ(*est_.min_rtt(), milliseconds(80));
}

TEST_F(PathEstimatorTest, DoubledRttIsNoticed) {
  Run(milliseconds(100), milliseconds(10), seconds(5));
  EXPECT_NEAR(static_cast<double>(est_.bdp()), 1e6, 1e3);
  Run(milliseconds(200), milliseconds(10), seconds(12));  // same rate
  EXPECT_EQ(*est_.min_rtt(), milliseconds(200));
  EXPECT_NEAR(est_.delivery_rate(), 1e7, 1e4);
  EXPECT_NEAR(static_cast<double>(est_.bdp()), 2e6, 2e3);
  EXPECT_GT(*est_.srtt(), milliseconds(199));
}

TEST_F(PathEstimatorTest, HalvedRateIsNoticedAfterTheWindow) {
  Run(milliseconds(100), milliseconds(10), seconds(5));
  Run(milliseconds(100), milliseconds(20), seconds(9));  // 5 MB/s
  EXPECT_NEAR(est_.delivery_rate(), 1e7, 1e4);           // the max holds
  Run(milliseconds(100), milliseconds(20), seconds(2));
  EXPECT_NEAR(est_.delivery_rate(), 5e6, 5e3);
  EXPECT_NEAR(static_cast<double>(est_.bdp()), 5e5, 5e2);
}

TEST_F(PathEstimatorTest, SmoothedRttFollowsRfc6298) {
  const MonoTime t = clock_.MonoNow();
  Arrive(t, milliseconds(100), 0);
  EXPECT_EQ(*est_.srtt(), milliseconds(100));  // SRTT = R
  EXPECT_EQ(est_.rttvar(), milliseconds(50));  // RTTVAR = R / 2

  Arrive(t + milliseconds(1), milliseconds(180), 0);
  // RTTVAR = 3/4 x 50 + 1/4 x |100 - 180| = 57.5; SRTT = 7/8 x 100 + 1/8 x 180
  EXPECT_EQ(est_.rttvar(), std::chrono::microseconds(57500));
  EXPECT_EQ(*est_.srtt(), milliseconds(110));

  Arrive(t + milliseconds(2), milliseconds(110), 0);
  EXPECT_EQ(est_.rttvar(), std::chrono::microseconds(43125));  // 3/4 x 57.5
  EXPECT_EQ(*est_.srtt(), milliseconds(110));
  EXPECT_EQ(*est_.min_rtt(), milliseconds(100));
}

TEST(PathWindowedExtremum, KeepsTheBestOfTheWindow) {
  const MonoTime t0{seconds(1)};
  WindowedExtremum<int, std::greater<>> max(seconds(10));
  EXPECT_FALSE(max.Get());
  max.Update(t0, 5);
  max.Update(t0 + seconds(1), 3);
  EXPECT_EQ(*max.Get(), 5);
  max.Update(t0 + seconds(4), 4);
  max.Update(t0 + seconds(7), 2);
  EXPECT_EQ(*max.Get(), 5);
  max.Update(t0 + seconds(11), 1);  // 5 expired: the best of the rest
  EXPECT_EQ(*max.Get(), 4);
  max.Update(t0 + seconds(12), 9);
  EXPECT_EQ(*max.Get(), 9);
  max.Update(t0 + seconds(30), 1);  // nothing left in the window
  EXPECT_EQ(*max.Get(), 1);
}

}  // namespace
}  // namespace nfsedge
