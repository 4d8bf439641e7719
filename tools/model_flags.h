// The flags that pick a model, shared by train, summary, bench and graph:
// --preset NAME | --config FILE | --model NAME (timm's names), then --img-size --depth --dim --heads --patch --mlp-ratio --norm
// --layerscale --grn --pool --drop-path --dropout --stem override single fields.
#pragma once

#include <vector>

#include "models/vit_config.h"
#include "tools/args.h"

namespace vg::tools {

std::vector<Flag> model_flags();
// timm's other names for model flags (--drop for --dropout).
void model_aliases(ArgParser& args);
// The configuration the flags describe (the fmnist-tiny preset when none is named),
// validated; misuse is a UsageError.
ViTConfig model_from_flags(const ArgParser& args);

}  // namespace vg::tools
