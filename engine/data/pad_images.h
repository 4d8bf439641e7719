// Images padded to a larger square side, so that a model whose patch does not divide the
// data's side (patch 16 on Fashion-MNIST's 28), or whose images are square where the data's
// are not, can still read them.
#pragma once

#include <cstdint>

#include "engine/data/dataset.h"

namespace vg::data {

// A copy of `data` whose (H, W) images sit in the middle of side x side images filled with
// black (Normalisation::black); the extra row or column of an odd margin goes last.
TensorDataset pad_images(const Dataset& data, int64_t side);

}  // namespace vg::data
