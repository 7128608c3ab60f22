// The benchmark's time series: built from timestamped samples, carried into
// results.json, drawn as <workload>-timeline.png with its numbers beside it,
// and embedded in the docs page.

#include "series.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "charts.h"
#include "harness/files.h"
#include "report.h"

namespace nfsedge::bench {
namespace {

using std::chrono::milliseconds;

// Expects `s` to hold exactly `want` (time to the ns, values to 1e-9).
void ExpectPoints(const Series& s, const std::vector<std::pair<double, double>>& want) {
  ASSERT_EQ(s.points.size(), want.size()) << s.name;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(s.points[i].first, want[i].first, 1e-9) << s.name << " point " << i;
    EXPECT_NEAR(s.points[i].second, want[i].second, 1e-9) << s.name << " point " << i;
  }
}

TEST(SeriesTest, LatencySeriesIsSortedBySendTimeFromTheOrigin) {
  const SteadyClock::time_point t0 = SteadyClock::now();
  Series s = LatencySeries("GETATTR latency",
                           {{t0 + milliseconds(300), 1000.0}, {t0 + milliseconds(100), 41.5}}, t0);
  EXPECT_EQ(s.name, "GETATTR latency");
  EXPECT_EQ(s.unit, "ms");
  ExpectPoints(s, {{0.1, 41.5}, {0.3, 1000.0}});
}

TEST(SeriesTest, AckedSeriesAccumulatesInReplyOrder) {
  const SteadyClock::time_point t0 = SteadyClock::now();
  Series s =
      AckedSeries("bulk acknowledged",
                  {{t0 + milliseconds(2000), 1 << 20}, {t0 + milliseconds(1000), 1 << 19}}, t0);
  EXPECT_EQ(s.unit, "MiB");
  ExpectPoints(s, {{1.0, 0.5}, {2.0, 1.5}});
}

TEST(SeriesTest, ThroughputIsMeasuredFromReplyToReplyOverTheWindow) {
  const SteadyClock::time_point t0 = SteadyClock::now();
  const SteadyClock::time_point from = t0 + milliseconds(1000), to = from + milliseconds(4500);
  // 1 MiB acknowledged at 0.2 s, 0.9 s and 1.6 s after `from`, then nothing.
  std::vector<AckSample> acks = {{from + milliseconds(200), 1 << 20},
                                 {from + milliseconds(900), 1 << 20},
                                 {from + milliseconds(1600), 1 << 20}};
  Series s = ThroughputSeries("bulk throughput", acks, t0, from, to, std::chrono::seconds(1),
                              std::chrono::seconds(2));
  EXPECT_EQ(s.unit, "MiB/s");
  // A point every second after `from` and one at `to`. At 1 s: 2 MiB from
  // `from` to the reply at 0.9 s; at 2 s: 3 MiB from `from` to 1.6 s; at
  // 3 s: 1 MiB from the reply at 0.9 s (the last one 2 s ago or more) to
  // 1.6 s; from 4 s on, no reply in the last 2 s.
  ExpectPoints(s, {{2.0, 2 / 0.9}, {3.0, 3 / 1.6}, {4.0, 1 / 0.7}, {5.0, 0}, {5.5, 0}});
  EXPECT_TRUE(
      ThroughputSeries("x", acks, t0, to, from, std::chrono::seconds(1), std::chrono::seconds(2))
          .points.empty());
}

TEST(SeriesTest, ThroughputOfEvenlySpacedLargeRepliesIsTheirRate) {
  const SteadyClock::time_point t0 = SteadyClock::now();
  // 256 KiB every 1.05 s (a gathered WRITE on a 2 Mbit/s link): every point
  // once the first reply is 2 s old is 0.25 MiB / 1.05 s, whatever the
  // number of replies in the window.
  std::vector<AckSample> acks;
  for (int i = 1; i <= 20; ++i) acks.emplace_back(t0 + milliseconds(1050 * i), 256 * 1024);
  Series s = ThroughputSeries("bulk throughput", acks, t0, t0, t0 + milliseconds(21000),
                              std::chrono::milliseconds(500), std::chrono::seconds(2));
  ASSERT_EQ(s.points.size(), 42u);
  for (const auto& [t, v] : s.points) {
    if (t >= 3.2) {
      EXPECT_NEAR(v, 0.25 / 1.05, 1e-9) << "at " << t;
    }
  }
}

// A congestion run in `mode` whose probes took `probe_ms` and whose bulk
// write went at 0.25 MiB/s.
RunResult CongestionRun(Mode mode, double probe_ms) {
  RunResult r;
  r.workload = "congestion";
  r.mode = mode;
  r.link = {40, 2'000'000, 256 * kKiB};
  r.ok = true;
  r.report.verified = true;
  PhaseResult bulk;
  bulk.name = "bulk";
  bulk.metrics.push_back({"GETATTR p99", probe_ms, "ms", false});
  r.report.phases.push_back(bulk);
  Series getattr{"GETATTR latency", "ms", {}}, echo{"echo latency", "ms", {}};
  Series rate{"bulk throughput", "MiB/s", {}}, acked{"bulk acknowledged", "MiB", {}};
  for (int i = 0; i < 40; ++i) {
    getattr.points.emplace_back(0.1 * i, probe_ms + i);
    echo.points.emplace_back(0.1 * i + 0.01, probe_ms + i + 0.5);
  }
  for (int i = 1; i <= 6; ++i) {
    rate.points.emplace_back(1 + 0.5 * i, 0.25);
    acked.points.emplace_back(1 + 0.5 * i, 0.125 * i);
  }
  r.report.series = {getattr, echo, rate, acked};
  return r;
}

BenchRecord CongestionRecord() {
  BenchRecord record;
  record.options.workloads = {"congestion"};
  record.runs = {CongestionRun(Mode::kDirect, 1000), CongestionRun(Mode::kProxied, 60)};
  return record;
}

TEST(SeriesTest, ResultsJsonCarriesEverySeriesOfEachRun) {
  Json j = ResultsJson(CongestionRecord());
  const Json* runs = j.Find("runs");
  ASSERT_NE(runs, nullptr);
  ASSERT_EQ(runs->items().size(), 2u);
  const Json* series = runs->items()[1].Find("series");
  ASSERT_NE(series, nullptr);
  ASSERT_EQ(series->items().size(), 4u);
  const Json& getattr = series->items()[0];
  EXPECT_EQ(getattr.Find("name")->str(), "GETATTR latency");
  EXPECT_EQ(getattr.Find("unit")->str(), "ms");
  const Json* points = getattr.Find("points");
  ASSERT_EQ(points->items().size(), 40u);
  EXPECT_DOUBLE_EQ(points->items()[3].items()[0].number(), 0.3);
  EXPECT_DOUBLE_EQ(points->items()[3].items()[1].number(), 63);
  // Pretty-printed, a point stays on one line.
  EXPECT_NE(j.Dump(2).find("[0.3,63]"), std::string::npos);
  auto parsed = Json::Parse(j.Dump(2));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->Find("runs")->items()[0].Find("series")->items().size(), 4u);
}

bool HaveGnuplot() { return access(kGnuplot, X_OK) == 0; }

TEST(SeriesTest, TimelineChartAndItsNumbersAreWritten) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  harness::TempDir dir("series-test");
  ASSERT_TRUE(dir.ok());
  std::vector<std::string> written;
  std::string note;
  Status s = WriteCharts(CongestionRecord(), dir.path(), &written, &note);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(written, (std::vector<std::string>{"congestion.png", "congestion-timeline.png"}));
  EXPECT_GT(harness::ReadFile(dir.Sub("congestion-timeline.png")).size(), 1000u);
  EXPECT_EQ(access(dir.Sub("congestion-timeline.gp").c_str(), F_OK), -1);
  const std::string dat = harness::ReadFile(dir.Sub("congestion-timeline.dat"));
  // Eight blocks (four series, two runs), in run order, each with its values.
  EXPECT_NE(dat.find("# index 0: direct, GETATTR latency (ms)\n0.0000 1000\n"), std::string::npos)
      << dat.substr(0, 400);
  EXPECT_NE(dat.find("# index 4: proxied, GETATTR latency (ms)\n0.0000 60\n"), std::string::npos);
  EXPECT_NE(dat.find("# index 6: proxied, bulk throughput (MiB/s)\n1.5000 0.25\n"),
            std::string::npos);
  EXPECT_NE(dat.find("# index 7: proxied, bulk acknowledged (MiB)\n"), std::string::npos);
  EXPECT_EQ(dat.find("# index 8"), std::string::npos);
}

TEST(SeriesTest, NoTimelineForRunsWithoutSeries) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  harness::TempDir dir("series-test");
  ASSERT_TRUE(dir.ok());
  BenchRecord record = CongestionRecord();
  for (RunResult& r : record.runs) r.report.series.clear();
  std::vector<std::string> written;
  std::string note;
  ASSERT_TRUE(WriteCharts(record, dir.path(), &written, &note).ok());
  EXPECT_EQ(written, std::vector<std::string>{"congestion.png"});
  EXPECT_EQ(access(dir.Sub("congestion-timeline.dat").c_str(), F_OK), -1);
}

TEST(SeriesTest, DocsPageEmbedsTheTimelineAndLinksItsNumbers) {
  if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  harness::TempDir dir("series-test");
  ASSERT_TRUE(dir.ok());
  Status s = WriteDocs(CongestionRecord(), dir.path());
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string md = harness::ReadFile(dir.Sub("benchmarks.md"));
  const size_t charts = md.find("## Charts");
  ASSERT_NE(charts, std::string::npos);
  EXPECT_NE(md.find("![congestion-timeline.png](bench/congestion-timeline.png)", charts),
            std::string::npos);
  EXPECT_NE(md.find("[congestion-timeline.dat](bench/congestion-timeline.dat)", charts),
            std::string::npos);
  EXPECT_FALSE(harness::ReadFile(dir.Sub("bench/congestion-timeline.png")).empty());
  EXPECT_FALSE(harness::ReadFile(dir.Sub("bench/congestion-timeline.dat")).empty());
}

}  // namespace
}  // namespace nfsedge::bench
