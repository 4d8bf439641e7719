// NumPy broadcasting's shape rule for binary ops (internal to engine/ops); the loops that
// walk broadcast operands are in kernels/broadcast_runs.h and kernels/elementwise_apply.h.
#pragma once

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace vg {

// The shape both operands broadcast to, or a vg::Error naming the op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace vg
