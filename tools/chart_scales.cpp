#include "tools/chart_scales.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "engine/core/error.h"

namespace vg::tools {

std::vector<double> linear_ticks(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  const double eps = step * 1e-9;
  for (double i = std::ceil((lo - eps) / step); i * step <= hi + eps; ++i)
    ticks.push_back(i * step == 0 ? 0.0 : i * step);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  check(lo > 0 && hi >= lo, "log_ticks: range ", lo, "..", hi, " is not positive");
  const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  const int count = last - first + 1;
  const int stride = count > 8 ? (count + 7) / 8 : 1;
  std::vector<double> ticks;
  for (int e = first; e <= last; e += stride) ticks.push_back(std::pow(10.0, e));
  return ticks;
}

std::vector<size_t> downsample_indices(const std::vector<double>& y, size_t max_points) {
  const size_t n = y.size();
  std::vector<size_t> keep;
  if (n <= max_points) {
    for (size_t i = 0; i < n; ++i) keep.push_back(i);
    return keep;
  }
  max_points = std::max<size_t>(max_points, 4);
  // The first and last points alone, the inner ones in buckets of two survivors each.
  const size_t buckets = (max_points - 2) / 2;
  keep.push_back(0);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = 1 + b * (n - 2) / buckets, end = 1 + (b + 1) * (n - 2) / buckets;
    if (begin >= end) continue;
    size_t lo = begin, hi = begin;
    for (size_t i = begin; i < end; ++i) {
      if (y[i] < y[lo]) lo = i;
      if (y[i] > y[hi]) hi = i;
    }
    keep.push_back(std::min(lo, hi));
    if (lo != hi) keep.push_back(std::max(lo, hi));
  }
  keep.push_back(n - 1);
  return keep;
}

std::string palette_colour(size_t index) {
  static const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kPalette[index % 10];
}

std::string ramp_colour(double t, size_t hue) {
  // Light to dark. Viridis from 0.8 down to 0 (its yellow end is too faint on white), then
  // ColorBrewer single-hue ramps without their near-white ends.
  static const std::vector<std::vector<uint32_t>> kRamps = {
      {0x7ad151, 0x22a884, 0x2a788e, 0x414487, 0x440154},
      {0x9ecae1, 0x4292c6, 0x08306b},
      {0xfdae6b, 0xe6550d, 0x7f2704},
      {0xa1d99b, 0x31a354, 0x00441b},
      {0xbcbddc, 0x756bb1, 0x3f007d},
      {0xfc9272, 0xde2d26, 0x67000d},
      {0xbdbdbd, 0x737373, 0x252525}};
  const auto& stops = kRamps[hue == 0 ? 0 : 1 + (hue - 1) % (kRamps.size() - 1)];
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * (stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - i;
  char buf[8];
  auto channel = [&](int shift) {
    const double a = (stops[i] >> shift) & 0xff, b = (stops[i + 1] >> shift) & 0xff;
    return static_cast<int>(std::lround(a + f * (b - a)));
  };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", channel(16), channel(8), channel(0));
  return buf;
}

}  // namespace vg::tools
