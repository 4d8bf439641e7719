// A small synthetic set of drawn shapes, for tests, examples and machines without the
// Fashion-MNIST package: ten classes of 28x28 grey images that a small ViT tells apart.
#pragma once

#include <cstdint>
#include <string>

#include "engine/data/dataset.h"

namespace vg::data {

inline constexpr int64_t kSyntheticTrainSize = 2000;
inline constexpr int64_t kSyntheticTestSize = 500;
inline constexpr int64_t kSyntheticClasses = 10;
inline constexpr int64_t kSyntheticSide = 28;

// `count` 28x28x1 images of 10 classes of drawn shapes (stripes, checkerboard, disk, ring,
// squares, crosses) with jitter and noise, normalised like Fashion-MNIST unless
// `normalisation` says otherwise. Image i depends only on (split, seed, i); labels cycle
// through the classes, so classes are balanced.
TensorDataset make_synthetic(const std::string& split, int64_t count, uint64_t seed);
TensorDataset make_synthetic(const std::string& split, int64_t count, uint64_t seed,
                             const Normalisation& normalisation);

}  // namespace vg::data
