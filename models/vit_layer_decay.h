// Layer-wise learning-rate decay for a ViT: which layer each of its parameters belongs to,
// read from the names the model gives them (BEiT's and timm's rule).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/optim/param_groups.h"

namespace vg {

// cls_token, reg_token, pos_embed, stem.*, patch_embed* -> 0; blocks.k.* -> k+1; norm.* and
// fc_norm.* -> depth (the id of the last block); anything else (the head) -> depth+1.
int64_t vit_layer_id(const std::string& name, int64_t depth);

// optim::param_groups_layer_decay over the depth + 2 layers of a ViT of `depth` blocks.
std::vector<optim::ParamGroup> vit_param_groups_layer_decay(const ParameterList& params,
                                                            double weight_decay, double layer_decay,
                                                            int64_t depth);

}  // namespace vg
