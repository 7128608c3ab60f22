#include "cache/lifetime.h"

#include <gtest/gtest.h>

#include "cache/change_id.h"
#include "test_attrs.h"

namespace nfsedge {
namespace {

using std::chrono::seconds;

TEST(Lifetime, ATenthOfTheAgeClampedToMinAndMax) {
  const WallTime now = WallTime(seconds(1'000'000));
  const Lifetime l{seconds(3), seconds(60)};
  EXPECT_EQ(ComputeLifetime(l, now, now - seconds(100)), seconds(10));
  EXPECT_EQ(ComputeLifetime(l, now, now - seconds(450)), seconds(45));
  EXPECT_EQ(ComputeLifetime(l, now, now - seconds(10)), seconds(3));     // min
  EXPECT_EQ(ComputeLifetime(l, now, now), seconds(3));                   // min
  EXPECT_EQ(ComputeLifetime(l, now, now - seconds(3600)), seconds(60));  // max
}

TEST(Lifetime, ChangeInTheFutureCountsAsJustNow) {
  const WallTime now = WallTime(seconds(1'000'000));
  EXPECT_EQ(ComputeLifetime({seconds(3), seconds(60)}, now, now + seconds(500)), seconds(3));
}

TEST(Lifetime, ZeroMeansZero) {
  const WallTime now = WallTime(seconds(1'000'000));
  EXPECT_EQ(ComputeLifetime({}, now, now - seconds(100000)), Duration(0));
}

TEST(Lifetime, MaxWinsOverAMisconfiguredMin) {
  const WallTime now = WallTime(seconds(1'000'000));
  EXPECT_EQ(ComputeLifetime({seconds(30), seconds(5)}, now, now), seconds(5));
}

TEST(Lifetime, ExportLifetimesPickByType) {
  ExportLifetimes e{{seconds(3), seconds(60)}, {seconds(30), seconds(60)}};
  EXPECT_EQ(e.For(NF3DIR).min, seconds(30));
  EXPECT_EQ(e.For(NF3REG).min, seconds(3));
  EXPECT_EQ(e.For(NF3LNK).min, seconds(3));
}

TEST(ChangeId, FromFattrAndWccAgreeAndCompareAllThreeFields) {
  const WallTime t = WallTime(seconds(1'700'000'000));
  fattr3 a = MakeAttr(NF3REG, 10, t);
  wcc_data w = MakeWcc(&a, &a);
  EXPECT_EQ(ChangeId::FromFattr(a), ChangeId::FromWcc(w.before.pre_op_attr_u.attributes));
  fattr3 b = a;
  b.size = 11;
  EXPECT_NE(ChangeId::FromFattr(a), ChangeId::FromFattr(b));
  b = a;
  b.mtime.nseconds++;
  EXPECT_NE(ChangeId::FromFattr(a), ChangeId::FromFattr(b));
  b = a;
  b.ctime.seconds++;
  EXPECT_NE(ChangeId::FromFattr(a), ChangeId::FromFattr(b));
  EXPECT_TRUE(ChangeId::FromFattr(a).OlderThan(ChangeId::FromFattr(b)));
  EXPECT_FALSE(ChangeId::FromFattr(b).OlderThan(ChangeId::FromFattr(a)));
  b = a;
  b.atime.seconds += 100;  // reading a file is not a change
  EXPECT_EQ(ChangeId::FromFattr(a), ChangeId::FromFattr(b));
}

TEST(ChangeId, LastChangeIsTheLaterOfMtimeAndCtime) {
  fattr3 a = MakeAttr(NF3REG, 1, WallTime(seconds(100)));
  a.ctime.seconds = 200;
  EXPECT_EQ(ChangeId::FromFattr(a).LastChange(), WallTime(seconds(200)));
  a.mtime.seconds = 300;
  EXPECT_EQ(ChangeId::FromFattr(a).LastChange(), WallTime(seconds(300)));
}

}  // namespace
}  // namespace nfsedge
