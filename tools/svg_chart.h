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

// Round tick values (steps of 1, 2 or 5 times a power of ten) inside [lo, hi], about
// `target` of them: 0..0.93 gives 0, 0.2, 0.4, 0.6, 0.8.
std::vector<double> linear_ticks(double lo, double hi, int target = 5);

// Powers of ten inside [lo, hi] (lo > 0); every k-th decade when there are more than 8.
std::vector<double> log_ticks(double lo, double hi);

// Indices of the points kept when thinning n points to at most max_points: per bucket the
// lowest and highest value in their original order, so spikes survive; first and last kept.
std::vector<size_t> downsample_indices(const std::vector<double>& y, size_t max_points);

// A categorical colour, distinct for the first 10 indices.
std::string palette_colour(size_t index);

// A sequential colour at t in [0, 1] from light (shallow) to dark (deep). `hue` 0 is a
// viridis-like ramp; hue 1, 2, ... are single-hue ramps (blues, oranges, greens, ...) used to
// tell several runs apart.
std::string ramp_colour(double t, size_t hue = 0);

}  // namespace vg::tools
