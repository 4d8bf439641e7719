#include "models/run_data.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/data/idx.h"
#include "engine/data/idx_dataset.h"
#include "engine/data/pad_images.h"
#include "engine/data/synthetic.h"

namespace vg {

std::shared_ptr<const data::Dataset> load_dataset(
    const TrainOptions& o, const std::string& split,
    const std::optional<data::Normalisation>& normalisation) {
  std::optional<data::Normalisation> n = normalisation;
  if (!n && !o.data_mean.empty()) n = data::Normalisation{o.data_mean, o.data_std};
  if (o.data == "synthetic") {
    const int64_t count = split == "train" ? o.synthetic_train : o.synthetic_test;
    return std::make_shared<data::TensorDataset>(data::make_synthetic(
        split, count, o.seed, n.value_or(data::fashion_mnist_normalisation())));
  }
  if (o.data == "idx") {
    // The test split is normalised as the training split is, never by its own statistics.
    if (!n && split == "test") n = data::load_idx(o.data_dir, "train", {}).normalisation();
    return std::make_shared<data::TensorDataset>(data::load_idx(o.data_dir, split, n));
  }
  return std::make_shared<data::TensorDataset>(
      data::load_fashion_mnist(o.data_dir.empty() ? kFashionMnistDir : o.data_dir, split, n));
}

data::DataShape training_data_shape(const TrainOptions& o) {
  if (o.data == "idx") {
    check(!o.data_dir.empty(), "--data idx needs --data-dir (the IDX files' folder)");
    return data::idx_shape(o.data_dir, "train");
  }
  const int64_t size = o.data == "synthetic" ? o.synthetic_train : 60000;
  return {size, {28, 28, 1}, 10};  // Fashion-MNIST's, and the synthetic set's alike
}

ViTConfig fit_model_to_data(ViTConfig model, const data::DataShape& data, bool keep_img_size) {
  model.in_chans = data.image.channels;
  model.num_classes = data.num_classes;
  if (keep_img_size) return model;
  const int64_t side = std::max(data.image.height, data.image.width);
  model.img_size = side;
  // With a stem the patches cut its output, which ViTConfig::validate checks.
  if (!model.stem.empty()) return model;
  const int64_t p = std::max<int64_t>(model.patch_size, 1);
  check(side % p == 0, "img_size ", side, " is not divisible by patch_size ", p,
        " (img_size is the ", "side of the data's ", data.image.height, "x", data.image.width,
        " images; an img_size of ", (side / p + 1) * p,
        " pads them with black, or choose another patch_size)");
  return model;
}

std::shared_ptr<const data::Dataset> fit_data_to_model(std::shared_ptr<const data::Dataset> data,
                                                       const ViTConfig& m) {
  const data::ImageShape s = data->image_shape();
  check(s.height <= m.img_size && s.width <= m.img_size && s.channels == m.in_chans &&
            data->num_classes() <= m.num_classes,
        "the data (", data->name(), ": images ", data::to_string(s), ", ", data->num_classes(),
        " classes) does not fit the model (img_size ", m.img_size, ", in_chans ", m.in_chans,
        ", num_classes ", m.num_classes, ")");
  if (s.height < m.img_size || s.width < m.img_size)
    return std::make_shared<data::TensorDataset>(data::pad_images(*data, m.img_size));
  return data;
}

namespace {

void check_same(const std::string& train, const data::ImageShape& train_shape,
                const std::string& test, const data::ImageShape& test_shape) {
  check(train_shape == test_shape, "the test images (", test, ": ", data::to_string(test_shape),
        ") differ in shape from the training images (", train, ": ", data::to_string(train_shape),
        ")");
}

}  // namespace

void check_same_images(const data::Dataset& train, const data::Dataset& test) {
  check_same(train.name(), train.image_shape(), test.name(), test.image_shape());
}

void check_test_images(const TrainOptions& o, const data::Dataset& train) {
  if (o.data != "idx") return;  // the other data sets have one shape
  const std::string images = data::find_idx_split(o.data_dir, "test").images;
  const data::IdxImages header = data::read_idx_images_header(images);
  check_same(train.name(), train.image_shape(), images,
             {header.rows, header.cols, header.channels});
}

}  // namespace vg
