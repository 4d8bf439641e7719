// The flags that set a training recipe, shared by `vitgrad train` and `vitgrad ablate`:
// data, budget, optimiser, schedule, losses and seed; and --threads, which every command
// that trains or evaluates has.
#pragma once

#include <vector>

#include "models/training.h"
#include "tools/args.h"

namespace vg::tools {

std::vector<Flag> recipe_flags();
// timm's and the LearnableScaler reference's names for recipe flags (--batch-size, --smoothing,
// --epoch-factor, ...), so that their training commands run as written.
void recipe_aliases(ArgParser& args);
// The training options that the flags then override: a --config file's train section (the
// run it came from, repeated), or those its --preset implies (training_defaults).
TrainOptions recipe_defaults(const ArgParser& args);
// Reads the recipe flags over `o` (whose values are the defaults); misuse is a UsageError.
void recipe_from_flags(const ArgParser& args, TrainOptions& o);

// --threads N (1 to 256) sets the engine's threads. More threads than the cores this process
// may run on give the same results, only slower (they take turns): one warning line.
void threads_from_flags(const ArgParser& args);

}  // namespace vg::tools
