#include "engine/data/mixup.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/error.h"

namespace vg::data {

void MixupConfig::validate() const {
  check(mixup_alpha >= 0 && cutmix_alpha >= 0, "mixup: alphas must be >= 0, got mixup ",
        mixup_alpha, " and cutmix ", cutmix_alpha);
  check(prob >= 0 && prob <= 1, "mixup: prob must be in [0, 1], got ", prob);
  check(switch_prob >= 0 && switch_prob <= 1, "mixup: switch_prob must be in [0, 1], got ",
        switch_prob);
  check(label_smoothing >= 0 && label_smoothing < 1,
        "mixup: label_smoothing must be in [0, 1), got ", label_smoothing);
  check(!active() || num_classes > 0, "mixup: num_classes must be positive, got ", num_classes);
}

double sample_log_gamma(Rng& rng, double shape) {
  check(shape > 0, "sample_log_gamma: shape must be positive, got ", shape);
  // Below 1: Gamma(a) = Gamma(a + 1) U^(1/a), whose log stays finite when the value does not.
  if (shape < 1)
    return sample_log_gamma(rng, shape + 1) + std::log(1.0 - rng.uniform()) / shape;
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = rng.normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = 1.0 - rng.uniform();  // (0, 1]
    if (u < 1.0 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v)))
      return std::log(d * v);
  }
}

double sample_beta(Rng& rng, double a, double b) {
  const double log_x = sample_log_gamma(rng, a), log_y = sample_log_gamma(rng, b);
  return 1.0 / (1.0 + std::exp(log_y - log_x));  // X / (X + Y) without over- or underflow
}

CutmixBox cutmix_box_at(double lam, int64_t height, int64_t width, int64_t cy, int64_t cx) {
  const double ratio = std::sqrt(1.0 - lam);
  const int64_t half_h = static_cast<int64_t>(double(height) * ratio) / 2;
  const int64_t half_w = static_cast<int64_t>(double(width) * ratio) / 2;
  return {std::clamp<int64_t>(cy - half_h, 0, height), std::clamp<int64_t>(cy + half_h, 0, height),
          std::clamp<int64_t>(cx - half_w, 0, width), std::clamp<int64_t>(cx + half_w, 0, width)};
}

MixParams draw_mix_params(const MixupConfig& config, int64_t height, int64_t width, Rng& rng) {
  MixParams p;
  if (!config.active() || !(rng.uniform() < config.prob)) return p;
  if (config.mixup_alpha > 0 && config.cutmix_alpha > 0)
    p.cutmix = rng.uniform() < config.switch_prob;
  else
    p.cutmix = config.cutmix_alpha > 0;
  const double alpha = p.cutmix ? config.cutmix_alpha : config.mixup_alpha;
  p.lam = sample_beta(rng, alpha, alpha);
  if (p.cutmix) {
    const auto cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height)));
    const auto cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width)));
    p.box = cutmix_box_at(p.lam, height, width, cy, cx);
    p.lam = 1.0 - double(p.box.area()) / double(height * width);  // what was really pasted
  }
  return p;
}

void mix_images(Tensor& images, const MixParams& params) {
  check(images.defined() && images.dim() == 4 && images.dtype() == DType::f32,
        "mix_images: needs float32 images (n, H, W, C), got ",
        images.defined() ? shape_str(images.shape()) : "none");
  if (params.lam == 1.0) return;
  const int64_t n = images.size(0), height = images.size(1), width = images.size(2);
  const int64_t row = width * images.size(3), image_size = height * row;
  float* x = images.data<float>();
  const std::vector<float> original(x, x + n * image_size);  // partners as they were
  const auto lam = static_cast<float>(params.lam), rest = static_cast<float>(1.0 - params.lam);
  for (int64_t i = 0; i < n; ++i) {
    float* to = x + i * image_size;
    const float* partner = original.data() + (n - 1 - i) * image_size;
    if (params.cutmix) {
      const CutmixBox& b = params.box;
      const int64_t c = images.size(3);
      for (int64_t y = b.y0; y < b.y1; ++y)
        std::memcpy(to + y * row + b.x0 * c, partner + y * row + b.x0 * c,
                    (b.x1 - b.x0) * c * sizeof(float));
    } else {
      for (int64_t k = 0; k < image_size; ++k) to[k] = to[k] * lam + partner[k] * rest;
    }
  }
}

Tensor mixup_targets(const std::vector<int32_t>& labels, int64_t num_classes, double lam,
                     double label_smoothing) {
  const auto n = static_cast<int64_t>(labels.size());
  check(num_classes > 0, "mixup_targets: num_classes must be positive, got ", num_classes);
  for (int64_t i = 0; i < n; ++i)
    check(labels[i] >= 0 && labels[i] < num_classes, "mixup_targets: label ", labels[i],
          " at index ", i, " is outside [0, ", num_classes, ")");
  const double off = label_smoothing / double(num_classes), on = 1.0 - label_smoothing + off;
  Tensor targets = Tensor::empty({n, num_classes}, DType::f32);
  float* t = targets.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < num_classes; ++k) {
      const double own = k == labels[i] ? on : off;
      const double partner = k == labels[n - 1 - i] ? on : off;
      t[i * num_classes + k] = static_cast<float>(lam * own + (1.0 - lam) * partner);
    }
  }
  return targets;
}

}  // namespace vg::data
