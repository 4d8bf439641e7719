// `vitgrad plot`: training curves from one or more metrics.jsonl files, as one SVG chart.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/core/error.h"
#include "engine/io/checkpoint.h"
#include "engine/io/json_tensor.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/chart_scales.h"
#include "tools/svg_chart.h"

namespace vg::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One quantity over steps. A resumed run repeats steps it had already logged; the later
// records replace the earlier ones from that step on, so the line never runs backwards.
struct Curve {
  std::vector<double> x, y;
  void add(double step, double value) {
    while (!x.empty() && x.back() >= step) x.pop_back(), y.pop_back();
    x.push_back(step);
    y.push_back(value);
  }
  bool has_values(bool positive_only) const {
    return std::any_of(y.begin(), y.end(),
                       [&](double v) { return std::isfinite(v) && (!positive_only || v > 0); });
  }
};

struct RunMetrics {
  std::string path, label;
  Curve train_loss, test_loss, train_accuracy, test_accuracy, lr;
  Curve ema_test_accuracy;  // runs with --ema: the averaged weights' test accuracy
  std::map<std::string, Curve> layerscale, grn;  // by parameter path, e.g. blocks.0.ls1
};

struct LineError {
  std::string what;
};

// A number, or NaN when absent or null (nlohmann writes a NaN loss as null).
double number_or_nan(const json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || it->is_null()) return NAN;
  if (!it->is_number())
    throw LineError{cat_str("\"", key, "\" is ", it->type_name(), ", expected a number")};
  return it->get<double>();
}

double required_step(const json& record, const std::string& kind) {
  const double step = number_or_nan(record, "step");
  if (!std::isfinite(step)) throw LineError{kind + " record has no numeric \"step\""};
  return step;
}

void add_gammas(const json& record, const char* key, double step,
                std::map<std::string, Curve>& curves) {
  auto it = record.find(key);
  if (it == record.end() || it->is_null()) return;
  if (!it->is_object())
    throw LineError{cat_str("\"", key, "\" is ", it->type_name(), ", expected an object")};
  for (const auto& [path, value] : it->items()) {
    if (!value.is_null() && !value.is_number())
      throw LineError{
          cat_str("\"", key, "\".\"", path, "\" is ", value.type_name(), ", expected a number")};
    curves[path].add(step, value.is_null() ? NAN : value.get<double>());
  }
}

void add_record(const json& record, RunMetrics& run) {
  if (!record.is_object())
    throw LineError{cat_str("a ", record.type_name(), ", expected an object")};
  auto kind_it = record.find("kind");
  if (kind_it == record.end() || !kind_it->is_string())
    throw LineError{"record has no \"kind\" (expected \"step\" or \"epoch\")"};
  const std::string kind = kind_it->get<std::string>();
  if (kind == "step") {
    const double step = required_step(record, kind);
    run.train_loss.add(step, number_or_nan(record, "loss"));
    run.train_accuracy.add(step, number_or_nan(record, "accuracy"));
    run.lr.add(step, number_or_nan(record, "lr"));
    add_gammas(record, "layerscale", step, run.layerscale);
    add_gammas(record, "grn", step, run.grn);
  } else if (kind == "epoch") {
    const double step = required_step(record, kind);
    run.test_loss.add(step, number_or_nan(record, "test_loss"));
    run.test_accuracy.add(step, number_or_nan(record, "test_accuracy"));
    if (record.contains("ema_test_accuracy"))
      run.ema_test_accuracy.add(step, number_or_nan(record, "ema_test_accuracy"));
  }
  // Other kinds are records of later versions: ignored, as unknown keys are.
}

// Reads every record. A last line without its newline that does not parse is a record still
// being written by a running training, and is left out.
RunMetrics read_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat_str(path, ": cannot read (", std::strerror(errno), ")"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  RunMetrics run;
  run.path = path;
  size_t begin = 0, line_no = 0;
  while (begin < text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const bool complete = end < text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json record;
    try {
      record = json::parse(line);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
      if (!complete) break;
      throw Error(cat_str(path, ":", line_no, ": not valid JSON: ", json_reason(e)));
    }
    try {
      add_record(record, run);
    } catch (const LineError& e) {
      throw Error(cat_str(path, ":", line_no, ": ", e.what));
    }
  }
  return run;
}

// "blocks.11.ls2" -> 11; -1 for a path outside the blocks.
int block_index(const std::string& path) {
  const size_t at = path.find("blocks.");
  if (at == std::string::npos) return -1;
  size_t i = at + 7, n = 0;
  int value = 0;
  while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i])) && n < 6)
    value = value * 10 + (path[i++] - '0'), ++n;
  return n ? value : -1;
}

std::string run_label(const fs::path& metrics) {
  const fs::path folder = fs::absolute(metrics).lexically_normal().parent_path();
  const std::string name = folder.filename().string();
  return name.empty() ? metrics.stem().string() : name;
}

std::vector<std::string> split_labels(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  if (!list.empty() && list.back() == ',') out.push_back("");
  return out;
}

void add_curve(std::vector<Series>& out, const Curve& c, std::string label, std::string colour,
               bool dashed, bool markers, double opacity = 1.0) {
  if (!c.has_values(false)) return;
  out.push_back({std::move(label), c.x, c.y, std::move(colour), dashed, markers, opacity});
}

// One line per LayerScale or GRN gamma, coloured by depth; one hue per run when several.
void add_gamma_series(const std::vector<RunMetrics>& runs, bool layerscale, ChartSpec& spec,
                      std::vector<Series>& out) {
  bool dashed_any = false, solid_any = false;
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto& curves = layerscale ? runs[r].layerscale : runs[r].grn;
    std::vector<std::pair<int, std::string>> paths;  // blocks in numeric, not text, order
    for (const auto& [path, curve] : curves)
      if (curve.has_values(true)) paths.push_back({block_index(path), path});
    std::sort(paths.begin(), paths.end());
    const int deepest = std::max(0, paths.empty() ? 0 : paths.back().first);
    const size_t hue = runs.size() == 1 ? 0 : r + 1;
    for (const auto& [block, path] : paths) {
      const bool dashed = layerscale && path.find("ls2") != std::string::npos;
      (dashed ? dashed_any : solid_any) = true;
      const double t = deepest > 0 ? std::max(0, block) / double(deepest) : 0.0;
      const Curve& c = curves.at(path);
      out.push_back({"", c.x, c.y, ramp_colour(t, hue), dashed, false});
    }
    ColourBar bar{runs.size() == 1 ? "depth" : runs[r].label,
                  {},
                  "block 0",
                  "block " + std::to_string(deepest)};
    for (int i = 0; i <= 4; ++i) bar.colours.push_back(ramp_colour(i / 4.0, hue));
    spec.colour_bars.push_back(bar);
  }
  if (dashed_any && solid_any) {
    spec.legend_keys.push_back({"ls1 (attention)", "#555555", false});
    spec.legend_keys.push_back({"ls2 (MLP)", "#555555", true});
  }
}

// Each argument is a metrics.jsonl or a run folder holding one.
std::vector<RunMetrics> read_runs(ArgParser& parser, const std::string& out_path) {
  std::vector<RunMetrics> runs;
  for (const std::string& arg : parser.positionals()) {
    fs::path path(arg);
    std::error_code ec;
    if (fs::is_directory(path, ec)) path /= "metrics.jsonl";
    if (!fs::exists(path, ec)) parser.fail(path.string() + " does not exist");
    if (fs::exists(out_path, ec) && fs::equivalent(path, out_path, ec))
      parser.fail("-o " + out_path + " would overwrite the metrics it plots");
    runs.push_back(read_metrics(path.string()));
    runs.back().label = run_label(path);
  }
  return runs;
}

// The --label names, or the folders' names; folders of the same name (runs/a/seed1,
// runs/b/seed1) are named by the path given.
void label_runs(ArgParser& parser, std::vector<RunMetrics>& runs) {
  if (parser.has("--label")) {
    const std::vector<std::string> labels = split_labels(parser.text("--label"));
    if (labels.size() != runs.size())
      parser.fail(
          cat_str("--label gives ", labels.size(), " name(s) for ", runs.size(), " file(s)"));
    for (size_t i = 0; i < runs.size(); ++i) runs[i].label = labels[i];
    return;
  }
  std::set<std::string> seen;
  bool clash = false;
  for (const RunMetrics& r : runs) clash |= !seen.insert(r.label).second;
  if (clash)
    for (RunMetrics& r : runs) r.label = fs::path(r.path).parent_path().string();
}

// Every file must have something to show: a missing line in a comparison would mislead.
void require_values(ArgParser& parser, const std::vector<RunMetrics>& runs,
                    const std::string& what) {
  for (const RunMetrics& r : runs) {
    bool has = false;
    std::string hint;
    if (what == "loss") {
      has = r.train_loss.has_values(false) || r.test_loss.has_values(false);
      hint = " (no step or epoch records yet?)";
    } else if (what == "accuracy") {
      has = r.train_accuracy.has_values(false) || r.test_accuracy.has_values(false);
      hint = " (no step or epoch records yet?)";
    } else if (what == "lr") {
      has = r.lr.has_values(false);
    } else {
      const auto& curves = what == "layerscale" ? r.layerscale : r.grn;
      for (const auto& [path, c] : curves) has |= c.has_values(true);
      hint = what == "layerscale" ? " (was LayerScale on?)" : " (was GRN on?)";
    }
    if (!has) parser.fail(r.path + " has no " + what + " values" + hint);
  }
}

// Train (per step) and test (per epoch) lines of each run, and with accuracy its EMA's.
void add_loss_or_accuracy_series(const std::vector<RunMetrics>& runs, bool loss,
                                 std::vector<Series>& series) {
  const bool single = runs.size() == 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunMetrics& r = runs[i];
    const std::string prefix = single ? "" : r.label + " ";
    add_curve(series, loss ? r.train_loss : r.train_accuracy,
              prefix + (single ? "train (per step)" : "train"), palette_colour(single ? 0 : i),
              false, false, single ? 1.0 : 0.4);  // faded: per-step noise of several runs
    add_curve(series, loss ? r.test_loss : r.test_accuracy,
              prefix + (single ? "test (per epoch)" : "test"), palette_colour(single ? 1 : i),
              false, true);
    if (!loss)  // beside the raw weights' accuracy, dashed
      add_curve(series, r.ema_test_accuracy, prefix + (single ? "EMA (per epoch)" : "EMA"),
                palette_colour(single ? 2 : i), true, true);
  }
}

// The chart's lines and titles for one kind of quantity.
std::vector<Series> chart_series(const std::vector<RunMetrics>& runs, const std::string& what,
                                 ChartSpec& spec) {
  std::vector<Series> series;
  spec.x_label = "step";
  if (what == "loss" || what == "accuracy") {
    spec.title = what == "loss" ? "Loss" : "Accuracy";
    spec.y_label = what;
    add_loss_or_accuracy_series(runs, what == "loss", series);
  } else if (what == "lr") {
    spec.title = "Learning rate";
    spec.y_label = "learning rate";
    for (size_t i = 0; i < runs.size(); ++i)
      add_curve(series, runs[i].lr, runs.size() == 1 ? "lr" : runs[i].label, palette_colour(i),
                false, false);
  } else {
    const bool layerscale = what == "layerscale";
    spec.title = layerscale ? "LayerScale mean |\u03b3| by depth" : "GRN mean |\u03b3| by depth";
    spec.y_label = "mean |\u03b3| (log scale)";
    spec.log_y = true;
    add_gamma_series(runs, layerscale, spec, series);
  }
  if (runs.size() == 1) spec.title += " \u2014 " + runs[0].label;
  return series;
}

}  // namespace

int run_plot(const std::vector<std::string>& args) {
  ArgParser parser(
      "plot",
      "vitgrad plot METRICS.jsonl|RUN_DIR [...] [--what loss|accuracy|lr|layerscale|grn] "
      "-o OUT.svg",
      {{"--what", "KIND", "loss (default), accuracy, lr, layerscale or grn"},
       {"--label", "NAMES", "comma-separated series names, one per file (default: folder names)"},
       {"--title", "TEXT", "chart title"},
       {"--width", "PX", "chart width (default 800)"},
       {"--height", "PX", "chart height (default 500)"},
       {"-o", "OUT.svg", "where to write the chart (required)"}},
      1, 1000);
  parser.parse(args);
  if (parser.help_requested()) {
    std::cout << parser.help();
    return 0;
  }
  const std::string what =
      parser.choice("--what", "loss", {"loss", "accuracy", "lr", "layerscale", "grn"});
  if (!parser.has("-o")) parser.fail("no output file (add -o OUT.svg)");
  const std::string out_path = parser.text("-o");
  if (out_path.empty()) parser.fail("-o needs a file name");
  ChartSpec spec;
  spec.width = static_cast<int>(parser.integer("--width", 800, 200, 20000));
  spec.height = static_cast<int>(parser.integer("--height", 500, 150, 20000));
  std::vector<RunMetrics> runs = read_runs(parser, out_path);
  label_runs(parser, runs);
  require_values(parser, runs, what);
  const std::vector<Series> series = chart_series(runs, what, spec);
  spec.title = parser.text("--title", spec.title);
  write_file_atomically(out_path, render_svg(spec, series));
  return 0;
}

}  // namespace vg::tools
