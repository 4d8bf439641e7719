// Patch embedding: non-overlapping p x p patches of channels-last images, each mapped to
// embed_dim features. The weight is stored in timm's conv layout [E, C, p, p], so a
// checkpoint's "patch_embed.proj.weight" loads into timm unchanged; the computation is
// patchify + one matrix product with the weight viewed as [E, C*p*p].
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/rng.h"
#include "layers/module.h"

namespace vg::nn {

// The "proj" child: weight [E, C, p, p] and bias [E] under timm's names (a convolution of
// stride p there), applied here to patches already cut out.
class PatchProjection : public Module {
 public:
  PatchProjection(int64_t in_chans, int64_t embed_dim, int64_t patch_size, Rng& rng);
  // patches (B, N, C*p*p), each flattened as patchify does -> (B, N, E).
  Tensor forward(const Tensor& patches) override;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_, bias_;
};

class PatchEmbed : public Module {
 public:
  // Weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = C*p*p: PyTorch's default
  // Conv2d initialisation, which timm keeps for the patch embedding.
  PatchEmbed(int64_t img_size, int64_t patch_size, int64_t in_chans, int64_t embed_dim, Rng& rng);

  // images (B, img_size, img_size, in_chans) -> tokens (B, num_patches, embed_dim), in
  // row-major patch order.
  Tensor forward(const Tensor& images) override;

  int64_t num_patches() const { return (img_size_ / patch_size_) * (img_size_ / patch_size_); }
  int64_t patch_size() const { return patch_size_; }
  PatchProjection& proj() { return *proj_; }

 private:
  std::string describe() const;  // "PatchEmbed(img_size=28, patch_size=4, ...)"
  void check_input(const Shape& input_shape) const;

  int64_t img_size_, patch_size_, in_chans_, embed_dim_;
  std::shared_ptr<PatchProjection> proj_;
};

}  // namespace vg::nn
