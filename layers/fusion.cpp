#include "layers/fusion.h"

#include "engine/ops/ops.h"
#include "layers/channel_check.h"

namespace vg::nn {
namespace {

// linear(norm(x)) as one op, in the linear's scope.
Tensor norm_linear(const Tensor& x, const TokenNorm& norm, Linear& linear) {
  return linear.run([&] {
    linear.check_input(x.shape());
    check_channels([&norm] { return norm.describe(); }, x.shape(), -1, norm.dim());
    const ChannelMap map = norm.channel_map();
    if (map.kind == ChannelMap::Kind::layer_norm)
      return layer_norm_linear(x, map.scale, map.shift, map.eps, linear.weight(), linear.bias());
    return affine_linear(x, map.scale, map.shift, linear.weight(), linear.bias());
  });
}

// ls(linear(x)) as one op, in the linear's scope; linear(x) without ls.
Tensor linear_scale(const Tensor& x, Linear& linear, const LayerScale* ls) {
  if (!ls) return linear(x);
  return linear.run([&] {
    linear.check_input(x.shape());
    return scaled_linear(x, linear.weight(), linear.bias(), ls->gamma());
  });
}

Tensor scale(const Tensor& x, LayerScale* ls) {
  return ls ? (*ls)(x) : x;
}

}  // namespace

Tensor attention_branch(const Tensor& x, TokenNorm& norm, Attention& attn, LayerScale* ls,
                        Tensor* probs, bool fuse) {
  if (!fuse) {
    const Tensor normed = norm(x);
    return scale(attn.run([&] { return attn.forward(normed, probs); }), ls);
  }
  // Dropout zeroes and rescales elements, so it commutes with LayerScale's per-channel scale.
  return attn.run([&] {
    attn.check_input(x.shape());
    const Tensor heads = attn.attend(norm_linear(x, norm, attn.qkv()), probs);
    return attn.proj_drop()(linear_scale(heads, attn.proj(), ls));
  });
}

Tensor mlp_branch(const Tensor& x, TokenNorm& norm, Mlp& mlp, LayerScale* ls, bool fuse) {
  if (!fuse) return scale(mlp(norm(x)), ls);
  return mlp.run([&] {
    Tensor h = norm_linear(x, norm, mlp.fc1());
    if (mlp.drop1().active()) {
      h = mlp.drop1()(mlp.act()(h));
      if (mlp.grn()) h = (*mlp.grn())(h);
      return mlp.drop2()(linear_scale(h, mlp.fc2(), ls));
    }
    // With nothing random between act and fc2, one op runs act, GRN and fc2: it keeps fc1's
    // output for backward and recomputes the rest there, instead of keeping one or two more
    // tensors of the hidden size (the largest activations of a block).
    const Linear& fc2 = mlp.fc2();
    const Tensor gamma = ls ? ls->gamma() : Tensor();
    const GlobalResponseNorm* grn = mlp.grn();
    return mlp.drop2()(grn ? gelu_grn_linear(h, grn->gamma(), grn->beta(), grn->eps(), fc2.weight(),
                                             fc2.bias(), mlp.act().approx(), gamma)
                           : gelu_linear(h, fc2.weight(), fc2.bias(), mlp.act().approx(), gamma));
  });
}

}  // namespace vg::nn
