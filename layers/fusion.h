// How a Block runs its two residual branches as fewer engine ops. Every fusion decision of
// the model is made here, from the modules' own parameters; no module looks at its
// neighbours. Fused, a branch has the forward bits of its modules run one by one (gradients
// equal up to float32 rounding where LayerScale is folded in; engine/ops/ops.h, "linear
// fused with its neighbours") and keeps fewer activations for backward:
//   norm -> linear        one layer_norm_linear / affine_linear (from the norm's ChannelMap);
//                         the norm is recomputed in backward instead of its output kept
//   linear -> LayerScale  one scaled_linear
//   GELU [-> GRN] -> fc2  one gelu_linear / gelu_grn_linear, when no dropout acts between
//   ... -> + residual     the block's residual add, by the branch's last op where no dropout
//                         follows it (in bf16 mode made as the product stores its rows)
// Not fused, a branch is its modules called one by one, as timm writes the block.
#pragma once

#include "layers/attention.h"
#include "layers/layer_scale.h"
#include "layers/mlp.h"
#include "layers/token_norm.h"

namespace vg::nn {

// ls(attn(norm(x))), ls optional, plus the residual where that is defined. probs (not null):
// the attention runs step by step and keeps its probabilities there.
Tensor attention_branch(const Tensor& x, TokenNorm& norm, Attention& attn, LayerScale* ls,
                        Tensor* probs, bool fuse, const Tensor& residual = Tensor());
// ls(mlp(norm(x))), ls optional, plus the residual where that is defined.
Tensor mlp_branch(const Tensor& x, TokenNorm& norm, Mlp& mlp, LayerScale* ls, bool fuse,
                  const Tensor& residual = Tensor());

}  // namespace vg::nn
