// The norms a ViT puts before its attention and MLP (LayerNorm, LearnableScaler), as one
// kind of module: each maps every token's channels on its own, which is what lets a linear
// layer fold the norm into its product (layers/fusion.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/rng.h"
#include "layers/module.h"

namespace vg::nn {

enum class NormKind { layernorm, learnable_scaler };

// A token norm as a per-channel map of one token's features x (C):
//   layer_norm: (x - mean(x)) / sqrt(var(x) + eps) * scale + shift
//   affine:     x * scale + shift
struct ChannelMap {
  enum class Kind { layer_norm, affine };
  Kind kind = Kind::affine;
  Tensor scale, shift;  // (C)
  double eps = 0;       // layer_norm only
};

// A norm over the last axis of a channels-last tensor of any rank.
class TokenNorm : public Module {
 public:
  using Module::Module;
  virtual int64_t dim() const = 0;             // C, the channels it maps
  virtual ChannelMap channel_map() const = 0;  // its current parameters as a map
  virtual std::string describe() const = 0;    // "LayerNorm(dim=64)", for messages
};

// LayerNorm(dim, eps 1e-6), or LearnableScaler(dim) with a ~ N(0, 1) drawn from rng.
std::shared_ptr<TokenNorm> make_norm(NormKind kind, int64_t dim, Rng& rng);

}  // namespace vg::nn
