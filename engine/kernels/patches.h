// Channels-last images (B, H, W, C) and their flattened p x p patches (B, rows * cols,
// C * p * p), rows = H / p, cols = W / p; inside a patch the order is (c, i, j), as a
// convolution's weight is laid out. Every element has exactly one place in each layout.
#pragma once

#include <cstdint>

namespace vg::kernels {

struct PatchGeometry {
  int64_t batch, height, width, channels, p;
  int64_t rows() const { return height / p; }
  int64_t cols() const { return width / p; }
  int64_t patch_len() const { return channels * p * p; }
};

// patches = the image cut into patches (patchify's forward).
template <class T>
void image_to_patches(const PatchGeometry& g, const T* image, T* patches);

// image = the patches put back in place (patchify's backward).
template <class T>
void patches_to_image(const PatchGeometry& g, const T* patches, T* image);

// image_to_patches as plain nested loops over the image: the same result.
template <class T>
void image_to_patches_reference(const PatchGeometry& g, const T* image, T* patches);

}  // namespace vg::kernels
