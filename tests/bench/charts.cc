#include "charts.h"

#include <unistd.h>

#include <cstdio>

#include "harness/files.h"
#include "harness/subprocess.h"

namespace nfsedge::bench {
namespace {

const RunResult* Find(const BenchRecord& r, const std::string& w, Mode mode) {
  for (const RunResult& run : r.runs) {
    if (run.workload == w && run.mode == mode && run.ok) return &run;
  }
  return nullptr;
}

double ValueOf(const RunResult* run, const std::string& phase, const std::string& metric) {
  if (run == nullptr) return 0;
  for (const PhaseResult& p : run->report.phases) {
    if (p.name != phase) continue;
    for (const Metric& m : p.metrics) {
      if (m.name == metric) return m.value;
    }
  }
  return 0;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? '\'' : c;
  return out + "\"";
}

// Writes the data and script of one chart; returns the script's path, or ""
// if the workload has nothing to chart.
std::string WriteChartFiles(const BenchRecord& record, const std::string& w,
                            const std::string& dir) {
  const RunResult* direct = Find(record, w, Mode::kDirect);
  const RunResult* proxied = Find(record, w, Mode::kProxied);
  const RunResult* any = direct ? direct : proxied;
  if (any == nullptr) return "";
  std::string unit, title_metric, data;
  bool higher = false, several = false;
  int rows = 0;
  for (const PhaseResult& p : any->report.phases) {
    if (!p.shown || p.metrics.empty()) continue;
    if (unit.empty()) {
      unit = p.metrics[0].unit;
      title_metric = p.metrics[0].name;
      higher = p.metrics[0].higher_is_better;
    }
    int same_unit = 0;
    for (const Metric& m : p.metrics) same_unit += m.unit == unit;
    several |= same_unit > 1;
    for (const Metric& m : p.metrics) {
      if (m.unit != unit) continue;
      std::string label = same_unit > 1 ? p.name + ": " + m.name : p.name;
      char line[256];
      std::snprintf(line, sizeof(line), "%s %.6g %.6g\n", Quoted(label).c_str(),
                    ValueOf(direct, p.name, m.name), ValueOf(proxied, p.name, m.name));
      data += line;
      ++rows;
    }
  }
  if (rows == 0) return "";
  const std::string base = dir + "/" + w;
  if (!harness::WriteFile(base + ".dat", data).ok()) return "";
  const LinkShape& l = any->link;
  char title[256];
  std::snprintf(title, sizeof(title), "%s: %s (%s is better); RTT %g ms%s", w.c_str(),
                several ? unit.c_str() : title_metric.c_str(), higher ? "higher" : "lower",
                l.rtt_ms,
                l.rate_bps ? (", " + std::to_string(l.rate_bps / 1000) + " kbit/s").c_str() : "");
  std::string script =
      "set terminal pngcairo size 900,480 font 'sans,10'\n"
      "set output " +
      Quoted(base + ".png") +
      "\n"
      "set title " +
      Quoted(title) +
      "\n"
      "set style data histograms\n"
      "set style histogram clustered gap 1\n"
      "set style fill solid 0.85 border -1\n"
      "set boxwidth 0.9\n"
      "set ylabel " +
      Quoted(unit) +
      "\n"
      "set yrange [0:*]\n"
      "set grid ytics\n"
      "set key top right\n"
      "set xtics noenhanced\n"
      "set title noenhanced\n" +
      (rows > 6 ? "set xtics rotate by -30\n" : "") + "plot " + Quoted(base + ".dat") +
      " using 2:xtic(1) title 'direct' lc rgb '#4e79a7', "
      "'' using 3 title 'via nfsedge' lc rgb '#f28e2b'\n";
  if (!harness::WriteFile(base + ".gp", script).ok()) return "";
  return base + ".gp";
}

}  // namespace

Status WriteCharts(const BenchRecord& record, const std::string& dir,
                   std::vector<std::string>* written, std::string* note) {
  if (access(kGnuplot, X_OK) != 0) {
    *note = "no charts: gnuplot is not installed (apt-get install gnuplot-nox)";
    return Status::OK();
  }
  Status s = harness::MakeDirs(dir);
  if (!s.ok()) return s;
  for (const std::string& w : record.options.workloads) {
    std::string script = WriteChartFiles(record, w, dir);
    if (script.empty()) continue;
    auto p = harness::Subprocess::Start({kGnuplot, script}, dir + "/gnuplot.log");
    if (!p.ok()) return p.status();
    auto exit = (*p)->WaitForExit(harness::Millis(60000));
    if (!exit || !exit->success()) {
      return Status::Error("gnuplot " + script + " failed:\n" + (*p)->LogTail(10));
    }
    unlink(script.c_str());
    unlink((dir + "/" + w + ".dat").c_str());
    written->push_back(w + ".png");
  }
  unlink((dir + "/gnuplot.log").c_str());
  return Status::OK();
}

}  // namespace nfsedge::bench
