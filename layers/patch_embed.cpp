#include "layers/patch_embed.h"

#include "engine/ops/ops.h"
#include "layers/conv2d.h"

namespace vg::nn {

PatchProjection::PatchProjection(int64_t in_chans, int64_t embed_dim, int64_t p, Rng& rng)
    : Module("PatchProjection") {
  const int64_t fan_in = in_chans * p * p;
  weight_ =
      register_parameter("weight", conv_default_uniform({embed_dim, in_chans, p, p}, fan_in, rng));
  bias_ = register_parameter("bias", conv_default_uniform({embed_dim}, fan_in, rng),
                             {.no_weight_decay = true});
}

Tensor PatchProjection::forward(const Tensor& patches) {
  return linear(patches, weight_.reshape({weight_.size(0), -1}), bias_);
}

PatchEmbed::PatchEmbed(int64_t img_size, int64_t patch_size, int64_t in_chans, int64_t embed_dim,
                       Rng& rng)
    : Module("PatchEmbed"),
      img_size_(img_size),
      patch_size_(patch_size),
      in_chans_(in_chans),
      embed_dim_(embed_dim) {
  check(img_size > 0 && patch_size > 0 && in_chans > 0 && embed_dim > 0, describe(),
        ": sizes must be positive");
  check(img_size % patch_size == 0, describe(), ": img_size is not divisible by patch_size");
  proj_ = register_module("proj",
                          std::make_shared<PatchProjection>(in_chans, embed_dim, patch_size, rng));
}

std::string PatchEmbed::describe() const {
  return cat_str("PatchEmbed(img_size=", img_size_, ", patch_size=", patch_size_,
                 ", in_chans=", in_chans_, ", embed_dim=", embed_dim_, ")");
}

void PatchEmbed::check_input(const Shape& s) const {
  const auto name = [this] { return describe(); };
  check(s.size() == 4 && s[1] == img_size_ && s[2] == img_size_ && s[3] == in_chans_, name,
        ": images must be (B, ", img_size_, ", ", img_size_, ", ", in_chans_, "), got ", s);
}

Tensor PatchEmbed::forward(const Tensor& images) {
  check_input(images.shape());
  return (*proj_)(patchify(images, patch_size_));
}

}  // namespace vg::nn
