// The autograd graph as Graphviz DOT, for teaching and debugging: one node per recorded op
// (labelled with the op, the module path that ran it and the output shape) and one per leaf
// that requires grad (its name and shape). Render with `dot -Tsvg graph.dot -o graph.svg`.
#pragma once

#include <string>

#include "engine/core/tensor.h"

namespace vg {

// The graph that backward() would walk from `root`; `root` must have been made by an op.
std::string graph_to_dot(const Tensor& root);

}  // namespace vg
