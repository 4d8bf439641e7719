// patchify: cuts channels-last images into flattened patches. Every input element lands in
// exactly one output element, so the backward is the inverse gather (no sums).
#include "engine/autograd/autograd.h"
#include "engine/kernels/patches.h"
#include "engine/ops/ops.h"

namespace vg {

Tensor patchify(const Tensor& images, int64_t p) {
  check(images.defined() && images.dim() == 4, "patchify: images must be (B, H, W, C), got ",
        images.defined() ? shape_str(images.shape()) : "undefined");
  const Shape& s = images.shape();
  check(p > 0 && s[1] % p == 0 && s[2] % p == 0, "patchify: image size ", s[1], "x", s[2],
        " is not divisible by the patch size ", p, " (images ", s, ")");
  const kernels::PatchGeometry g{s[0], s[1], s[2], s[3], p};
  Tensor out = Tensor::empty({g.batch, g.rows() * g.cols(), g.patch_len()}, images.dtype());
  dispatch(images.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::image_to_patches(g, images.data<T>(), out.data<T>());
  });
  return record("patchify", out, {images}, [g, s](const Tensor& grad) {
    Tensor gx = Tensor::empty(s, grad.dtype());
    dispatch(grad.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::patches_to_image(g, grad.data<T>(), gx.data<T>());
    });
    return std::vector<Tensor>{gx};
  });
}

}  // namespace vg
