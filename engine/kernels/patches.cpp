#include "engine/kernels/patches.h"

#include "engine/core/parallel.h"

namespace vg::kernels {
namespace {

// Visits every element patch by patch (threads split the patches) and moves it one way.
template <class T>
void move_patches(const PatchGeometry& g, const T* src, T* dst, bool to_patches) {
  const int64_t n = g.rows() * g.cols(), len = g.patch_len(), cols = g.cols();
  parallel_for(g.batch * n, 16, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t b = k / n, ph = (k % n) / cols, pw = k % cols;
      const int64_t patch_base = k * len;
      for (int64_t i = 0; i < g.p; ++i)
        for (int64_t j = 0; j < g.p; ++j) {
          const int64_t image_base =
              ((b * g.height + ph * g.p + i) * g.width + pw * g.p + j) * g.channels;
          for (int64_t c = 0; c < g.channels; ++c) {
            const int64_t patch_at = patch_base + (c * g.p + i) * g.p + j;
            if (to_patches)
              dst[patch_at] = src[image_base + c];
            else
              dst[image_base + c] = src[patch_at];
          }
        }
    }
  });
}

}  // namespace

template <class T>
void image_to_patches(const PatchGeometry& g, const T* image, T* patches) {
  move_patches(g, image, patches, true);
}

template <class T>
void patches_to_image(const PatchGeometry& g, const T* patches, T* image) {
  move_patches(g, patches, image, false);
}

template <class T>
void image_to_patches_reference(const PatchGeometry& g, const T* image, T* patches) {
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t y = 0; y < g.height; ++y)
      for (int64_t x = 0; x < g.width; ++x)
        for (int64_t c = 0; c < g.channels; ++c) {
          const int64_t patch = b * g.rows() * g.cols() + (y / g.p) * g.cols() + x / g.p;
          const int64_t within = (c * g.p + y % g.p) * g.p + x % g.p;
          patches[patch * g.patch_len() + within] =
              image[((b * g.height + y) * g.width + x) * g.channels + c];
        }
}

#define VG_PATCHES(T)                                                 \
  template void image_to_patches(const PatchGeometry&, const T*, T*); \
  template void patches_to_image(const PatchGeometry&, const T*, T*); \
  template void image_to_patches_reference(const PatchGeometry&, const T*, T*);
VG_PATCHES(float)
VG_PATCHES(double)
#undef VG_PATCHES

}  // namespace vg::kernels
