#include "cache/lru_map.h"

#include <gtest/gtest.h>

#include <string>

namespace nfsedge {
namespace {

TEST(LruMap, PutFindEraseAndCharge) {
  LruMap<int> m;
  m.Put("a", 1, 10);
  m.Put(std::string("\0b", 2), 2, 5);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.charge(), 15u);
  ASSERT_NE(m.Find("a"), nullptr);
  EXPECT_EQ(*m.Find("a"), 1);
  EXPECT_EQ(m.Find("b"), nullptr);
  EXPECT_EQ(*m.Peek(std::string("\0b", 2)), 2);
  m.Put("a", 3, 1);  // replace: charge follows
  EXPECT_EQ(m.charge(), 6u);
  EXPECT_EQ(*m.Find("a"), 3);
  EXPECT_TRUE(m.Erase("a"));
  EXPECT_FALSE(m.Erase("a"));
  EXPECT_EQ(m.charge(), 5u);
  EXPECT_EQ(m.size(), 1u);
}

TEST(LruMap, OldestFollowsUseNotPeek) {
  LruMap<int> m;
  m.Put("a", 1);
  m.Put("b", 2);
  m.Put("c", 3);
  EXPECT_EQ(m.Oldest()->key, "a");
  m.Find("a");
  EXPECT_EQ(m.Oldest()->key, "b");
  m.Peek("b");
  EXPECT_EQ(m.Oldest()->key, "b");
  m.Put("b", 4);  // a replacement is a use
  EXPECT_EQ(m.Oldest()->key, "c");
  m.Erase(m.Oldest()->key);  // erasing by the entry's own key is allowed
  EXPECT_EQ(m.Oldest()->key, "a");
  m.Erase("a");
  m.Erase("b");
  EXPECT_EQ(m.Oldest(), nullptr);
  EXPECT_TRUE(m.empty());
}

}  // namespace
}  // namespace nfsedge
