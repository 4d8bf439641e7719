#include "engine/optim/param_groups.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace vg::optim {
namespace {

void check_weight_decay(const char* where, double weight_decay) {
  check(std::isfinite(weight_decay) && weight_decay >= 0, where,
        ": weight_decay must be a finite number >= 0, got ", weight_decay);
}

}  // namespace

std::vector<ParamGroup> param_groups_weight_decay(const ParameterList& params,
                                                  double weight_decay) {
  check_weight_decay("param_groups_weight_decay", weight_decay);
  ParamGroup no_decay, decay;
  no_decay.name = weight_decay == 0 ? "all" : "no_decay";
  decay.name = "decay";
  decay.weight_decay = weight_decay;
  for (const Parameter& p : params) {
    if (!p.tensor.requires_grad()) continue;  // frozen
    (weight_decay == 0 || p.no_weight_decay ? no_decay : decay).params.push_back(p);
  }
  std::vector<ParamGroup> groups;
  if (!no_decay.params.empty()) groups.push_back(std::move(no_decay));
  if (!decay.params.empty()) groups.push_back(std::move(decay));
  return groups;
}

std::vector<ParamGroup> param_groups_layer_decay(const ParameterList& params, double weight_decay,
                                                 double layer_decay, int64_t num_layers,
                                                 const LayerIdFn& layer_id) {
  check_weight_decay("param_groups_layer_decay", weight_decay);
  check(std::isfinite(layer_decay) && layer_decay > 0, "param_groups_layer_decay: layer_decay ",
        "must be a finite number > 0, got ", layer_decay);
  check(num_layers >= 1, "param_groups_layer_decay: num_layers must be >= 1, got ", num_layers);
  std::vector<ParamGroup> groups;
  for (const Parameter& p : params) {
    if (!p.tensor.requires_grad()) continue;
    const int64_t id = layer_id(p.name);
    check(id >= 0 && id < num_layers, "param_groups_layer_decay: parameter '", p.name,
          "' is in layer ", id, ", outside 0..", num_layers - 1);
    const std::string name =
        "layer_" + std::to_string(id) + (p.no_weight_decay ? "_no_decay" : "_decay");
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const ParamGroup& g) { return g.name == name; });
    if (it == groups.end()) {
      ParamGroup& g = groups.emplace_back();
      g.name = name;
      g.weight_decay = p.no_weight_decay ? 0.0 : weight_decay;
      g.lr_scale = std::pow(layer_decay, static_cast<double>(num_layers - 1 - id));
      it = groups.end() - 1;
    }
    it->params.push_back(p);
  }
  return groups;
}

}  // namespace vg::optim
