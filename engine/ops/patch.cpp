// patchify: cuts channels-last images into flattened patches. Every input element lands in
// exactly one output element, so the backward is the inverse gather (no sums).
#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

struct PatchGeometry {
  int64_t batch, height, width, channels, p, rows, cols;  // rows x cols patches
  int64_t patch_len() const { return channels * p * p; }
};

// Calls move(image_offset, patch_offset) for every element; `to_patches` picks the direction.
template <class T>
void move_patches(const PatchGeometry& g, const T* src, T* dst, bool to_patches) {
  const int64_t n = g.rows * g.cols, len = g.patch_len();
  parallel_for(g.batch * n, 16, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t b = k / n, ph = (k % n) / g.cols, pw = k % g.cols;
      const int64_t patch_base = k * len;
      for (int64_t i = 0; i < g.p; ++i)
        for (int64_t j = 0; j < g.p; ++j) {
          const int64_t image_base =
              ((b * g.height + ph * g.p + i) * g.width + pw * g.p + j) * g.channels;
          for (int64_t c = 0; c < g.channels; ++c) {
            const int64_t patch_at = patch_base + (c * g.p + i) * g.p + j;
            if (to_patches) dst[patch_at] = src[image_base + c];
            else dst[image_base + c] = src[patch_at];
          }
        }
    }
  });
}

}  // namespace

Tensor patchify(const Tensor& images, int64_t p) {
  check(images.defined() && images.dim() == 4, "patchify: images must be (B, H, W, C), got ",
        images.defined() ? shape_str(images.shape()) : "undefined");
  const Shape& s = images.shape();
  check(p > 0 && s[1] % p == 0 && s[2] % p == 0, "patchify: image size ", s[1], "x", s[2],
        " is not divisible by the patch size ", p, " (images ", shape_str(s), ")");
  const PatchGeometry g{s[0], s[1], s[2], s[3], p, s[1] / p, s[2] / p};
  Tensor out = Tensor::empty({g.batch, g.rows * g.cols, g.patch_len()}, images.dtype());
  dispatch(images.dtype(), [&](auto z) {
    using T = decltype(z);
    move_patches<T>(g, images.data<T>(), out.data<T>(), true);
  });
  return record("patchify", out, {images}, [g, s](const Tensor& grad) {
    Tensor gx = Tensor::empty(s, grad.dtype());
    dispatch(grad.dtype(), [&](auto z) {
      using T = decltype(z);
      move_patches<T>(g, grad.data<T>(), gx.data<T>(), false);
    });
    return std::vector<Tensor>{gx};
  });
}

}  // namespace vg
