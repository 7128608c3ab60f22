#include "charts.h"

#include <unistd.h>

#include <algorithm>
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

// Runs gnuplot on `script`, logging into `dir`; removes the script after.
Status RunGnuplot(const std::string& script, const std::string& dir) {
  auto p = harness::Subprocess::Start({kGnuplot, script}, dir + "/gnuplot.log");
  if (!p.ok()) return p.status();
  auto exit = (*p)->WaitForExit(harness::Millis(60000));
  if (!exit || !exit->success()) {
    return Status::Error("gnuplot " + script + " failed:\n" + (*p)->LogTail(10));
  }
  unlink(script.c_str());
  return Status::OK();
}

// Series of `unit` in the timeline data, each with its index in the .dat
// file and a title.
struct Plotted {
  int index;
  std::string title;
  Mode mode;
  bool first_of_mode;  // The first series of its mode in this unit.
};

// Writes <dir>/<w>-timeline.dat (every series of both runs, one gnuplot
// data block each) and the chart's script; returns the script's path, or ""
// if no run of `w` recorded series.
std::string WriteTimelineFiles(const BenchRecord& record, const std::string& w,
                               const std::string& dir) {
  const std::string base = dir + "/" + w + "-timeline";
  std::string data = "# " + w + ": values over time, one block per run and series (gnuplot " +
                     "'index' counts blocks from 0); column 1: seconds since the run's time " +
                     "origin, column 2: the value in the block's unit\n";
  std::vector<std::pair<std::string, std::vector<Plotted>>> panels = {{"ms", {}}, {"MiB/s", {}}};
  const LinkShape* link = nullptr;
  double t_max = 0;
  int index = 0;
  for (Mode mode : {Mode::kDirect, Mode::kProxied}) {
    const RunResult* run = Find(record, w, mode);
    if (run == nullptr) continue;
    link = &run->link;
    for (const Series& series : run->report.series) {
      if (series.points.empty()) continue;
      data += "\n\n# index " + std::to_string(index) + ": " + ModeName(mode) + ", " + series.name +
              " (" + series.unit + ")\n";
      for (const auto& [t, v] : series.points) {
        char line[64];
        std::snprintf(line, sizeof(line), "%.4f %.6g\n", t, v);
        data += line;
        t_max = std::max(t_max, t);
      }
      for (auto& [unit, plotted] : panels) {
        if (unit != series.unit) continue;
        bool first = std::none_of(plotted.begin(), plotted.end(),
                                  [&](const Plotted& p) { return p.mode == mode; });
        plotted.push_back(
            {index,
             std::string(mode == Mode::kDirect ? "direct" : "via nfsedge") + ": " + series.name,
             mode, first});
      }
      ++index;
    }
  }
  if (link == nullptr || panels[0].second.empty() || panels[1].second.empty()) return "";
  if (!harness::WriteFile(base + ".dat", data).ok()) return "";
  char title[256];
  std::snprintf(title, sizeof(title), "%s over time: RTT %g ms%s", w.c_str(), link->rtt_ms,
                link->rate_bps ? (", " + std::to_string(link->rate_bps / 1000) + " kbit/s, " +
                                  std::to_string(link->queue_bytes / kKiB) + " KiB queue")
                                     .c_str()
                               : "");
  // Direct in blues, via nfsedge in oranges; a mode's first series dark.
  auto color = [](const Plotted& p) {
    if (p.mode == Mode::kDirect) return p.first_of_mode ? "#1f4e79" : "#7fb2e5";
    return p.first_of_mode ? "#c45a00" : "#ffb266";
  };
  auto plot = [&](const std::vector<Plotted>& plotted, const std::string& style) {
    std::string cmd = "plot ";
    for (size_t i = 0; i < plotted.size(); ++i) {
      const Plotted& p = plotted[i];
      cmd += (i ? ", '' " : Quoted(base + ".dat") + " ") + "index " + std::to_string(p.index) +
             " using 1:2 with " + style + " lc rgb '" + color(p) + "'" +
             (style == "points" ? (p.first_of_mode ? " pt 7 ps 0.5" : " pt 6 ps 0.9") : " lw 2") +
             " title " + Quoted(p.title);
    }
    return cmd + "\n";
  };
  char xrange[64];
  std::snprintf(xrange, sizeof(xrange), "set xrange [0:%.1f]\n", t_max * 1.02);
  std::string script =
      "set terminal pngcairo size 1000,760 font 'sans,10'\n"
      "set output " +
      Quoted(base + ".png") + "\nset multiplot layout 2,1 title " + Quoted(title) +
      " noenhanced\n" + xrange +
      "set lmargin 10\nset rmargin 3\nset grid\nset key top left noenhanced\n"
      "set xlabel 's since the probes started'\n"
      "set ylabel 'probe latency (ms, log scale)'\nset logscale y\n" +
      plot(panels[0].second, "points") +
      "unset logscale y\nset yrange [0:*]\nset key bottom right\nset ylabel 'MiB/s'\n" +
      plot(panels[1].second, "lines") + "unset multiplot\n";
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
    s = RunGnuplot(script, dir);
    if (!s.ok()) return s;
    unlink((dir + "/" + w + ".dat").c_str());
    written->push_back(w + ".png");
    // Its data file stays beside it.
    script = WriteTimelineFiles(record, w, dir);
    if (script.empty()) continue;
    s = RunGnuplot(script, dir);
    if (!s.ok()) return s;
    written->push_back(w + "-timeline.png");
  }
  unlink((dir + "/gnuplot.log").c_str());
  return Status::OK();
}

}  // namespace nfsedge::bench
