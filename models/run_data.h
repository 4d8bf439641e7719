// The data of a run: the data sets that TrainOptions name (Fashion-MNIST, the synthetic
// shapes, or IDX files of any image size and channel count), their normalisation, and how a
// model and a data set are made to fit each other.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/data/dataset.h"
#include "models/training.h"
#include "models/vit_config.h"

namespace vg {

// Where Debian's dataset-fashion-mnist package installs the four gzipped IDX files: a run's
// Fashion-MNIST when --data-dir is not given.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// The "train" or "test" split of the data `options` name, as stored (not yet padded to a
// model). Its normalisation: `normalisation` if given, else the options' data_mean and
// data_std if given, else the data's own: Fashion-MNIST's statistics for fashion-mnist and
// synthetic, the training split's statistics for idx.
std::shared_ptr<const data::Dataset> load_dataset(
    const TrainOptions& options, const std::string& split,
    const std::optional<data::Normalisation>& normalisation = {});

// What the training data of `options` holds (size, image shape, classes), from the IDX
// headers and labels without the pixels (fashion-mnist and synthetic: their fixed shapes).
data::DataShape training_data_shape(const TrainOptions& options);

// `model` made for the data: its in_chans and num_classes the data's, and unless
// `keep_img_size` its img_size the data's longer side (a non-square image is padded to a
// square). A patch_size that does not divide that side is a vg::Error naming the sizes.
ViTConfig fit_model_to_data(ViTConfig model, const data::DataShape& data, bool keep_img_size);

// `data` padded with black to the model's img_size where its images are smaller or not square
// (data/pad_images.h), then checked to fit the model: image side, channels and classes.
std::shared_ptr<const data::Dataset> fit_data_to_model(std::shared_ptr<const data::Dataset> data,
                                                       const ViTConfig& model);

// Throws unless the two splits' images have the same shape; the message names both.
void check_same_images(const data::Dataset& train, const data::Dataset& test);
// The same for the test split that `options` name, from its header alone: the test images
// are normalised as the training images are, which needs their channels to agree.
void check_test_images(const TrainOptions& options, const data::Dataset& train);

}  // namespace vg
