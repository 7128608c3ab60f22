// ProxyProcess's config text: tables appended by a caller fold into the
// ones the harness writes.
#include "harness/proxy_process.h"

#include <gtest/gtest.h>

namespace nfsedge::harness {
namespace {

TEST(FoldTables, ARepeatedTableJoinsTheFirstOne) {
  EXPECT_EQ(ProxyProcess::FoldTables("top = 1\n[log]\nlevel = \"info\"\n\n[cache]\nx = 1\n"
                                     "[log] # more\nrepeat_burst = 0\n"),
            "top = 1\n[log]\nlevel = \"info\"\n\nrepeat_burst = 0\n[cache]\nx = 1\n");
}

TEST(FoldTables, ArraysOfTablesAndDistinctTablesStayApart) {
  const std::string text =
      "[[export]]\npath = \"/a\"\n[[export]]\npath = \"/b\"\n[write]\nwindow = 1\n"
      "[write.more]\ny = 2\n";
  EXPECT_EQ(ProxyProcess::FoldTables(text), text);
}

TEST(FoldTables, TheRenderedConfigTakesAnExtraLogTable) {
  ProxyProcess::Options o;
  o.work_dir = "/tmp/w";
  o.extra_toml = "[cache]\ndisk_dir = \"/tmp/w/cache\"\n[log]\nrepeat_burst = 0\n[cache]\nblock = 1\n";
  const std::string text = ProxyProcess::RenderConfig(o);
  EXPECT_EQ(text.find("[log]"), text.rfind("[log]")) << text;
  EXPECT_EQ(text.find("[cache]"), text.rfind("[cache]")) << text;
  const size_t log = text.find("[log]");
  EXPECT_LT(log, text.find("level = \"debug\"")) << text;
  EXPECT_LT(text.find("level = \"debug\""), text.find("repeat_burst = 0")) << text;
  EXPECT_LT(text.find("repeat_burst = 0"), text.find("[control]")) << text;
  EXPECT_LT(text.find("disk_dir"), text.find("block = 1")) << text;
}

}  // namespace
}  // namespace nfsedge::harness
