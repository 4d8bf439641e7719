#include "engine/optim/param_groups.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace vg::optim {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

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

int64_t layer_id_for_name(const std::string& name, int64_t depth) {
  for (const char* stem : {"cls_token", "reg_token", "pos_embed", "patch_embed"})
    if (starts_with(name, stem)) return 0;
  if (starts_with(name, "blocks.")) {
    const size_t begin = 7, end = name.find('.', begin);
    const std::string index = name.substr(begin, end == std::string::npos ? end : end - begin);
    check(!index.empty() && index.size() < 10 &&
              index.find_first_not_of("0123456789") == std::string::npos,
          "param_groups_layer_decay: cannot read a block index from '", name, "'");
    const int64_t k = std::stoll(index);
    check(k < depth, "param_groups_layer_decay: parameter '", name, "' is in block ", k,
          " but depth is ", depth);
    return k + 1;
  }
  // timm merges the final norm into the last block's group (MATCH_PREV_GROUP).
  if (starts_with(name, "norm.") || starts_with(name, "fc_norm.")) return depth;
  return depth + 1;
}

std::vector<ParamGroup> param_groups_layer_decay(const ParameterList& params, double weight_decay,
                                                 double layer_decay, int64_t depth) {
  check_weight_decay("param_groups_layer_decay", weight_decay);
  check(std::isfinite(layer_decay) && layer_decay > 0, "param_groups_layer_decay: layer_decay ",
        "must be a finite number > 0, got ", layer_decay);
  check(depth >= 0, "param_groups_layer_decay: depth must be >= 0, got ", depth);
  std::vector<ParamGroup> groups;
  for (const Parameter& p : params) {
    if (!p.tensor.requires_grad()) continue;
    const int64_t id = layer_id_for_name(p.name, depth);
    const std::string name =
        "layer_" + std::to_string(id) + (p.no_weight_decay ? "_no_decay" : "_decay");
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const ParamGroup& g) { return g.name == name; });
    if (it == groups.end()) {
      ParamGroup& g = groups.emplace_back();
      g.name = name;
      g.weight_decay = p.no_weight_decay ? 0.0 : weight_decay;
      g.lr_scale = std::pow(layer_decay, static_cast<double>(depth + 1 - id));
      it = groups.end() - 1;
    }
    it->params.push_back(p);
  }
  return groups;
}

}  // namespace vg::optim
