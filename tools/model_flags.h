// The flags that pick a model, shared by train, summary, bench and graph:
// --preset NAME | --config FILE | --model NAME (timm's names), then --img-size --depth --dim --heads --patch --mlp-ratio --norm
// --layerscale --grn --pool --drop-path --dropout --stem override single fields.
#pragma once

#include <vector>

#include "engine/data/dataset.h"
#include "models/vit_config.h"
#include "tools/args.h"

namespace vg::tools {

std::vector<Flag> model_flags();
// timm's other names for model flags (--drop for --dropout).
void model_aliases(ArgParser& args);
// The configuration the flags describe (the fmnist-tiny preset when none is named),
// validated; misuse is a UsageError. With `data`, a model not read from --config takes its
// in_chans, num_classes and, unless --img-size or a --model name gives it, img_size from it.
ViTConfig model_from_flags(const ArgParser& args, const data::DataShape* data = nullptr);

}  // namespace vg::tools
