#include "engine/data/dataset.h"

#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/parallel.h"

namespace vg::data {
namespace {

std::string list_str(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + cat_str(values[i]);
  return out + "]";
}

}  // namespace

std::string to_string(const ImageShape& s) {
  return cat_str(s.height, "x", s.width, "x", s.channels);
}

Normalisation Normalisation::identity(int64_t channels) {
  return {std::vector<double>(channels, 0.0), std::vector<double>(channels, 1.0)};
}

void Normalisation::validate(int64_t channels, const std::string& who) const {
  check(
      static_cast<int64_t>(mean.size()) == channels && static_cast<int64_t>(std.size()) == channels,
      who, ": the normalisation has ", mean.size(), " means and ", std.size(),
      " standard deviations for ", channels, " channels");
  for (int64_t c = 0; c < channels; ++c)
    check(std::isfinite(mean[c]) && std::isfinite(std[c]) && std[c] > 0, who,
          ": the normalisation of channel ", c, " (mean ", mean[c], ", std ", std[c],
          ") needs a finite mean and a positive, finite std");
}

std::vector<float> Normalisation::black() const {
  std::vector<float> out(mean.size());
  for (size_t c = 0; c < mean.size(); ++c) out[c] = static_cast<float>((0.0 - mean[c]) / std[c]);
  return out;
}

std::string to_string(const Normalisation& n) {
  return "mean " + list_str(n.mean) + " std " + list_str(n.std);
}

DataShape shape_of(const Dataset& data) {
  return {data.size(), data.image_shape(), data.num_classes()};
}

Normalisation Dataset::normalisation() const {
  return Normalisation::identity(image_shape().channels);
}

TensorDataset::TensorDataset(Tensor images, std::vector<int32_t> labels, int64_t num_classes,
                             Normalisation normalisation, std::string name)
    : images_(std::move(images)),
      labels_(std::move(labels)),
      num_classes_(num_classes),
      normalisation_(std::move(normalisation)),
      name_(std::move(name)) {
  check(images_.defined() && images_.dim() == 4 && images_.dtype() == DType::f32, "data set '",
        name_, "' needs float32 images (N, H, W, C), got ",
        images_.defined() ? shape_str(images_.shape()) : "none");
  shape_ = {images_.size(1), images_.size(2), images_.size(3)};
  check(images_.size(0) == size(), "data set '", name_, "' has ", images_.size(0), " images but ",
        size(), " labels");
  check(num_classes_ > 0, "data set '", name_, "': num_classes ", num_classes_,
        " must be positive");
  for (int64_t i = 0; i < size(); ++i)
    check(labels_[i] >= 0 && labels_[i] < num_classes_, "data set '", name_, "': label ",
          labels_[i], " at index ", i, " is out of range for ", num_classes_, " classes");
  normalisation_.validate(shape_.channels, "data set '" + name_ + "'");
}

int32_t TensorDataset::item(int64_t index, float* pixels) const {
  const int64_t n = shape_.numel();
  std::memcpy(pixels, images_.data<float>() + index * n, n * sizeof(float));
  return labels_[index];
}

Tensor normalise_pixels(const std::vector<uint8_t>& pixels, const Shape& shape,
                        const Normalisation& norm) {
  check(shape.size() == 4 && static_cast<int64_t>(pixels.size()) == shape_numel(shape),
        "normalise_pixels: ", pixels.size(), " bytes for shape ", shape);
  const int64_t channels = shape[3];
  norm.validate(channels, "normalise_pixels");
  // One value per byte and channel: the same bits wherever a byte appears.
  std::vector<float> table(256 * channels);
  for (int64_t c = 0; c < channels; ++c)
    for (int v = 0; v < 256; ++v)
      table[c * 256 + v] = static_cast<float>((v / 255.0 - norm.mean[c]) / norm.std[c]);
  Tensor images = Tensor::empty(shape, DType::f32);
  float* dst = images.data<float>();
  parallel_for(static_cast<int64_t>(pixels.size()), 1 << 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) dst[i] = table[(i % channels) * 256 + pixels[i]];
  });
  return images;
}

Normalisation pixel_statistics(const std::vector<uint8_t>& pixels, int64_t channels) {
  check(channels > 0 && !pixels.empty() && pixels.size() % channels == 0,
        "pixel_statistics: ", pixels.size(), " bytes are not whole pixels of ", channels,
        " channels");
  // Integer sums are exact, so the result does not depend on the order of the pixels.
  std::vector<int64_t> sum(channels, 0);
  std::vector<__int128> sum_sq(channels, 0);
  for (size_t i = 0; i < pixels.size(); ++i) {
    const int64_t v = pixels[i];
    sum[i % channels] += v;
    sum_sq[i % channels] += v * v;
  }
  const __int128 n = static_cast<__int128>(pixels.size() / channels);
  Normalisation out;
  for (int64_t c = 0; c < channels; ++c) {
    // n^2 var = n sum(v^2) - sum(v)^2, exactly, in bytes squared.
    const __int128 n2_var = n * sum_sq[c] - static_cast<__int128>(sum[c]) * sum[c];
    out.mean.push_back(static_cast<double>(sum[c]) / static_cast<double>(n) / 255.0);
    out.std.push_back(std::sqrt(static_cast<double>(n2_var)) / static_cast<double>(n) / 255.0);
  }
  return out;
}

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  // splitmix64's finaliser over a combination that differs for every (seed, stream) pair
  // of practical size.
  uint64_t z = seed * 0x9e3779b97f4a7c15ULL + (stream + 1) * 0xd1b54a32d192ed03ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace vg::data
