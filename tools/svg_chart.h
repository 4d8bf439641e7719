// Line charts as self-contained SVG text: axes with round ticks, grid, legend, colour bars.
// No dependency; the output opens in any browser and embeds in HTML or Markdown reports.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vg::tools {

// One line of a chart. Points whose x or y is NaN/Inf (or y <= 0 on a log axis) are skipped;
// the line joins its neighbours. An empty label keeps the series out of the legend.
struct Series {
  std::string label;
  std::vector<double> x, y;
  std::string colour = "#1f77b4";  // any SVG colour
  bool dashed = false;
  bool markers = false;  // a dot on every point, drawn above the other lines: for sparse
                         // series such as one value per epoch
  double opacity = 1.0;  // below 1 lets dense, noisy lines recede behind the others
};

// A legend entry that stands for a style rather than one series ("ls2 (MLP)", dashed).
struct LegendKey {
  std::string label;
  std::string colour;
  bool dashed = false;
};

// A colour ramp in the legend: `colours` from `low_label` (left) to `high_label` (right).
struct ColourBar {
  std::string label;  // e.g. "depth" or a run's name
  std::vector<std::string> colours;
  std::string low_label, high_label;  // e.g. "block 0", "block 11"
};

struct ChartSpec {
  std::string title, x_label, y_label;
  bool log_y = false;
  int width = 800, height = 500;
  std::vector<LegendKey> legend_keys;  // shown after the labelled series
  std::vector<ColourBar> colour_bars;  // shown after the keys
};

// The chart as SVG text (starts with "<svg", ends with "</svg>\n"); one <polyline> per series
// that has at least one plottable point. Series longer than kMaxPointsPerSeries are thinned,
// and points that would move the drawn line by less than a quarter pixel are left out.
std::string render_svg(const ChartSpec& spec, const std::vector<Series>& series);

constexpr size_t kMaxPointsPerSeries = 2000;

}  // namespace vg::tools
