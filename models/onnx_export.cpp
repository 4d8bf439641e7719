#include "models/onnx_export.h"

#include <cmath>
#include <limits>

#include "engine/io/onnx_graph.h"

namespace vg {
namespace {

// Writes the ViT's forward pass as ONNX nodes, one module at a time; each function takes the
// name of its input value and returns the name of its output.
class VitGraph {
 public:
  explicit VitGraph(const ViT& model)
      : config_(model.config()), weights_(model.state_dict()), g_("vitgrad-vit") {}

  std::string bytes() {
    const ViTConfig& c = config_;
    g_.input("images", {-1, c.in_chans, c.img_size, c.img_size});
    std::string x = tokens("images");
    for (int64_t i = 0; i < c.depth; ++i) x = block(x, "blocks." + std::to_string(i) + ".");
    if (c.global_pool == GlobalPool::token) {
      x = g_.node("Gather", {norm(x, "norm"), g_.ints("cls_index", {0})}, "pool",
                  {onnx_int("axis", 1)});
      x = g_.node("Squeeze", {x, g_.ints("pool_axes", {1})}, "pool");
    } else {  // the mean of the patch tokens, then fc_norm
      const int64_t end = std::numeric_limits<int64_t>::max();
      x = g_.node("Slice", {x, g_.ints("patch_start", {1}), g_.ints("patch_end", {end}),
                            g_.ints("token_axis", {1})},
                  "patch_tokens");
      x = norm(g_.node("ReduceMean", {x}, "pool", {onnx_ints("axes", {1}), onnx_int("keepdims", 0)}),
               "fc_norm");
    }
    g_.output(linear(x, "head", "logits"), {-1, c.num_classes});
    return g_.model_bytes(kOnnxOpset, "vitgrad",
                          "ViT " + config_.to_json().dump() + "; input NCHW float32");
  }

 private:
  std::string weight(const std::string& name) { return g_.initializer(name, weights_.at(name)); }
  bool has(const std::string& name) const { return weights_.count(name) > 0; }

  // Stage i's LayerNorm over the channels of an NCHW map: to NHWC, normalised over the last
  // axis, back to NCHW.
  std::string channel_norm(const std::string& x, size_t i) {
    const std::string norm = "stem.norm" + std::to_string(i);
    std::string y = g_.node("Transpose", {x}, norm + ".nhwc", {onnx_ints("perm", {0, 2, 3, 1})});
    y = g_.node("LayerNormalization", {y, weight(norm + ".weight"), weight(norm + ".bias")}, norm,
                {onnx_int("axis", -1), onnx_float("epsilon", 1e-6f)});
    return g_.node("Transpose", {y}, norm + ".nchw", {onnx_ints("perm", {0, 3, 1, 2})});
  }

  // The ConvStem's stages: Conv 3x3, the stage's stride, padding 1 (the weights are already in
  // ONNX's [M, C, kH, kW] layout), the stem's LayerNorm if it has one, then GELU.
  std::string stem(std::string x) {
    for (size_t i = 1; i <= config_.stem.size(); ++i) {
      const std::string conv = "stem.conv" + std::to_string(i);
      const int64_t stride = config_.stem[i - 1].stride;
      x = g_.node("Conv", {x, weight(conv + ".weight"), weight(conv + ".bias")}, conv,
                  {onnx_ints("kernel_shape", {3, 3}), onnx_ints("strides", {stride, stride}),
                   onnx_ints("pads", {1, 1, 1, 1})});
      if (config_.stem_norm == nn::StemNorm::layernorm) x = channel_norm(x, i);
      x = gelu(x, "stem.act" + std::to_string(i));
    }
    return x;
  }

  // images -> (stem ->) patch embedding (a strided convolution) -> class token first ->
  // + pos_embed.
  std::string tokens(const std::string& images) {
    const int64_t p = config_.patch_size, E = config_.embed_dim;
    std::string x = g_.node("Conv", {stem(images), weight("patch_embed.proj.weight"),
                                     weight("patch_embed.proj.bias")},
                            "patch_embed.proj",
                            {onnx_ints("kernel_shape", {p, p}), onnx_ints("strides", {p, p})});
    x = g_.node("Reshape", {x, g_.ints("patch_embed.shape", {0, E, -1})}, "patch_embed.flat");
    x = g_.node("Transpose", {x}, "patch_embed", {onnx_ints("perm", {0, 2, 1})});
    // The class token, repeated over the batch: Expand to [batch, 1, E].
    const std::string batch = g_.node("Slice", {g_.node("Shape", {images}, "images.shape"),
                                                g_.ints("zero", {0}), g_.ints("one", {1})},
                                      "batch");
    const std::string cls_shape =
        g_.node("Concat", {batch, g_.ints("cls_tail", {1, E})}, "cls_shape", {onnx_int("axis", 0)});
    const std::string cls = g_.node("Expand", {weight("cls_token"), cls_shape}, "cls_tokens");
    x = g_.node("Concat", {cls, x}, "tokens", {onnx_int("axis", 1)});
    return g_.node("Add", {x, weight("pos_embed")}, "pos_embed");
  }

  // x @ weight^T + bias, weight [out, in] as timm stores it.
  std::string linear(const std::string& x, const std::string& prefix, const std::string& out) {
    const std::string wt = g_.node("Transpose", {weight(prefix + ".weight")}, prefix + ".weight_t",
                                   {onnx_ints("perm", {1, 0})});
    std::string y = g_.node("MatMul", {x, wt}, has(prefix + ".bias") ? prefix + ".matmul" : out);
    if (has(prefix + ".bias")) y = g_.node("Add", {y, weight(prefix + ".bias")}, out);
    return y;
  }

  // LayerNorm (eps 1e-6, as timm's ViT) or LearnableScaler (a * x + b).
  std::string norm(const std::string& x, const std::string& prefix) {
    if (config_.norm == nn::NormKind::layernorm)
      return g_.node("LayerNormalization",
                     {x, weight(prefix + ".weight"), weight(prefix + ".bias")}, prefix,
                     {onnx_int("axis", -1), onnx_float("epsilon", 1e-6f)});
    const std::string ax = g_.node("Mul", {x, weight(prefix + ".a")}, prefix + ".scaled");
    return g_.node("Add", {ax, weight(prefix + ".b")}, prefix);
  }

  std::string layer_scale(const std::string& x, const std::string& prefix) {
    if (!has(prefix + ".gamma")) return x;
    return g_.node("Mul", {x, weight(prefix + ".gamma")}, prefix);
  }

  // softmax(q k^T / sqrt(head_dim)) v over heads; qkv's rows are q | k | v as in timm.
  std::string attention(const std::string& x, const std::string& prefix) {
    const int64_t H = config_.num_heads, E = config_.embed_dim, D = E / H;
    std::string qkv = linear(x, prefix + "qkv", prefix + "qkv");
    qkv = g_.node("Reshape", {qkv, g_.ints(prefix + "qkv.shape", {0, 0, 3, H, D})},
                  prefix + "qkv.heads");
    qkv = g_.node("Transpose", {qkv}, prefix + "qkv.split", {onnx_ints("perm", {2, 0, 3, 1, 4})});
    auto part = [&](int64_t i, const char* name) {  // [batch, heads, tokens, head_dim]
      const std::string index = g_.ints(prefix + name + ".index", {i});
      const std::string t = g_.node("Gather", {qkv, index}, prefix + name + ".gather",
                                    {onnx_int("axis", 0)});
      return g_.node("Squeeze", {t, g_.ints(prefix + name + ".axes", {0})}, prefix + name);
    };
    const std::string q = part(0, "q"), k = part(1, "k"), v = part(2, "v");
    const std::string kt = g_.node("Transpose", {k}, prefix + "k_t", {onnx_ints("perm", {0, 1, 3, 2})});
    std::string scores = g_.node("MatMul", {q, kt}, prefix + "scores");
    scores = g_.node("Mul", {scores, g_.scalar(prefix + "scale", float(1.0 / std::sqrt(double(D))))},
                     prefix + "scores.scaled");
    const std::string attn = g_.node("Softmax", {scores}, prefix + "attn", {onnx_int("axis", -1)});
    std::string out = g_.node("MatMul", {attn, v}, prefix + "heads");
    out = g_.node("Transpose", {out}, prefix + "heads.t", {onnx_ints("perm", {0, 2, 1, 3})});
    out = g_.node("Reshape", {out, g_.ints(prefix + "heads.shape", {0, 0, E})}, prefix + "merged");
    return linear(out, prefix + "proj", prefix + "proj");
  }

  // GELU(x) = x * (1 + erf(x / sqrt 2)) / 2, the exact form.
  std::string gelu(const std::string& x, const std::string& prefix) {
    std::string e = g_.node("Mul", {x, g_.scalar(prefix + ".rsqrt2", float(M_SQRT1_2))},
                            prefix + ".scaled");
    e = g_.node("Erf", {e}, prefix + ".erf");
    e = g_.node("Add", {e, g_.scalar(prefix + ".one", 1.0f)}, prefix + ".erf1");
    const std::string half = g_.node("Mul", {x, g_.scalar(prefix + ".half", 0.5f)}, prefix + ".half_x");
    return g_.node("Mul", {half, e}, prefix);
  }

  // GRN over the tokens: g = L2 norm per channel over the token axis; n = g / (mean_C g + eps);
  // gamma * (x * n) + beta + x.
  std::string grn(const std::string& x, const std::string& prefix) {
    const std::string gx = g_.node("ReduceL2", {x}, prefix + ".g",
                                   {onnx_ints("axes", {1}), onnx_int("keepdims", 1)});
    std::string mean = g_.node("ReduceMean", {gx}, prefix + ".g_mean",
                               {onnx_ints("axes", {-1}), onnx_int("keepdims", 1)});
    mean = g_.node("Add", {mean, g_.scalar(prefix + ".eps", 1e-6f)}, prefix + ".g_mean_eps");
    const std::string nx = g_.node("Div", {gx, mean}, prefix + ".n");
    std::string y = g_.node("Mul", {x, nx}, prefix + ".xn");
    y = g_.node("Mul", {y, weight(prefix + ".gamma")}, prefix + ".scaled");
    y = g_.node("Add", {y, weight(prefix + ".beta")}, prefix + ".shifted");
    return g_.node("Add", {y, x}, prefix);
  }

  std::string mlp(const std::string& x, const std::string& prefix) {
    std::string h = gelu(linear(x, prefix + "fc1", prefix + "fc1"), prefix + "act");
    if (config_.grn) h = grn(h, prefix + "grn");
    return linear(h, prefix + "fc2", prefix + "fc2");
  }

  // Pre-norm block: x + ls1(attn(norm1(x))), then x + ls2(mlp(norm2(x))).
  std::string block(const std::string& x, const std::string& prefix) {
    std::string a = layer_scale(attention(norm(x, prefix + "norm1"), prefix + "attn."), prefix + "ls1");
    const std::string mid = g_.node("Add", {x, a}, prefix + "residual1");
    std::string m = layer_scale(mlp(norm(mid, prefix + "norm2"), prefix + "mlp."), prefix + "ls2");
    return g_.node("Add", {mid, m}, prefix + "out");
  }

  const ViTConfig& config_;
  nn::StateDict weights_;
  OnnxGraph g_;
};

}  // namespace

std::string onnx_model_bytes(const ViT& model) { return VitGraph(model).bytes(); }

}  // namespace vg
