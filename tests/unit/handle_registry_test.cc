#include "cache/handle_registry.h"

#include <gtest/gtest.h>

namespace nfsedge {
namespace {

TEST(HandleRegistry, FindsWhatWasAdded) {
  HandleRegistry r(10);
  r.Add("fh-a", 1);
  r.Add(std::string("\0\1\2", 3), 2);
  EXPECT_EQ(r.Find("fh-a"), 1u);
  EXPECT_EQ(r.Find(std::string("\0\1\2", 3)), 2u);
  EXPECT_FALSE(r.Find("fh-b"));
  EXPECT_FALSE(r.Find(std::string("\0\1", 2)));
}

TEST(HandleRegistry, AHandleKeepsItsFirstExport) {
  HandleRegistry r(10);
  r.Add("fh", 1);
  r.Add("fh", 2);
  EXPECT_EQ(r.Find("fh"), 1u);
  EXPECT_EQ(r.size(), 1u);
}

TEST(HandleRegistry, BoundedWithLeastRecentlyUsedEviction) {
  HandleRegistry r(3);
  r.Add("a", 0);
  r.Add("b", 0);
  r.Add("c", 0);
  EXPECT_TRUE(r.Find("a"));  // a is now most recently used
  r.Add("d", 0);             // evicts b
  EXPECT_EQ(r.size(), 3u);
  EXPECT_FALSE(r.Find("b"));
  EXPECT_TRUE(r.Find("a"));
  EXPECT_TRUE(r.Find("c"));
  EXPECT_TRUE(r.Find("d"));
  EXPECT_EQ(r.evictions(), 1u);
}

}  // namespace
}  // namespace nfsedge
