#include "engine/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/data/idx.h"

namespace vg::data {
namespace {

void check_split(const char* source, const std::string& split) {
  check(split == "train" || split == "test", source, ": unknown split '", split,
        "' (expected train or test)");
}

// dir/stem if it exists, else dir/stem.gz.
std::string find_idx_file(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check(fs::is_directory(dir, ec), "fashion-mnist: ", dir,
        ": directory not found (install the dataset-fashion-mnist package, or give the "
        "directory that holds the IDX files)");
  const fs::path plain = fs::path(dir) / stem;
  if (fs::exists(plain, ec)) return plain.string();
  const fs::path gz = fs::path(dir) / (stem + ".gz");
  if (fs::exists(gz, ec)) return gz.string();
  throw Error(cat_str("fashion-mnist: ", plain.string(), "[.gz]: file not found"));
}

// --- synthetic shapes -------------------------------------------------------------------

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

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  // splitmix64's finaliser over a combination that differs for every (seed, stream) pair
  // of practical size.
  uint64_t z = seed * 0x9e3779b97f4a7c15ULL + (stream + 1) * 0xd1b54a32d192ed03ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Tensor normalise_pixels(const std::vector<uint8_t>& pixels, const Shape& shape, double mean,
                        double std) {
  check(static_cast<int64_t>(pixels.size()) == shape_numel(shape),
        "normalise_pixels: ", pixels.size(), " bytes for shape ", shape_str(shape));
  float table[256];  // one value per byte: the same bits wherever a byte appears
  for (int v = 0; v < 256; ++v) table[v] = static_cast<float>((v / 255.0 - mean) / std);
  Tensor images = Tensor::empty(shape, DType::f32);
  float* dst = images.data<float>();
  parallel_for(static_cast<int64_t>(pixels.size()), 1 << 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) dst[i] = table[pixels[i]];
  });
  return images;
}

Dataset load_fashion_mnist(const std::string& dir, const std::string& split) {
  check_split("fashion-mnist", split);
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");

  const IdxLabels labels = read_idx_labels(labels_path, "fashion-mnist");
  for (int64_t i = 0; i < labels.count; ++i)
    check(labels.labels[i] < kFashionMnistClasses, "fashion-mnist: ", labels_path, ": label ",
          int{labels.labels[i]}, " at index ", i, " is out of range for ", kFashionMnistClasses,
          " classes");
  const IdxImages images = read_idx_images(images_path, "fashion-mnist");
  check(images.rows == kFashionMnistSide && images.cols == kFashionMnistSide,
        "fashion-mnist: ", images_path, ": images are ", images.rows, "x", images.cols,
        ", expected ", kFashionMnistSide, "x", kFashionMnistSide);
  check(images.count > 0, "fashion-mnist: ", images_path, ": holds no images");
  check(labels.count == images.count, "fashion-mnist: ", labels_path, ": ", labels.count,
        " labels, but ", images_path, " holds ", images.count, " images");

  Dataset out;
  out.images = normalise_pixels(images.pixels, {images.count, images.rows, images.cols, 1},
                                kFashionMnistMean, kFashionMnistStd);
  out.labels.assign(labels.labels.begin(), labels.labels.end());
  out.num_classes = kFashionMnistClasses;
  out.name = "fashion-mnist/" + split;
  out.mean = kFashionMnistMean;
  out.std = kFashionMnistStd;
  return out;
}

Dataset make_synthetic(const std::string& split, int64_t count, uint64_t seed) {
  check_split("synthetic", split);
  check(count > 0 && count <= kIdxMaxItems, "synthetic: count ", count, " out of range [1, ",
        kIdxMaxItems, "]");
  const uint64_t split_seed = derive_seed(seed, split == "train" ? 1 : 2);
  constexpr int64_t kPixels = kSyntheticSide * kSyntheticSide;
  std::vector<uint8_t> pixels(count * kPixels);
  Dataset out;
  out.labels.resize(count);
  // Every image has its own generator, so the work splits over threads with the same result.
  parallel_for(count, 64, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      Rng rng(derive_seed(split_seed, static_cast<uint64_t>(i)));
      out.labels[i] = static_cast<int32_t>(i % kSyntheticClasses);
      draw_synthetic(out.labels[i], rng, pixels.data() + i * kPixels);
    }
  });
  out.images = normalise_pixels(pixels, {count, kSyntheticSide, kSyntheticSide, 1},
                                kFashionMnistMean, kFashionMnistStd);
  out.num_classes = kSyntheticClasses;
  out.name = "synthetic/" + split;
  out.mean = kFashionMnistMean;
  out.std = kFashionMnistStd;
  return out;
}

}  // namespace vg::data
