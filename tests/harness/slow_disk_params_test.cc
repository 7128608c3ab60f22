// The emulated disk's parameters: what the preloaded library reads from
// NFSEDGE_DISK_SYNC_US / NFSEDGE_DISK_MBPS, what it says about bad values,
// and what a flush costs.

#include "harness/slow_disk_params.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Parses the two values; returns the config and what was written to stderr.
struct Parsed {
  nfsedge_disk_config config;
  std::string err;
};

Parsed Parse(const char* sync_us, const char* mbps) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* err = open_memstream(&buf, &size);
  Parsed p{nfsedge_disk_parse_config(sync_us, mbps, err), ""};
  std::fclose(err);
  p.err.assign(buf, size);
  std::free(buf);
  return p;
}

TEST(SlowDiskParams, UnsetOrZeroIsOffAndSilent) {
  for (const char* v : {static_cast<const char*>(nullptr), "0", "000"}) {
    Parsed p = Parse(v, "abc");  // The rate is not read when the disk is off.
    EXPECT_EQ(p.config.sync_us, 0u) << (v ? v : "unset");
    EXPECT_EQ(p.err, "") << (v ? v : "unset");
  }
}

TEST(SlowDiskParams, GoodValues) {
  Parsed p = Parse("20000", nullptr);
  EXPECT_EQ(p.config.sync_us, 20000u);
  EXPECT_EQ(p.config.mbps, 200u);
  EXPECT_EQ(p.err, "");
  p = Parse("5000", "50");
  EXPECT_EQ(p.config.sync_us, 5000u);
  EXPECT_EQ(p.config.mbps, 50u);
  EXPECT_EQ(p.err, "");
  p = Parse("60000000", "1000000");  // Both maxima.
  EXPECT_EQ(p.config.sync_us, 60000000u);
  EXPECT_EQ(p.config.mbps, 1000000u);
}

TEST(SlowDiskParams, BadSyncTimeIsOneLineAndOff) {
  for (const char* v :
       {"abc", "-5", "20ms", " 20", "1.5", "", "60000001", "99999999999999999999"}) {
    Parsed p = Parse(v, "100");
    EXPECT_EQ(p.config.sync_us, 0u) << v;
    EXPECT_EQ(p.err.find("nfsedge_slow_disk: ignoring NFSEDGE_DISK_SYNC_US=\"" + std::string(v)),
              0u)
        << p.err;
    EXPECT_NE(p.err.find("the disk emulation is off"), std::string::npos) << p.err;
    EXPECT_EQ(p.err.find('\n'), p.err.size() - 1) << "one line: " << p.err;
  }
}

TEST(SlowDiskParams, BadRateIsOneLineAndDefault) {
  for (const char* v : {"0", "-1", "fast", "1000001", ""}) {
    Parsed p = Parse("1000", v);
    EXPECT_EQ(p.config.sync_us, 1000u) << v;
    EXPECT_EQ(p.config.mbps, 200u) << v;
    EXPECT_EQ(p.err.find("nfsedge_slow_disk: ignoring NFSEDGE_DISK_MBPS=\"" + std::string(v)), 0u)
        << p.err;
    EXPECT_EQ(p.err.find('\n'), p.err.size() - 1) << "one line: " << p.err;
  }
}

TEST(SlowDiskParams, ParseNumberSaysWhy) {
  uint64_t out = 7;
  EXPECT_STREQ(nfsedge_disk_parse_number("12x", 0, 100, &out), "not a whole number");
  EXPECT_STREQ(nfsedge_disk_parse_number("101", 0, 100, &out), "out of range");
  EXPECT_STREQ(nfsedge_disk_parse_number("0", 1, 100, &out), "out of range");
  EXPECT_STREQ(nfsedge_disk_parse_number(nullptr, 0, 100, &out), "empty");
  EXPECT_EQ(out, 7u);  // Untouched on error.
  EXPECT_EQ(nfsedge_disk_parse_number("100", 0, 100, &out), nullptr);
  EXPECT_EQ(out, 100u);
}

TEST(SlowDiskParams, FlushCostIsSyncTimePlusBytesAtRate) {
  nfsedge_disk_config c{20000, 200};
  EXPECT_EQ(nfsedge_disk_flush_cost_us(&c, 0), 20000u);
  // 1 MB at 200 MB/s = 5 ms.
  EXPECT_EQ(nfsedge_disk_flush_cost_us(&c, 1000000), 25000u);
  c = {1000, 1};
  // 256 KiB at 1 MB/s = 262.144 ms.
  EXPECT_EQ(nfsedge_disk_flush_cost_us(&c, 262144), 1000u + 262144u);
}

}  // namespace
