#include "engine/kernels/patches.h"

#include <doctest/doctest.h>

#include <vector>

using namespace vg;

// 2 images of 6 x 4 pixels, 3 channels, 2 x 2 patches; each value is its own image offset,
// so a misplaced element shows which one it is.
TEST_CASE("image_to_patches matches the plain loop, and patches_to_image undoes it") {
  const kernels::PatchGeometry g{2, 6, 4, 3, 2};
  const int64_t n = g.batch * g.height * g.width * g.channels;
  std::vector<float> image(n), patches(n), patches_ref(n), back(n);
  for (int64_t i = 0; i < n; ++i) image[i] = float(i);
  kernels::image_to_patches(g, image.data(), patches.data());
  kernels::image_to_patches_reference(g, image.data(), patches_ref.data());
  CHECK(patches == patches_ref);
  // The first patch's first row of channel 0: pixels (0,0) and (0,1), channel 0.
  CHECK(patches[0] == 0);
  CHECK(patches[1] == 3);
  kernels::patches_to_image(g, patches.data(), back.data());
  CHECK(back == image);
}
