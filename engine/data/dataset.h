// The Dataset interface: what the loader, the trainer and evaluation need of an image
// classification data set (its size, the shape of its images, item i, the number of classes),
// and TensorDataset, the implementation that holds every image in memory. Fashion-MNIST and
// IDX files (idx_dataset.h) and the synthetic shapes (synthetic.h) load into one; a program
// trains on its own data by implementing Dataset (tools/examples/own_dataset.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace vg::data {

struct ImageShape {
  int64_t height = 0, width = 0, channels = 0;
  int64_t numel() const { return height * width * channels; }
  bool operator==(const ImageShape&) const = default;
};
std::string to_string(const ImageShape& shape);  // "28x28x1"

// What a model must fit: the number of items, their image shape and the number of classes.
struct DataShape {
  int64_t size = 0;
  ImageShape image;
  int64_t num_classes = 0;
};

// How a data set's float pixels relate to intensities in [0, 1], per channel, as
// torchvision's Normalize: pixel = (intensity - mean[c]) / std[c]. Augmentation needs it to
// know black (what a crop pads with) and the 8-bit grey levels RandAugment works on.
struct Normalisation {
  std::vector<double> mean, std;

  // Mean 0 and std 1 on every channel: the pixels are the intensities themselves.
  static Normalisation identity(int64_t channels);
  // Throws unless there is one finite mean and one positive, finite std per channel.
  void validate(int64_t channels, const std::string& who) const;
  // The normalised value of intensity 0 on each channel: black.
  std::vector<float> black() const;
  bool operator==(const Normalisation&) const = default;
};
std::string to_string(const Normalisation& n);  // "mean [0.286] std [0.353]"

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual ImageShape image_shape() const = 0;  // the same for every item
  virtual int64_t num_classes() const = 0;
  // Writes image `index` (height x width x channels floats, channels-last, normalised) to
  // `pixels` and returns its label, in [0, num_classes()). The loader calls it from several
  // threads at once, so it must not change the data set.
  virtual int32_t item(int64_t index, float* pixels) const = 0;
  // Default: Normalisation::identity, for pixels that are intensities in [0, 1].
  virtual Normalisation normalisation() const;
  virtual std::string name() const { return "dataset"; }  // for messages and logs
};

DataShape shape_of(const Dataset& data);

// Images held in memory as one (N, H, W, C) float32 tensor, already normalised.
class TensorDataset final : public Dataset {
 public:
  // Checks that the labels match the images in number and lie in [0, num_classes), and that
  // `normalisation` has one entry per channel. The tensor is shared, not copied.
  TensorDataset(Tensor images, std::vector<int32_t> labels, int64_t num_classes,
                Normalisation normalisation, std::string name);

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  ImageShape image_shape() const override { return shape_; }
  int64_t num_classes() const override { return num_classes_; }
  int32_t item(int64_t index, float* pixels) const override;
  Normalisation normalisation() const override { return normalisation_; }
  std::string name() const override { return name_; }

  const Tensor& images() const { return images_; }
  const std::vector<int32_t>& labels() const { return labels_; }

 private:
  Tensor images_;
  std::vector<int32_t> labels_;
  int64_t num_classes_;
  ImageShape shape_;
  Normalisation normalisation_;
  std::string name_;
};

// Bytes (N, H, W, C) as normalised float32 images: (byte / 255 - mean[c]) / std[c].
Tensor normalise_pixels(const std::vector<uint8_t>& pixels, const Shape& shape,
                        const Normalisation& normalisation);

// The per-channel mean and standard deviation of bytes / 255 over (N, H, W, C) pixels.
Normalisation pixel_statistics(const std::vector<uint8_t>& pixels, int64_t channels);

// A seed for an independent stream, derived from a base seed and a stream number (epoch,
// sample index, purpose): the same pair always gives the same seed.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

}  // namespace vg::data
