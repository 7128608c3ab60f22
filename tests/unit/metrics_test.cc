// The Prometheus text exposition of proxy/metrics.h and the result names of
// proxy/call_meter.h.
#include "proxy/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "proxy/call_meter.h"

namespace nfsedge {
namespace {

TEST(Metrics, FamiliesHaveHelpAndTypeOnceAndSamplesBelow) {
  MetricsWriter w;
  w.Counter("nfsedge_x_total", "X things.", {{"kind", "a"}}, 3);
  w.Gauge("nfsedge_y", "Y now.", {}, 1.5);
  w.Counter("nfsedge_x_total", "X things.", {{"kind", "b"}}, 4);
  EXPECT_EQ(w.Render(),
            "# HELP nfsedge_x_total X things.\n"
            "# TYPE nfsedge_x_total counter\n"
            "nfsedge_x_total{kind=\"a\"} 3\n"
            "nfsedge_x_total{kind=\"b\"} 4\n"
            "# HELP nfsedge_y Y now.\n"
            "# TYPE nfsedge_y gauge\n"
            "nfsedge_y 1.5\n");
  EXPECT_EQ(w.errors(), 0u);
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  MetricsWriter w;
  w.Gauge("nfsedge_path", "Back\\slash and\nnewline.", {{"path", "a\"b\\c\nd"}}, 1);
  EXPECT_EQ(w.Render(),
            "# HELP nfsedge_path Back\\\\slash and\\nnewline.\n"
            "# TYPE nfsedge_path gauge\n"
            "nfsedge_path{path=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(Metrics, BadNamesAndTypeConflictsAreRefusedAndCounted) {
  MetricsWriter w;
  w.Counter("1bad", "h", {}, 1);
  w.Counter("nfsedge_ok_total", "h", {{"__reserved", "x"}}, 1);
  w.Counter("nfsedge_ok_total", "h", {{"bad-label", "x"}}, 1);
  w.Counter("nfsedge_ok_total", "h", {}, 1);
  w.Gauge("nfsedge_ok_total", "h", {}, 2);  // type conflict
  EXPECT_EQ(w.errors(), 4u);
  EXPECT_EQ(w.Render(), "# HELP nfsedge_ok_total h\n# TYPE nfsedge_ok_total counter\n"
                        "nfsedge_ok_total 1\n");
  EXPECT_TRUE(MetricsWriter::ValidMetricName("a:b_c9"));
  EXPECT_FALSE(MetricsWriter::ValidMetricName(""));
  EXPECT_FALSE(MetricsWriter::ValidLabelName("9a"));
}

TEST(Metrics, ValuesFormat) {
  EXPECT_EQ(MetricsWriter::FormatValue(0), "0");
  EXPECT_EQ(MetricsWriter::FormatValue(12345678901234), "12345678901234");
  EXPECT_EQ(MetricsWriter::FormatValue(0.25), "0.25");
  EXPECT_EQ(MetricsWriter::FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(MetricsWriter::FormatValue(-INFINITY), "-Inf");
  EXPECT_EQ(MetricsWriter::FormatValue(NAN), "NaN");
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.1);  // le is inclusive
  h.Observe(0.5);
  h.Observe(7);
  MetricsWriter w;
  w.Hist("nfsedge_lat_seconds", "Latency.", {{"proc", "READ"}}, h);
  EXPECT_EQ(w.Render(),
            "# HELP nfsedge_lat_seconds Latency.\n"
            "# TYPE nfsedge_lat_seconds histogram\n"
            "nfsedge_lat_seconds_bucket{proc=\"READ\",le=\"0.1\"} 2\n"
            "nfsedge_lat_seconds_bucket{proc=\"READ\",le=\"1\"} 3\n"
            "nfsedge_lat_seconds_bucket{proc=\"READ\",le=\"+Inf\"} 4\n"
            "nfsedge_lat_seconds_sum{proc=\"READ\"} 7.65\n"
            "nfsedge_lat_seconds_count{proc=\"READ\"} 4\n");
  MetricsWriter bad;
  bad.Hist("nfsedge_lat_seconds", "Latency.", {{"le", "x"}}, h);  // le is the bucket label
  EXPECT_EQ(bad.errors(), 1u);
}

TEST(Metrics, RegistryRunsCollectorsInOrderUntilRemoved) {
  MetricsRegistry r;
  int calls = 0;
  int a = r.Add([&](MetricsWriter& w) {
    calls++;
    w.Gauge("nfsedge_a", "A.", {}, 1);
  });
  r.Add([](MetricsWriter& w) { w.Gauge("nfsedge_b", "B.", {}, 2); });
  std::string text = r.Scrape();
  EXPECT_LT(text.find("nfsedge_a 1"), text.find("nfsedge_b 2"));
  EXPECT_NE(text.find("nfsedge_metrics_rejected_samples 0"), std::string::npos);
  r.Remove(a);
  text = r.Scrape();
  EXPECT_EQ(text.find("nfsedge_a"), std::string::npos);
  EXPECT_EQ(calls, 1);
}

std::string Reply(std::initializer_list<uint32_t> words) {
  std::string s;
  for (uint32_t w : words) {
    for (int i = 3; i >= 0; --i) s += static_cast<char>((w >> (8 * i)) & 0xff);
  }
  return s;
}

TEST(CallMeter, ResultNamesComeFromTheReply) {
  // xid, REPLY, MSG_ACCEPTED, verf AUTH_NONE len 0, accept stat, results...
  EXPECT_EQ(CallMeter::ResultOf(100003, 1, Reply({7, 1, 0, 0, 0, 0, 0})), "ok");
  EXPECT_EQ(CallMeter::ResultOf(100003, 3, Reply({7, 1, 0, 0, 0, 0, 2})), "noent");
  EXPECT_EQ(CallMeter::ResultOf(100003, 1, Reply({7, 1, 0, 0, 0, 0, 10008})), "jukebox");
  EXPECT_EQ(CallMeter::ResultOf(100003, 1, Reply({7, 1, 0, 0, 0, 4})), "garbage_args");
  EXPECT_EQ(CallMeter::ResultOf(100003, 0, Reply({7, 1, 0, 0, 0, 0})), "ok");
  EXPECT_EQ(CallMeter::ResultOf(100005, 1, Reply({7, 1, 0, 0, 0, 0, 13})), "acces");
  EXPECT_EQ(CallMeter::ResultOf(100003, 1, Reply({7, 1, 1, 1, 1})), "auth_error");
  EXPECT_EQ(CallMeter::ResultOf(100003, 1, "xx"), "malformed");
}

TEST(CallMeter, CountsCallsLatencyAndTopFiles) {
  CallMeter m(4);
  CallHeader h;
  h.prog = 100003;
  h.proc = 6;  // READ
  // READ3args: fh (len 2, padded to 4), offset (8 bytes), count.
  std::string args = Reply({2}) + std::string("ab\0\0", 4) + Reply({0, 0, 4096});
  m.ObserveClient(h, args, Reply({1, 1, 0, 0, 0, 0, 0}), std::chrono::milliseconds(3));
  m.ObserveClient(h, args, Reply({1, 1, 0, 0, 0, 0, 0}), std::chrono::milliseconds(3));
  std::vector<FileTraffic> top = m.TopFiles(10);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].fh, "ab");
  EXPECT_EQ(top[0].read_bytes, 8192u);
  m.ObserveUpstream(100003, 1, StatusOr<RpcReply>(Timeout("t")), std::chrono::seconds(1));
  EXPECT_EQ(m.UpstreamCalls("timeout"), 1u);
  MetricsWriter w;
  m.Collect(w);
  std::string text = w.Render();
  EXPECT_NE(text.find("nfsedge_client_calls_total{program=\"nfs\",proc=\"READ\",result=\"ok\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nfsedge_client_latency_seconds_bucket{program=\"nfs\",proc=\"READ\",le="
                      "\"0.005\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nfsedge_upstream_calls_total{program=\"nfs\",proc=\"GETATTR\",result="
                      "\"timeout\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nfsedge_client_bytes_total{op=\"read\"} 8192"), std::string::npos);
}

// Calls of programs and procedures the proxy does not serve (answered
// PROG_UNAVAIL or PROC_UNAVAIL) count under "other": a client sending made-up
// numbers cannot grow the meter and the metrics' series without bound.
TEST(CallMeter, UnservedProgramsAndProceduresCountAsOther) {
  CallMeter m;
  CallHeader h;
  for (uint32_t i = 0; i < 1000; ++i) {
    h.prog = 200000 + i;
    h.proc = i;
    m.ObserveClient(h, "", Reply({1, 1, 0, 0, 0, 1}), std::chrono::milliseconds(1));
    h.prog = 100003;
    h.proc = 22 + i;
    m.ObserveClient(h, "", Reply({1, 1, 0, 0, 0, 3}), std::chrono::milliseconds(1));
  }
  MetricsWriter w;
  m.Collect(w);
  const std::string text = w.Render();
  EXPECT_NE(text.find("nfsedge_client_calls_total{program=\"other\",proc=\"other\",result="
                      "\"prog_unavail\"} 1000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nfsedge_client_calls_total{program=\"nfs\",proc=\"other\",result="
                      "\"proc_unavail\"} 1000"),
            std::string::npos)
      << text;
  EXPECT_LT(text.size(), 20000u) << "one series per made-up number";
}

}  // namespace
}  // namespace nfsedge
