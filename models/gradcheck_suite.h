// The gradient checks behind `vitgrad gradcheck`: every differentiable op of the engine
// (with its broadcast variants) and every layer and model piece, in float64. The test suite
// runs this same list, so the command can never check less than the tests do.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/gradcheck.h"

namespace vg {

struct GradcheckCase {
  // "family" or "family:variant": "add:row", "Block:layerscale+grn", "ViT:token". The
  // family is the op or layer; `vitgrad gradcheck --only add` runs every add case.
  std::string name;
  std::function<GradcheckResult()> run;  // builds its inputs from fixed seeds, then checks
};

// Every op in engine/ops/ops.h, broadcast variants included.
std::vector<GradcheckCase> op_gradcheck_cases();
// Every layer, the blocks with each option, and small ViTs end to end with cross-entropy.
std::vector<GradcheckCase> module_gradcheck_cases();
// Ops first, then modules.
std::vector<GradcheckCase> gradcheck_cases();

// "add:row" -> "add".
std::string gradcheck_family(const std::string& name);

}  // namespace vg
