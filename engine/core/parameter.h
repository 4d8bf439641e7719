// A named trainable tensor with the tags the optimiser reads. Modules (layers/) produce
// them; optimisers and checkpoints (engine/) consume them, keyed by name.
#pragma once

#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace vg {

struct Parameter {
  std::string name;              // dotted path, e.g. "blocks.3.attn.qkv.weight"
  Tensor tensor;                 // a leaf that requires grad
  bool no_weight_decay = false;  // LayerScale/GRN/LearnableScaler/norm params, biases, ...
};

using ParameterList = std::vector<Parameter>;

}  // namespace vg
