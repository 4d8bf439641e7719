// Gradient-norm clipping for the training loop, as torch.nn.utils.clip_grad_norm_ (which
// timm's --clip-grad calls). LAMB's own clip, inside Lamb::step, has no epsilon; this one does.
#pragma once

#include "engine/core/parameter.h"

namespace vg::optim {

// The L2 norm over the gradients of every parameter that has one (computed in double, the
// same bits at any thread count); 0 when none has a gradient.
double grad_norm(const ParameterList& params);

// Scales every gradient in place by coef = min(1, max_norm / (total + 1e-6)) and returns
// the total norm measured before scaling. max_norm <= 0 means measure only. A non-finite
// total leaves the gradients untouched (the caller sees it in the result and can skip the
// step), where PyTorch would spread the NaN into every gradient.
double clip_grad_norm(const ParameterList& params, double max_norm);

}  // namespace vg::optim
