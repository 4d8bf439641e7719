// Batches from any Dataset (dataset.h): a fresh seeded permutation every epoch, the last
// partial batch kept, and training augmentation (random crop with zero padding 2, horizontal flip;
// optionally RandAugment, random erasing and mixup/cutmix, see AugmentPolicy).
//
// The loader's whole position is plain data (LoaderState), and the permutation of an epoch is
// recomputed from (seed, epoch), so a resumed run sees exactly the batches of an
// uninterrupted one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/data/dataset.h"
#include "engine/data/mixup.h"
#include "engine/data/rand_augment.h"
#include "engine/data/random_erasing.h"

namespace vg::data {

inline constexpr int kCropPadding = 2;

struct LoaderState {
  int64_t epoch = 0;
  int64_t cursor = 0;  // index of the next sample within the epoch's permutation
  uint64_t seed = 0;
  RngState augment_rng;
  bool operator==(const LoaderState& o) const = default;
};

struct Batch {
  Tensor images;                 // (n, H, W, C) float32, n <= batch_size
  std::vector<int32_t> labels;   // n
  std::vector<int64_t> indices;  // the dataset index of every sample
  Tensor targets;                // (n, K) soft targets when the batch was mixed, else none
  int64_t epoch = 0;             // the epoch the samples belong to
  bool last_in_epoch = false;
};

// How one training image is transformed: out(y, x) = in(y + dy, x' + dx), x' = W-1-x when
// flipped, the pad pixel outside the image.
struct Augment {
  int dy = 0;  // in [-kCropPadding, kCropPadding]
  int dx = 0;
  bool flip = false;
};

// Writes the augmented copy of one (H, W, C) image into dst; `pad` holds one value per channel.
void apply_augment(const float* src, float* dst, int64_t height, int64_t width, int64_t channels,
                   const Augment& augment, const float* pad);

// The training augmentations beyond crop and flip, in the order they act (timm's): after the
// crop and flip, RandAugment on the 8-bit grey levels, then random erasing on the normalised
// image, then mixup or cutmix of the whole batch, which also gives the batch soft targets.
// All are off by default; their draws come from the loader's augmentation generator, so a
// saved loader state resumes them exactly.
struct AugmentPolicy {
  std::optional<RandAugmentConfig> rand_augment;  // single-channel images only
  RandomErasingConfig random_erasing;
  MixupConfig mixup;
  bool any() const { return rand_augment || random_erasing.active() || mixup.active(); }
};

class Loader {
 public:
  // Reads `data`, which must outlive the loader (a temporary does not compile).
  // With augment but not crop, the only transform is the horizontal flip; `policy` acts
  // whether or not `augment` is on.
  Loader(const Dataset& data, int64_t batch_size, bool shuffle, bool augment, uint64_t seed,
         bool crop = true, const AugmentPolicy& policy = {});
  Loader(const Dataset&& data, int64_t, bool, bool, uint64_t, bool = true,
         const AugmentPolicy& = {}) = delete;

  // The next batch; after the last batch of an epoch the next epoch starts.
  Batch next();
  int64_t batches_per_epoch() const;
  // The samples that the coming batches of the current epoch hold, up to its end.
  int64_t samples_left_in_epoch() const { return data_.size() - cursor_; }
  int64_t batch_size() const { return batch_size_; }
  const Dataset& dataset() const { return data_; }

  LoaderState state() const;
  // Continues from a saved position; a state that cannot belong to this data set throws.
  void set_state(const LoaderState& state);
  // The checks of set_state alone: throws if `state` cannot belong to this data set.
  void check_state(const LoaderState& state) const;

 private:
  const std::vector<int64_t>& order();  // the permutation of the current epoch
  void apply_policy(Batch& batch);  // RandAugment, erasing, mixup: in place, with targets

  const Dataset& data_;
  std::vector<float> pad_;  // black, one value per channel: what crops pad with
  int64_t batch_size_;
  bool shuffle_;
  bool augment_;
  bool crop_;
  AugmentPolicy policy_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t cursor_ = 0;
  Rng augment_rng_;
  std::vector<int64_t> order_;
  int64_t order_epoch_ = -1;  // the epoch order_ belongs to
};

// The samples [begin, end) of `data` in order, unaugmented: one batch of an evaluation pass.
Batch batch_in_order(const Dataset& data, int64_t begin, int64_t end);

// One pass over a data set in order without augmentation, for evaluation:
//   for (const Batch& batch : InOrder(test_set, 256)) { ... }
class InOrder {
 public:
  InOrder(const Dataset& data, int64_t batch_size);  // `data` must outlive the pass
  InOrder(const Dataset&& data, int64_t batch_size) = delete;
  struct Iterator {
    const InOrder* in;
    int64_t index;
    Batch operator*() const { return in->batch(index); }
    Iterator& operator++() {
      ++index;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return index != o.index; }
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, num_batches_}; }
  int64_t size() const { return num_batches_; }  // the number of batches
  Batch batch(int64_t index) const;

 private:
  const Dataset& data_;
  int64_t batch_size_;
  int64_t num_batches_;
};

}  // namespace vg::data
