// The Dataset interface: TensorDataset's checks, normalisation per channel, and a loader that
// reads a data set which computes its items (no tensor behind it) exactly as it reads one
// held in memory.
#include "engine/data/dataset.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/loader.h"
#include "tests/engine/bits_helpers.h"

using namespace vg;
using vg::testing::same_bits;
using namespace vg::data;

namespace {

// Image i of 3x4x2 pixels computed from i alone, label i % 5: a data set with no storage.
class Computed final : public Dataset {
 public:
  explicit Computed(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  ImageShape image_shape() const override { return {3, 4, 2}; }
  int64_t num_classes() const override { return 5; }
  int32_t item(int64_t index, float* pixels) const override {
    for (int64_t k = 0; k < 24; ++k) pixels[k] = float(index) * 0.5f - float(k) * 0.25f;
    return static_cast<int32_t>(index % 5);
  }
  Normalisation normalisation() const override { return {{0.5, 0.25}, {0.5, 0.125}}; }
  std::string name() const override { return "computed"; }

 private:
  int64_t n_;
};

// The same images held in memory.
TensorDataset in_memory(const Dataset& d) {
  const ImageShape s = d.image_shape();
  Tensor images = Tensor::empty({d.size(), s.height, s.width, s.channels}, DType::f32);
  std::vector<int32_t> labels(d.size());
  for (int64_t i = 0; i < d.size(); ++i)
    labels[i] = d.item(i, images.data<float>() + i * s.numel());
  return TensorDataset(images, labels, d.num_classes(), d.normalisation(), d.name());
}

// A data set whose item 3 is broken, by a label out of range or by an exception.
class Broken final : public Dataset {
 public:
  explicit Broken(bool throws) : throws_(throws) {}
  int64_t size() const override { return 6; }
  ImageShape image_shape() const override { return {2, 2, 1}; }
  int64_t num_classes() const override { return 2; }
  int32_t item(int64_t index, float* pixels) const override {
    std::fill(pixels, pixels + 4, 0.0f);
    if (index == 3 && throws_) throw Error("broken: item 3 cannot be read");
    return index == 3 ? 7 : 0;
  }

 private:
  bool throws_;
};

}  // namespace

TEST_CASE("a loader reads a computed data set exactly as the same images held in memory") {
  const Computed computed(11);
  const TensorDataset memory = in_memory(computed);
  AugmentPolicy policy;
  policy.random_erasing.prob = 0.5;
  Loader a(computed, 4, true, true, 3, true, policy), b(memory, 4, true, true, 3, true, policy);
  for (int batch = 0; batch < 7; ++batch) {  // across an epoch boundary
    INFO("batch ", batch);
    const Batch x = a.next(), y = b.next();
    CHECK(x.indices == y.indices);
    CHECK(x.labels == y.labels);
    CHECK(same_bits(x.images, y.images));
  }
  CHECK(same_bits(batch_in_order(computed, 2, 9).images, batch_in_order(memory, 2, 9).images));
}

TEST_CASE("crops pad a computed data set with its own black, channel by channel") {
  const Computed computed(1);
  CHECK(computed.normalisation().black() == std::vector<float>{-1.0f, -2.0f});
  std::vector<float> image(24), out(24);
  computed.item(0, image.data());
  const std::vector<float> black = computed.normalisation().black();
  apply_augment(image.data(), out.data(), 3, 4, 2, {1, 0, false}, black.data());
  for (int64_t x = 0; x < 4; ++x) {  // the last row came from below the image
    CHECK(out[(2 * 4 + x) * 2 + 0] == -1.0f);
    CHECK(out[(2 * 4 + x) * 2 + 1] == -2.0f);
  }
  CHECK(out[0] == image[4 * 2]);  // row 0 is row 1 of the image
}

TEST_CASE("a data set's bad label or failing item is one vg::Error, not a crash") {
  const Broken bad_label(false), throws(true);
  CHECK_THROWS_WITH_AS(batch_in_order(bad_label, 0, 6),
                       doctest::Contains("item 3 has label 7, outside [0, 2)"), Error);
  Loader loader(throws, 6, false, true, 0);
  CHECK_THROWS_WITH_AS(loader.next(), doctest::Contains("broken: item 3 cannot be read"), Error);
  // Without an override, pixels are intensities: mean 0 and std 1, black is 0.
  CHECK(throws.normalisation() == Normalisation::identity(1));
  CHECK(throws.name() == "dataset");
}

TEST_CASE("TensorDataset checks its images, labels and normalisation") {
  const Tensor images = zeros({4, 2, 3, 2});
  const Normalisation two = Normalisation::identity(2);
  const TensorDataset ok(images, {0, 1, 2, 0}, 3, two, "ok");
  CHECK(ok.size() == 4);
  CHECK(ok.image_shape() == ImageShape{2, 3, 2});
  CHECK(to_string(ok.image_shape()) == "2x3x2");
  CHECK_THROWS_WITH_AS(TensorDataset(images, {0, 1, 2}, 3, two, "short"),
                       doctest::Contains("data set 'short' has 4 images but 3 labels"), Error);
  CHECK_THROWS_WITH_AS(TensorDataset(images, {0, 1, 3, 0}, 3, two, "range"),
                       doctest::Contains("label 3 at index 2 is out of range for 3 classes"),
                       Error);
  CHECK_THROWS_WITH_AS(
      TensorDataset(images, {0, 1, 2, 0}, 3, Normalisation::identity(1), "grey"),
      doctest::Contains("data set 'grey': the normalisation has 1 means and 1 standard "
                        "deviations for 2 channels"),
      Error);
  CHECK_THROWS_WITH_AS(TensorDataset(images, {0, 1, 2, 0}, 3, {{0, 0}, {1, 0}}, "flat"),
                       doctest::Contains("channel 1 (mean 0, std 0)"), Error);
  CHECK_THROWS_WITH_AS(TensorDataset(zeros({4, 6}), {0, 1, 2, 0}, 3, two, "flat"),
                       doctest::Contains("needs float32 images (N, H, W, C), got [4,6]"), Error);
}

TEST_CASE("bytes are normalised per channel, and their statistics are exact") {
  // Two pixels of three channels: (0, 51, 255) and (255, 51, 0).
  const std::vector<uint8_t> bytes = {0, 51, 255, 255, 51, 0};
  const Normalisation stats = pixel_statistics(bytes, 3);
  CHECK(stats.mean == std::vector<double>{0.5, 0.2, 0.5});
  CHECK(stats.std == std::vector<double>{0.5, 0.0, 0.5});
  const Normalisation n{{0.5, 0.2, 0.25}, {0.5, 0.1, 0.25}};
  const Tensor t = normalise_pixels(bytes, {1, 1, 2, 3}, n);
  CHECK(t.to_vector() == std::vector<double>{-1, 0, 3, 1, 0, -1});
  CHECK_THROWS_WITH_AS(normalise_pixels(bytes, {1, 1, 3, 2}, n),
                       doctest::Contains("the normalisation has 3 means"), Error);
  CHECK_THROWS_WITH_AS(pixel_statistics(bytes, 4), doctest::Contains("not whole pixels of 4"),
                       Error);
  // The statistics do not depend on how the pixels are ordered or how many threads read them.
  Rng rng(5);
  std::vector<uint8_t> many(3 * 1000);
  for (uint8_t& b : many) b = static_cast<uint8_t>(rng.below(256));
  std::vector<uint8_t> reversed(many.size());
  for (size_t p = 0; p < 1000; ++p)
    std::copy_n(many.begin() + 3 * (999 - p), 3, reversed.begin() + 3 * p);
  CHECK(pixel_statistics(many, 3) == pixel_statistics(reversed, 3));
}
