// Image classification data sets held in memory: Fashion-MNIST from its IDX files, and a small
// synthetic set of drawn shapes for tests and for machines without the data package.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace vg::data {

// Mean and standard deviation of the Fashion-MNIST training pixels scaled to [0, 1].
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;
inline constexpr int64_t kFashionMnistClasses = 10;
inline constexpr int64_t kFashionMnistSide = 28;

inline constexpr int64_t kSyntheticTrainSize = 2000;
inline constexpr int64_t kSyntheticTestSize = 500;
inline constexpr int64_t kSyntheticClasses = 10;
inline constexpr int64_t kSyntheticSide = 28;

struct Dataset {
  Tensor images;  // (N, H, W, C) float32, channels-last, normalised: (pixel/255 - mean) / std
  std::vector<int32_t> labels;  // N labels in [0, num_classes)
  int64_t num_classes = 0;
  std::string name;  // e.g. "fashion-mnist/train"
  // The normalisation applied to pixels in [0, 1]; augmentation pads with a black pixel.
  double mean = 0.0;
  double std = 1.0;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  float pad_value() const { return static_cast<float>((0.0 - mean) / std); }
};

// The "train" (60000) or "test" (10000) split from the four standard IDX file names in dir,
// each plain or gzipped (.gz); the plain file wins when both exist. Any missing or malformed
// file is a one-line vg::Error naming the file.
Dataset load_fashion_mnist(const std::string& dir, const std::string& split);

// `count` 28x28x1 images of 10 classes of drawn shapes (stripes, checkerboard, disk, ring,
// squares, crosses) with jitter and noise, normalised like Fashion-MNIST. Image i depends only
// on (split, seed, i); labels cycle through the classes, so classes are balanced.
Dataset make_synthetic(const std::string& split, int64_t count, uint64_t seed);

// Bytes (N, H, W, C) as the normalised float32 images of a Dataset.
Tensor normalise_pixels(const std::vector<uint8_t>& pixels, const Shape& shape, double mean,
                        double std);

// A seed for an independent stream, derived from a base seed and a stream number (epoch,
// sample index, purpose): the same pair always gives the same seed.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

}  // namespace vg::data
