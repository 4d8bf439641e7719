// Mixup and CutMix of a whole batch, as timm's Mixup (mode "batch"): one λ per batch, every
// sample mixed with its partner in reversed batch order (sample i with sample n-1-i), and
// soft targets that carry λ and the label smoothing.
//
//   mixup:  x_i = λ x_i + (1-λ) x_{n-1-i},                λ ~ Beta(mixup_alpha, mixup_alpha)
//   cutmix: x_i[box] = x_{n-1-i}[box],  λ = 1 - box area / image area (the box from
//           λ0 ~ Beta(cutmix_alpha, cutmix_alpha): sides sqrt(1-λ0) of the image's, clipped)
//   targets: t_i = λ onehot_s(y_i) + (1-λ) onehot_s(y_{n-1-i}),
//            onehot_s(y) = (1 - s) onehot(y) + s / K
//
// All draws come from the generator the caller passes (the loader's), in timm's order.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"

namespace vg::data {

struct MixupConfig {
  double mixup_alpha = 0;        // timm --mixup; 0: no mixup
  double cutmix_alpha = 0;       // timm --cutmix; 0: no cutmix
  double prob = 1;               // --mixup-prob: the chance that a batch is mixed at all
  double switch_prob = 0.5;      // --mixup-switch-prob: cutmix's share when both are on
  double label_smoothing = 0.1;  // --smoothing, folded into the soft targets
  int64_t num_classes = 0;       // the width of the targets (the model's classes)

  bool active() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
  void validate() const;  // throws vg::Error naming the bad field
};

// Rows [y0, y1) and columns [x0, x1) of an image.
struct CutmixBox {
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  int64_t area() const { return (y1 - y0) * (x1 - x0); }
  bool operator==(const CutmixBox&) const = default;
};

// What one batch gets: λ = 1 means no mixing (the targets are still smoothed).
struct MixParams {
  double lam = 1;
  bool cutmix = false;
  CutmixBox box;  // with cutmix
};

// Gamma(shape, 1) by Marsaglia and Tsang, log-space below shape 1 (tiny values stay exact
// enough for a ratio); Beta(a, b) = X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b).
double sample_log_gamma(Rng& rng, double shape);
double sample_beta(Rng& rng, double a, double b);

// timm's rand_bbox with the centre given: sides int(H sqrt(1-λ)), int(W sqrt(1-λ)), half of
// each (rounded down) on either side of (cy, cx), clipped to the image.
CutmixBox cutmix_box_at(double lam, int64_t height, int64_t width, int64_t cy, int64_t cx);

// The draws of one batch in timm's order: mixed at all?, cutmix or mixup?, λ, then the box
// centre (row, column) for cutmix, whose λ becomes 1 - box area / image area.
MixParams draw_mix_params(const MixupConfig& config, int64_t height, int64_t width, Rng& rng);

// Mixes the images (n, H, W, C) in place with their partners in reversed order.
void mix_images(Tensor& images, const MixParams& params);

// The soft targets (n, num_classes) float32 of labels mixed with their reversed partners.
Tensor mixup_targets(const std::vector<int32_t>& labels, int64_t num_classes, double lam,
                     double label_smoothing);

}  // namespace vg::data
