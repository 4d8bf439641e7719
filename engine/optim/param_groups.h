// Parameter groups: which parameters share a learning rate, a weight decay and optimiser
// options. The builders follow timm (timm/optim/_param_groups.py), except that the
// parameters' own no_weight_decay tags decide the decay, not their rank: a layer tags what
// it makes (norms, biases, LayerScale/GRN/LearnableScaler params, pos_embed, cls_token).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/core/parameter.h"

namespace vg::optim {

struct ParamGroup {
  std::string name;  // "decay", "no_decay", "layer_3_decay", ...; unique in an optimiser
  ParameterList params;
  double lr = 0;  // the current learning rate (Optimizer::set_lr writes it)
  double weight_decay = 0;
  double lr_scale = 1;  // set_lr(base) gives lr = base * lr_scale (layer-wise decay)
  // Per-group value of any option of the optimiser ("momentum", "beta1", ...). The
  // optimiser fills in its defaults for the options a group does not set.
  std::map<std::string, double> options;
};

// Two groups like timm: "no_decay" (weight decay 0) holds the parameters tagged
// no_weight_decay, "decay" the rest, in that order; an empty group is left out. With
// weight_decay == 0 there is one group, "all". Parameters that do not require grad (frozen)
// are left out, as timm does.
std::vector<ParamGroup> param_groups_weight_decay(const ParameterList& params, double weight_decay);

// BEiT-style layer-wise learning-rate decay over layers 0..num_layers-1 (the input stem
// first, the head last): `layer_id` says which layer a parameter belongs to (a model knows
// its own names; models/vit_layer_decay.h has the ViT's rule). A layer's lr_scale is
// layer_decay^(num_layers-1 - id), and each layer is split by the no_weight_decay tag into
// "layer_<id>_no_decay" and "layer_<id>_decay" groups, in the order the parameters first
// appear (as timm).
using LayerIdFn = std::function<int64_t(const std::string& name)>;
std::vector<ParamGroup> param_groups_layer_decay(const ParameterList& params, double weight_decay,
                                                 double layer_decay, int64_t num_layers,
                                                 const LayerIdFn& layer_id);

}  // namespace vg::optim
