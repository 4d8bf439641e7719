// The flags that set a training recipe, shared by `vitgrad train` and `vitgrad ablate`:
// data, budget, optimiser, schedule, losses and seed.
#pragma once

#include <vector>

#include "models/training.h"
#include "tools/args.h"

namespace vg::tools {

std::vector<Flag> recipe_flags();
// The training options that the flags then override: a --config file's train section (the
// run it came from, repeated), or those its --preset implies (training_defaults).
TrainOptions recipe_defaults(const ArgParser& args);
// Reads the recipe flags over `o` (whose values are the defaults); misuse is a UsageError.
void recipe_from_flags(const ArgParser& args, TrainOptions& o);

}  // namespace vg::tools
