#include "engine/data/loader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <numeric>

#include "engine/core/error.h"
#include "engine/core/parallel.h"

namespace vg::data {
namespace {

// Stream numbers that keep the loader's generators independent of each other.
constexpr uint64_t kShuffleStream = 0x5348554646ULL;  // "SHUFF"
constexpr uint64_t kAugmentStream = 0x4155474dULL;    // "AUGM"

void check_dataset(const char* who, const Dataset& data) {
  const ImageShape shape = data.image_shape();
  check(shape.height > 0 && shape.width > 0 && shape.channels > 0, who, ": data set '", data.name(),
        "' has images of ", to_string(shape));
  check(data.size() > 0, who, ": data set '", data.name(), "' is empty");
  check(data.num_classes() > 0, who, ": data set '", data.name(), "' has ", data.num_classes(),
        " classes");
  data.normalisation().validate(shape.channels, cat_str(who, ": data set '", data.name(), "'"));
}

// Copies the samples `indices` of `data` into a batch, each one augmented when `augments`
// is not empty. The random draws are made before, so the result does not depend on threads.
Batch gather(const Dataset& data, std::vector<int64_t> indices,
             const std::vector<Augment>& augments, const std::vector<float>& pad) {
  const ImageShape shape = data.image_shape();
  const int64_t n = static_cast<int64_t>(indices.size()), image_size = shape.numel();
  Batch batch;
  batch.images = Tensor::empty({n, shape.height, shape.width, shape.channels}, DType::f32);
  batch.labels.resize(n);
  float* dst = batch.images.data<float>();
  // An exception must not leave a thread of the parallel region: each is kept, the first
  // is thrown after it.
  std::vector<std::exception_ptr> errors(n);
  // Copying is memory-bound: only batches of several 256 KiB chunks are worth the threads.
  parallel_for(n, std::max<int64_t>(1, 65536 / image_size), [&](int64_t i0, int64_t i1) {
    std::vector<float> source(augments.empty() ? 0 : image_size);
    for (int64_t i = i0; i < i1; ++i) {
      float* to = dst + i * image_size;
      try {
        if (augments.empty()) {
          batch.labels[i] = data.item(indices[i], to);
        } else {
          batch.labels[i] = data.item(indices[i], source.data());
          apply_augment(source.data(), to, shape.height, shape.width, shape.channels, augments[i],
                        pad.data());
        }
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    check(batch.labels[i] >= 0 && batch.labels[i] < data.num_classes(), "data set '", data.name(),
          "': item ", indices[i], " has label ", batch.labels[i], ", outside [0, ",
          data.num_classes(), ")");
  }
  batch.indices = std::move(indices);
  return batch;
}

// A normalised grey image's 8-bit levels and back, with the data set's mean and std (the
// way back is normalise_pixels' table, so a round trip of a Fashion-MNIST image is exact).
struct GreyLevels {
  explicit GreyLevels(const Normalisation& n) : mean_(n.mean[0]), std_(n.std[0]) {
    for (int v = 0; v < 256; ++v) table_[v] = static_cast<float>((v / 255.0 - mean_) / std_);
    mean = static_cast<uint8_t>(std::clamp(std::nearbyint(255.0 * mean_), 0.0, 255.0));
  }
  void to_levels(const float* image, int64_t size, std::vector<uint8_t>& levels) const {
    levels.resize(size);
    for (int64_t k = 0; k < size; ++k)
      levels[k] = static_cast<uint8_t>(
          std::clamp(std::nearbyint((double(image[k]) * std_ + mean_) * 255.0), 0.0, 255.0));
  }
  void from_levels(const std::vector<uint8_t>& levels, float* image) const {
    for (size_t k = 0; k < levels.size(); ++k) image[k] = table_[levels[k]];
  }
  uint8_t mean = 0;  // the fill of geometric operations: the data set's mean grey

 private:
  double mean_, std_;
  float table_[256];
};

}  // namespace

void apply_augment(const float* src, float* dst, int64_t height, int64_t width, int64_t channels,
                   const Augment& augment, const float* pad) {
  const int64_t row = width * channels, dx = augment.dx;
  // Pixels [from, to) of a row of `out` become the pad pixel.
  const auto fill = [&](float* out, int64_t from, int64_t to) {
    if (channels == 1) return std::fill(out + from, out + to, pad[0]);
    for (int64_t x = from; x < to; ++x) std::copy(pad, pad + channels, out + x * channels);
  };
  // Output columns [x0, x1) have a source column inside the image; the rest is padding.
  const int64_t x0 = std::clamp<int64_t>(augment.flip ? dx : -dx, 0, width);
  const int64_t x1 = std::clamp<int64_t>(augment.flip ? width + dx : width - dx, x0, width);
  for (int64_t y = 0; y < height; ++y) {
    float* out = dst + y * row;
    const int64_t sy = y + augment.dy;
    if (sy < 0 || sy >= height) {
      fill(out, 0, width);
      continue;
    }
    const float* in = src + sy * row;
    fill(out, 0, x0);
    if (!augment.flip) {
      std::memcpy(out + x0 * channels, in + (x0 + dx) * channels,
                  (x1 - x0) * channels * sizeof(float));
    } else {
      for (int64_t x = x0; x < x1; ++x) {
        const float* pixel = in + (width - 1 - x + dx) * channels;
        std::copy(pixel, pixel + channels, out + x * channels);
      }
    }
    fill(out, x1, width);
  }
}

Loader::Loader(const Dataset& data, int64_t batch_size, bool shuffle, bool augment, uint64_t seed,
               bool crop, const AugmentPolicy& policy)
    : data_(data),
      batch_size_(batch_size),
      shuffle_(shuffle),
      augment_(augment),
      crop_(crop),
      policy_(policy),
      seed_(seed),
      augment_rng_(derive_seed(seed, kAugmentStream)) {
  check_dataset("Loader", data_);
  pad_ = data_.normalisation().black();
  check(batch_size > 0, "Loader: batch_size ", batch_size, " must be positive");
  const int64_t channels = data_.image_shape().channels;
  check(!policy_.rand_augment || channels == 1, "Loader: RandAugment needs ",
        "single-channel images, data set '", data_.name(), "' has ", channels, " channels");
  policy_.random_erasing.validate();
  policy_.mixup.validate();
}

int64_t Loader::batches_per_epoch() const {
  return (data_.size() + batch_size_ - 1) / batch_size_;
}

const std::vector<int64_t>& Loader::order() {
  if (order_epoch_ == epoch_) return order_;
  order_.resize(data_.size());
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (shuffle_) {  // Fisher-Yates from a generator that only (seed, epoch) determine
    Rng rng(derive_seed(derive_seed(seed_, kShuffleStream), static_cast<uint64_t>(epoch_)));
    for (int64_t i = data_.size() - 1; i > 0; --i)
      std::swap(order_[i], order_[rng.below(static_cast<uint64_t>(i) + 1)]);
  }
  order_epoch_ = epoch_;
  return order_;
}

Batch Loader::next() {
  const std::vector<int64_t>& perm = order();
  const int64_t n = std::min(batch_size_, data_.size() - cursor_);
  std::vector<int64_t> indices(perm.begin() + cursor_, perm.begin() + cursor_ + n);
  std::vector<Augment> augments;
  if (augment_) {
    augments.resize(n);
    for (Augment& a : augments) {
      if (crop_) {
        a.dy = static_cast<int>(augment_rng_.below(2 * kCropPadding + 1)) - kCropPadding;
        a.dx = static_cast<int>(augment_rng_.below(2 * kCropPadding + 1)) - kCropPadding;
      }
      a.flip = augment_rng_.bernoulli(0.5);
    }
  }
  Batch batch = gather(data_, std::move(indices), augments, pad_);
  if (policy_.any()) apply_policy(batch);
  batch.epoch = epoch_;
  cursor_ += n;
  batch.last_in_epoch = cursor_ == data_.size();
  if (batch.last_in_epoch) {
    ++epoch_;
    cursor_ = 0;
  }
  return batch;
}

void Loader::apply_policy(Batch& batch) {
  const Shape& shape = batch.images.shape();
  const int64_t n = shape[0], height = shape[1], width = shape[2], channels = shape[3];
  const int64_t image_size = height * width * channels;
  // Every draw first, serially and image by image, so the threads cannot change them.
  std::vector<std::vector<RandOpCall>> ops(n);
  std::vector<std::vector<ErasedRect>> rects(n);
  for (int64_t i = 0; i < n; ++i) {
    if (policy_.rand_augment) ops[i] = draw_rand_augment(*policy_.rand_augment, augment_rng_);
    rects[i] = draw_erasing(policy_.random_erasing, height, width, channels, augment_rng_);
  }
  const MixParams mix = draw_mix_params(policy_.mixup, height, width, augment_rng_);
  const GreyLevels grey(data_.normalisation());
  float* images = batch.images.data<float>();
  parallel_for(n, 1, [&](int64_t i0, int64_t i1) {
    std::vector<uint8_t> levels;
    for (int64_t i = i0; i < i1; ++i) {
      float* image = images + i * image_size;
      if (!ops[i].empty()) {
        grey.to_levels(image, image_size, levels);
        for (const RandOpCall& call : ops[i]) apply_rand_op(levels, height, width, call, grey.mean);
        grey.from_levels(levels, image);
      }
      apply_erasing(image, height, width, channels, rects[i]);
    }
  });
  if (policy_.mixup.active()) {
    mix_images(batch.images, mix);
    batch.targets = mixup_targets(batch.labels, policy_.mixup.num_classes, mix.lam,
                                  policy_.mixup.label_smoothing);
  }
}

LoaderState Loader::state() const {
  return LoaderState{epoch_, cursor_, seed_, augment_rng_.state()};
}

void Loader::set_state(const LoaderState& state) {
  check_state(state);
  epoch_ = state.epoch;
  cursor_ = state.cursor;
  seed_ = state.seed;
  augment_rng_.set_state(state.augment_rng);
  order_epoch_ = -1;  // the seed may differ: recompute the permutation
}

void Loader::check_state(const LoaderState& state) const {
  check(state.epoch >= 0, "Loader(", data_.name(), "): saved epoch ", state.epoch, " is negative");
  check(state.cursor >= 0 && state.cursor < data_.size(), "Loader(", data_.name(),
        "): saved cursor ", state.cursor, " out of range [0, ", data_.size(),
        ") for a data set of ", data_.size(), " samples");
  check(state.augment_rng.s != decltype(state.augment_rng.s){}, "Loader(", data_.name(),
        "): saved augmentation generator state is all zeros");
}

Batch batch_in_order(const Dataset& data, int64_t begin, int64_t end) {
  check_dataset("batch_in_order", data);
  check(0 <= begin && begin < end && end <= data.size(), "batch_in_order: range [", begin, ", ",
        end, ") is not a non-empty range within the ", data.size(), " samples of '", data.name(),
        "'");
  std::vector<int64_t> indices(end - begin);
  std::iota(indices.begin(), indices.end(), begin);
  Batch batch = gather(data, std::move(indices), {}, {});
  batch.last_in_epoch = end == data.size();
  return batch;
}

InOrder::InOrder(const Dataset& data, int64_t batch_size) : data_(data), batch_size_(batch_size) {
  check_dataset("InOrder", data_);
  check(batch_size > 0, "InOrder: batch_size ", batch_size, " must be positive");
  num_batches_ = (data_.size() + batch_size - 1) / batch_size;
}

Batch InOrder::batch(int64_t index) const {
  check(index >= 0 && index < num_batches_, "InOrder: batch ", index, " out of range [0, ",
        num_batches_, ")");
  const int64_t begin = index * batch_size_;
  return batch_in_order(data_, begin, std::min(begin + batch_size_, data_.size()));
}

}  // namespace vg::data
