// A ViT as an ONNX inference graph (opset 17, IR version 8): what `vitgrad export --format
// onnx` writes, for onnxruntime and every tool that reads ONNX.
//
//   input   "images"  float32 [batch, in_chans, img_size, img_size]   (NCHW, as timm's export)
//   output  "logits"  float32 [batch, num_classes]
//
// The images are normalised as vitgrad's data sets are ((pixel / 255 - mean) / std). The
// weights keep timm's names (blocks.0.attn.qkv.weight, ...); intermediate values are named
// after the module that makes them. Eval mode: dropout and drop-path are absent.
// Opset 17 is the first with LayerNormalization; GELU is written in its erf form
// (Gelu itself arrived in opset 20). A ConvStem is a Conv (its stage's stride, padding 1) and a
// GELU per stage, before the patch embedding's Conv.
#pragma once

#include <string>

#include "models/vit.h"

namespace vg {

constexpr int64_t kOnnxOpset = 17;

// The bytes of the .onnx file of `model`'s inference graph with its current weights.
std::string onnx_model_bytes(const ViT& model);

}  // namespace vg
