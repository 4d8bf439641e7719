#include "engine/data/synthetic.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/data/idx.h"
#include "engine/data/idx_dataset.h"

namespace vg::data {
namespace {

// Whether pixel (x, y) is foreground for a shape of class `label` centred at (cx, cy) with
// half-size r; `period` and `phase` serve the periodic patterns.
bool covers(int label, double x, double y, double cx, double cy, double r, int period, int phase) {
  const double dx = std::abs(x - cx), dy = std::abs(y - cy);
  const int xi = static_cast<int>(x), yi = static_cast<int>(y);
  switch (label) {
    case 0:  // horizontal stripes
      return (yi + phase) % period < period / 2;
    case 1:  // vertical stripes
      return (xi + phase) % period < period / 2;
    case 2:  // diagonal stripes
      return (xi + yi + phase) % period < period / 2;
    case 3:  // disk
      return dx * dx + dy * dy <= r * r;
    case 4:  // ring
      return std::abs(std::sqrt(dx * dx + dy * dy) - r) <= 1.2;
    case 5:  // filled square
      return std::max(dx, dy) <= 0.8 * r;
    case 6:  // square outline
      return std::abs(std::max(dx, dy) - 0.8 * r) <= 1.0;
    case 7:  // plus
      return (dx <= 1.5 && dy <= r) || (dy <= 1.5 && dx <= r);
    case 8:  // diagonal cross
      return std::abs(dx - dy) <= 1.5 && std::max(dx, dy) <= r;
    default:  // checkerboard
      return ((xi + phase) / period + (yi + phase) / period) % 2 == 0;
  }
}

// Draws one image of class `label` into 28x28 bytes, every random choice from `rng`.
void draw_synthetic(int label, Rng& rng, uint8_t* out) {
  const double fg = rng.uniform(0.6, 1.0), bg = rng.uniform(0.0, 0.15);
  const double cx = 13.5 + rng.uniform(-4.0, 4.0), cy = 13.5 + rng.uniform(-4.0, 4.0);
  const double r = rng.uniform(5.0, 9.0);
  const int period =
      label == 9 ? 3 + static_cast<int>(rng.below(3)) : 4 + 2 * static_cast<int>(rng.below(3));
  const int phase = static_cast<int>(rng.below(static_cast<uint64_t>(2 * period)));
  for (int64_t y = 0; y < kSyntheticSide; ++y)
    for (int64_t x = 0; x < kSyntheticSide; ++x) {
      const bool on = covers(label, x + 0.5, y + 0.5, cx, cy, r, period, phase);
      const double v = (on ? fg : bg) + 0.08 * rng.normal();
      out[y * kSyntheticSide + x] =
          static_cast<uint8_t>(std::lround(255.0 * std::clamp(v, 0.0, 1.0)));
    }
}

}  // namespace

TensorDataset make_synthetic(const std::string& split, int64_t count, uint64_t seed) {
  return make_synthetic(split, count, seed, fashion_mnist_normalisation());
}

TensorDataset make_synthetic(const std::string& split, int64_t count, uint64_t seed,
                             const Normalisation& normalisation) {
  check(split == "train" || split == "test", "synthetic: unknown split '", split,
        "' (expected train or test)");
  check(count > 0 && count <= kIdxMaxItems, "synthetic: count ", count, " out of range [1, ",
        kIdxMaxItems, "]");
  const uint64_t split_seed = derive_seed(seed, split == "train" ? 1 : 2);
  constexpr int64_t kPixels = kSyntheticSide * kSyntheticSide;
  std::vector<uint8_t> pixels(count * kPixels);
  std::vector<int32_t> labels(count);
  // Every image has its own generator, so the work splits over threads with the same result.
  parallel_for(count, 64, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      Rng rng(derive_seed(split_seed, static_cast<uint64_t>(i)));
      labels[i] = static_cast<int32_t>(i % kSyntheticClasses);
      draw_synthetic(labels[i], rng, pixels.data() + i * kPixels);
    }
  });
  Tensor images =
      normalise_pixels(pixels, {count, kSyntheticSide, kSyntheticSide, 1}, normalisation);
  return TensorDataset(std::move(images), std::move(labels), kSyntheticClasses, normalisation,
                       "synthetic/" + split);
}

}  // namespace vg::data
