#include "engine/data/random_erasing.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace vg::data {

void RandomErasingConfig::validate() const {
  check(prob >= 0 && prob <= 1, "random erasing: prob must be in [0, 1], got ", prob);
  check(0 < min_area && min_area <= max_area && max_area <= 1,
        "random erasing: need 0 < min_area <= max_area <= 1, got ", min_area, " and ", max_area);
  check(min_aspect > 0 && min_aspect <= 1, "random erasing: min_aspect must be in (0, 1], got ",
        min_aspect);
  check(mode == "pixel" || mode == "rand" || mode == "const",
        "random erasing: mode must be pixel, rand or const, got '", mode, "'");
  check(count >= 1 && count <= 64, "random erasing: count must be in [1, 64], got ", count);
}

std::vector<ErasedRect> draw_erasing(const RandomErasingConfig& config, int64_t height,
                                     int64_t width, int64_t channels, Rng& rng) {
  std::vector<ErasedRect> rects;
  if (!config.active() || rng.uniform() > config.prob) return rects;  // timm: random() > p
  const double area = double(height * width);
  const double log_min = std::log(config.min_aspect), log_max = -log_min;
  // std::nearbyint in the default rounding mode rounds halves to even, as Python's round.
  const auto side = [](double v) { return static_cast<int64_t>(std::nearbyint(v)); };
  for (int64_t r = 0; r < config.count; ++r) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double target = rng.uniform(config.min_area, config.max_area) * area / config.count;
      const double aspect = std::exp(rng.uniform(log_min, log_max));
      const int64_t h = side(std::sqrt(target * aspect)), w = side(std::sqrt(target / aspect));
      if (!(w < width && h < height)) continue;
      ErasedRect rect;
      rect.height = h;
      rect.width = w;
      rect.top = static_cast<int64_t>(rng.below(uint64_t(height - h + 1)));  // randint(0, H-h)
      rect.left = static_cast<int64_t>(rng.below(uint64_t(width - w + 1)));
      const int64_t values = config.mode == "pixel" ? h * w * channels
                             : config.mode == "rand" ? channels
                                                     : 0;
      rect.fill.resize(values);
      for (float& v : rect.fill) v = static_cast<float>(rng.normal());
      rects.push_back(std::move(rect));
      break;
    }
  }
  return rects;
}

void apply_erasing(float* image, int64_t height, int64_t width, int64_t channels,
                   const std::vector<ErasedRect>& rects) {
  for (const ErasedRect& r : rects) {
    check(r.top >= 0 && r.left >= 0 && r.top + r.height <= height && r.left + r.width <= width,
          "apply_erasing: rectangle rows [", r.top, ", ", r.top + r.height, ") columns [", r.left,
          ", ", r.left + r.width, ") is outside the ", height, "x", width, " image");
    const bool per_pixel = int64_t(r.fill.size()) == r.height * r.width * channels;
    for (int64_t y = 0; y < r.height; ++y)
      for (int64_t x = 0; x < r.width; ++x)
        for (int64_t c = 0; c < channels; ++c) {
          const float v = per_pixel          ? r.fill[(y * r.width + x) * channels + c]
                          : r.fill.empty()   ? 0.0f
                                             : r.fill[c];
          image[((r.top + y) * width + r.left + x) * channels + c] = v;
        }
  }
}

}  // namespace vg::data
