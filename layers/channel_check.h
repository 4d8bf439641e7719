// The shape checks that every channel-wise layer runs first, so a wrong input is a readable
// vg::Error naming the layer and the shape, never a crash or a silent broadcast:
//   "LayerScale(dim=768): input last axis is 512, expected 768 (input shape [2,196,512])"
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace vg::nn {

// Throws unless input_shape[axis] == expected; `layer` names the layer in the message
// ("LayerScale(dim=768)"), best as a function that returns the name: a layer's checks run on
// every forward call, and the name is then made only when one fails. A negative axis counts
// from the end (-1: the last axis).
template <class LayerName>
void check_channels(const LayerName& layer, const Shape& input_shape, int64_t axis,
                    int64_t expected) {
  const int64_t rank = static_cast<int64_t>(input_shape.size());
  const int64_t k = axis < 0 ? axis + rank : axis;
  check(k >= 0 && k < rank, layer, ": input has no channel axis ", axis, " (input shape ",
        input_shape, ")");
  const auto which = [axis] { return axis == -1 ? "last axis" : "axis " + std::to_string(axis); };
  check(input_shape[k] == expected, layer, ": input ", which, " is ", input_shape[k], ", expected ",
        expected, " (input shape ", input_shape, ")");
}

}  // namespace vg::nn
