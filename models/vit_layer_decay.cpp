#include "models/vit_layer_decay.h"

#include "engine/core/error.h"

namespace vg {

int64_t vit_layer_id(const std::string& name, int64_t depth) {
  for (const char* stem : {"cls_token", "reg_token", "pos_embed", "stem.", "patch_embed"})
    if (name.starts_with(stem)) return 0;
  if (name.starts_with("blocks.")) {
    const size_t begin = 7, end = name.find('.', begin);
    const std::string index = name.substr(begin, end == std::string::npos ? end : end - begin);
    check(!index.empty() && index.size() < 10 &&
              index.find_first_not_of("0123456789") == std::string::npos,
          "vit_layer_id: cannot read a block index from '", name, "'");
    const int64_t k = std::stoll(index);
    check(k < depth, "vit_layer_id: parameter '", name, "' is in block ", k, " but depth is ",
          depth);
    return k + 1;
  }
  // timm merges the final norm into the last block's group (MATCH_PREV_GROUP).
  if (name.starts_with("norm.") || name.starts_with("fc_norm.")) return depth;
  return depth + 1;
}

std::vector<optim::ParamGroup> vit_param_groups_layer_decay(const ParameterList& params,
                                                            double weight_decay, double layer_decay,
                                                            int64_t depth) {
  check(depth >= 0, "vit_param_groups_layer_decay: depth must be >= 0, got ", depth);
  return optim::param_groups_layer_decay(
      params, weight_decay, layer_decay, depth + 2,
      [depth](const std::string& name) { return vit_layer_id(name, depth); });
}

}  // namespace vg
