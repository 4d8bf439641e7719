// Shared helpers of the model tests: small configurations and access to submodules by path.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "models/vit.h"

namespace vg::testing {

// A ViT small enough for float64 gradient checks: 28x28x1 images cut into 7x7 patches
// (16 tokens + cls), dim 16, 2 heads, MLP ratio 2, 10 classes.
inline ViTConfig small_config(int64_t depth = 2) {
  ViTConfig c;
  c.img_size = 28;
  c.patch_size = 7;
  c.embed_dim = 16;
  c.depth = depth;
  c.num_heads = 2;
  c.mlp_ratio = 2.0;
  return c;
}

// The submodule at a dotted path ("blocks.1.mlp"); fails the test when there is none.
template <class M = nn::Module>
M& submodule(nn::Module& model, const std::string& path) {
  for (auto& [name, module] : model.named_modules())
    if (name == path) {
      M* typed = dynamic_cast<M*>(module);
      REQUIRE_MESSAGE(typed != nullptr, path, " is a ", module->type_name());
      return *typed;
    }
  FAIL("no submodule ", path);
  throw Error("unreachable");
}

}  // namespace vg::testing
