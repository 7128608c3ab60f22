// ChangeMarks: the last change per key, bounded by a floor.
#include "cache/change_marks.h"

#include <gtest/gtest.h>

namespace nfsedge {
namespace {

TEST(ChangeMarksTest, EachKeyKeepsItsLastChangeAndTheBoundLeavesAFloor) {
  ChangeMarks marks(2);
  EXPECT_EQ(marks.Last("a").seq, 0u) << "nothing noted";
  const ChangeMarks::Mark a = marks.Note("a");
  const ChangeMarks::Mark b = marks.Note("b");
  EXPECT_EQ(marks.Last("a").seq, a.seq);
  EXPECT_EQ(marks.Last("b").seq, b.seq);
  EXPECT_EQ(marks.Last("x").seq, 0u);
  EXPECT_LE(a.at, b.at);
  EXPECT_EQ(marks.seq(), 2u);
  // A third key: the marks go, and the latest stands for every key.
  const ChangeMarks::Mark c = marks.Note("c");
  EXPECT_EQ(marks.Last("a").seq, c.seq);
  EXPECT_EQ(marks.Last("x").seq, c.seq) << "an unknown key may have changed too";
  const ChangeMarks::Mark a2 = marks.Note("a");
  EXPECT_EQ(marks.Last("a").seq, a2.seq);
  EXPECT_EQ(marks.Last("x").seq, c.seq);
}

}  // namespace
}  // namespace nfsedge
