// The scales of a chart: round ticks on linear and log axes, thinning a long series so its
// spikes survive, and the colours of series (categorical) and of depths (sequential ramps).
// Used by svg_chart.cpp and plot.cpp; plain functions, so tests check them without drawing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vg::tools {

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
