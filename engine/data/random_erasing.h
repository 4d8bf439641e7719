// Random erasing (Zhong et al. 2017) as timm's RandomErasing: with probability `prob`, a
// rectangle of a random share of the image's area (uniform in [min_area, max_area]) and a
// random aspect ratio (log-uniform in [min_aspect, 1/min_aspect]) is overwritten; ten tries
// to fit it inside the image, else the image stays as it is. It acts on normalised images,
// so "pixel" mode fills with N(0, 1) noise per pixel and channel, "rand" with one N(0, 1)
// colour per channel, "const" with zeros (the data set's mean).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/rng.h"

namespace vg::data {

struct RandomErasingConfig {
  double prob = 0;  // timm --reprob
  double min_area = 0.02, max_area = 1.0 / 3.0;
  double min_aspect = 0.3;     // the largest is 1 / min_aspect
  std::string mode = "pixel";  // timm --remode: "pixel" | "rand" | "const"
  int64_t count = 1;           // timm --recount: rectangles per erased image

  bool active() const { return prob > 0; }
  void validate() const;  // throws vg::Error naming the bad field
};

// One rectangle: rows [top, top + height), columns [left, left + width), and its fill:
// height * width * C values ("pixel"), C values ("rand") or none (zeros).
struct ErasedRect {
  int64_t top = 0, left = 0, height = 0, width = 0;
  std::vector<float> fill;
};

// The rectangles of one (H, W, C) image, drawn in timm's order: erased at all?, then per
// rectangle and try the area share, the log aspect ratio, and, once it fits, top, left and
// the fill. Sides are round(sqrt(area * aspect)) and round(sqrt(area / aspect)), rounding
// halves to even as Python does, and must be smaller than the image's.
std::vector<ErasedRect> draw_erasing(const RandomErasingConfig& config, int64_t height,
                                     int64_t width, int64_t channels, Rng& rng);

// Overwrites the rectangles of one (H, W, C) image.
void apply_erasing(float* image, int64_t height, int64_t width, int64_t channels,
                   const std::vector<ErasedRect>& rects);

}  // namespace vg::data
