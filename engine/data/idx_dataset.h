// Image classification data in a folder of IDX files (idx.h), as MNIST and Fashion-MNIST are
// published: train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each plain or gzipped (.gz; the plain file wins when both exist).
// Images of any size and channel count: (N, H, W) files are one channel, (N, H, W, C) files
// C channels. Every missing or malformed file is one vg::Error line naming the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/data/dataset.h"

namespace vg::data {

// Mean and standard deviation of the Fashion-MNIST training pixels scaled to [0, 1].
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;
inline constexpr int64_t kFashionMnistClasses = 10;
inline constexpr int64_t kFashionMnistSide = 28;

// Fashion-MNIST's normalisation: one channel, kFashionMnistMean and kFashionMnistStd.
Normalisation fashion_mnist_normalisation();

struct IdxSplitFiles {
  std::string images, labels;
};
// The two files of `split` ("train" or "test") in dir; errors begin with `context`.
IdxSplitFiles find_idx_split(const std::string& dir, const std::string& split,
                             const std::string& context = "idx");

// The size, image shape and classes that load_idx would give, from the image file's header
// and the labels, without reading the pixels.
DataShape idx_shape(const std::string& dir, const std::string& split,
                    const std::string& context = "idx");

// One split of the IDX data in dir, named after its image file. The labels are 0..255 and
// num_classes is the largest + 1. The pixels are normalised with `normalisation` when given,
// else with the statistics of these very pixels (pixel_statistics): load the training split
// first and give its normalisation to the test split.
TensorDataset load_idx(const std::string& dir, const std::string& split,
                       const std::optional<Normalisation>& normalisation,
                       const std::string& context = "idx");

// The "train" (60000) or "test" (10000) split of Fashion-MNIST in dir: 28x28x1 images of 10
// classes, normalised with its known statistics unless `normalisation` is given.
TensorDataset load_fashion_mnist(const std::string& dir, const std::string& split,
                                 const std::optional<Normalisation>& normalisation = {});

}  // namespace vg::data
