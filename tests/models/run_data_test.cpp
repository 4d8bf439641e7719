// A run's data: the model fitted to the data, the data padded to the model, a program's own
// data sets in a run, and the normalisation a run records.
#include "models/run_data.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "engine/core/error.h"
#include "engine/data/idx.h"
#include "models/restore.h"
#include "models/trainer/trainer.h"
#include "tests/engine/idx_helpers.h"

using namespace vg;
using namespace vg::testing;

namespace {

// n images of side x (side - 1) pixels with `channels` channels whose class (of 3) is which
// third of the image is bright; pixels are intensities in [0, 1].
class Thirds final : public data::Dataset {
 public:
  Thirds(int64_t n, int64_t side, int64_t channels) : n_(n), side_(side), channels_(channels) {}
  int64_t size() const override { return n_; }
  data::ImageShape image_shape() const override { return {side_, side_ - 1, channels_}; }
  int64_t num_classes() const override { return 3; }
  int32_t item(int64_t index, float* pixels) const override {
    const int32_t label = static_cast<int32_t>(index % 3);
    const data::ImageShape s = image_shape();
    for (int64_t y = 0; y < s.height; ++y)
      for (int64_t x = 0; x < s.width; ++x)
        for (int64_t c = 0; c < s.channels; ++c)
          pixels[(y * s.width + x) * s.channels + c] = y * 3 / s.height == label ? 1.0f : 0.1f;
    return label;
  }

 private:
  int64_t n_, side_, channels_;
};

ViTConfig tiny_model() {
  ViTConfig c;
  c.patch_size = 2;
  c.embed_dim = 8;
  c.depth = 1;
  c.num_heads = 2;
  return c;
}

}  // namespace

TEST_CASE("the model takes its channels, classes and image side from the data") {
  const data::DataShape shape{100, {12, 10, 3}, 7};
  const ViTConfig fitted = fit_model_to_data(tiny_model(), shape, false);
  CHECK(fitted.img_size == 12);  // the longer side; the images are padded to a square
  CHECK(fitted.in_chans == 3);
  CHECK(fitted.num_classes == 7);
  CHECK(fit_model_to_data(tiny_model(), shape, true).img_size == 28);  // --img-size kept
  ViTConfig patch5 = tiny_model();
  patch5.patch_size = 5;
  CHECK_THROWS_WITH_AS(fit_model_to_data(patch5, shape, false),
                       doctest::Contains("img_size 12 is not divisible by patch_size 5 (img_size "
                                         "is the side of the data's 12x10 images; an img_size of "
                                         "15 pads them"),
                       Error);
  // With a convolutional stem the patches cut the stem's output (9x9 images: 5x5), not the
  // images: patch 5 fits though it does not divide 9.
  ViTConfig stem = patch5;
  stem.stem = {8};
  const ViTConfig with_stem = fit_model_to_data(stem, {10, {9, 9, 1}, 2}, false);
  CHECK(with_stem.img_size == 9);
  CHECK(with_stem.feature_size() == 5);
  CHECK_NOTHROW(with_stem.validate());
}

TEST_CASE("data smaller than the model or not square is padded; data that cannot fit is an error") {
  const auto data = std::make_shared<const Thirds>(6, 7, 2);  // 7x6x2
  ViTConfig m = tiny_model();
  m.patch_size = 1;
  m = fit_model_to_data(m, shape_of(*data), false);
  const auto padded = fit_data_to_model(data, m);
  CHECK(padded->image_shape() == data::ImageShape{7, 7, 2});
  m.img_size = 6;
  CHECK_THROWS_WITH_AS(fit_data_to_model(data, m),
                       doctest::Contains("the data (dataset: images 7x6x2, 3 classes) does not fit "
                                         "the model (img_size 6, in_chans 2, num_classes 3)"),
                       Error);
  m.img_size = 8;
  m.in_chans = 1;
  CHECK_THROWS_WITH_AS(fit_data_to_model(data, m), doctest::Contains("in_chans 1"), Error);
  CHECK_THROWS_WITH_AS(check_same_images(*data, Thirds(6, 8, 2)),
                       doctest::Contains("the test images (dataset: 8x7x2) differ in shape from "
                                         "the training images (dataset: 7x6x2)"),
                       Error);
}

TEST_CASE("a program's own data sets train a run, which records their normalisation") {
  const auto train = std::make_shared<const Thirds>(30, 8, 3);
  const auto test = std::make_shared<const Thirds>(9, 8, 3);
  TrainOptions o;
  o.model = fit_model_to_data(tiny_model(), shape_of(*train), false);
  o.steps = 3;
  o.batch = 10;
  const std::unique_ptr<Run> run = build_run(o, 0, {.train_set = train, .test_set = test});
  CHECK(run->train_set->image_shape() == data::ImageShape{8, 8, 3});  // 8x7 padded
  CHECK(run->steps_per_epoch == 3);
  Trainer trainer(*run);
  trainer.fit();
  CHECK(run->step == 3);
  const Checkpoint c = snapshot(*run);
  CHECK(checkpoint_normalisation(c, "c") == data::Normalisation::identity(3));
  // A checkpoint from before the record has none: its data had Fashion-MNIST's.
  Checkpoint old = c;
  old.data.erase("mean");
  old.data.erase("std");
  CHECK_FALSE(checkpoint_normalisation(old, "old").has_value());
  CHECK_THROWS_WITH_AS(build_run(o, 0, {.train_set = train}),
                       doctest::Contains("give both a training and a test set, or neither"), Error);
  CHECK_THROWS_WITH_AS(
      build_run(o, 0, {.train_set = train, .test_set = std::make_shared<Thirds>(9, 10, 3)}),
      doctest::Contains("the test images (dataset: 10x9x3) differ in shape"), Error);
}

TEST_CASE("the IDX test split is normalised with the training split's statistics") {
  TempDir dir("run_idx");
  write_images(dir / "train-images-idx3-ubyte", 6, 4, 4, 7);
  write_labels(dir / "train-labels-idx1-ubyte", {0, 1, 2, 0, 1, 2});
  write_images(dir / "t10k-images-idx3-ubyte", 3, 4, 4, 13);
  write_labels(dir / "t10k-labels-idx1-ubyte", {2, 1, 0});
  TrainOptions o;
  o.data = "idx";
  o.data_dir = dir.path.string();
  const auto train = load_dataset(o, "train");
  const auto test = load_dataset(o, "test");
  CHECK(train->normalisation() == data::pixel_statistics(pattern(6 * 16, 7), 1));
  CHECK(test->normalisation() == train->normalisation());
  // Given ones win: from the options, and over those, from a checkpoint.
  o.data_mean = {0.5};
  o.data_std = {0.25};
  CHECK(load_dataset(o, "test")->normalisation() == data::Normalisation{{0.5}, {0.25}});
  const data::Normalisation saved{{0.125}, {0.5}};
  CHECK(load_dataset(o, "test", saved)->normalisation() == saved);
  const data::DataShape shape = training_data_shape(o);
  CHECK(shape.size == 6);
  CHECK(shape.image == data::ImageShape{4, 4, 1});
  CHECK(shape.num_classes == 3);
}
