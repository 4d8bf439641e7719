#include "engine/kernels/im2col.h"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/matmul_precision.h"

using namespace vg;

namespace {

// Distinct values, so a misplaced element shows which one it is; negative ones too, so that
// col2im's sums are not exact in float and the order of the additions shows.
std::vector<float> ramp(int64_t n, float step) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = step * float(i % 97) - 1.3f;
  return v;
}

// The geometries the tests cover: the stem's 3x3 stride 2 with padding on odd and
// rectangular images, overlapping taps (stride 1), a kernel larger than the stride, and a
// 1x1 kernel; batches large enough to split among threads. Channels from 1 to 9: a kernel row
// inside the image is one run of k * C values, copied element by element when it is short and
// with one call when it is long, and a tap at an edge is a run of its own.
std::vector<kernels::ConvGeometry> geometries() {
  return {{5, 7, 6, 3, 3, 2, 1}, {3, 6, 7, 9, 3, 1, 1}, {3, 8, 8, 1, 3, 1, 1},
          {4, 5, 5, 2, 3, 1, 1}, {3, 9, 8, 2, 5, 3, 2}, {6, 4, 4, 4, 1, 1, 0},
          {2, 6, 5, 1, 3, 2, 0}};
}

}  // namespace

TEST_CASE("im2col and col2im match the plain loops, bit for bit") {
  for (const kernels::ConvGeometry& g : geometries()) {
    INFO("N ", g.batch, " H ", g.height, " W ", g.width, " C ", g.channels, " k ", g.kernel, " s ",
         g.stride, " p ", g.padding);
    const int64_t image_len = g.batch * g.height * g.width * g.channels;
    const std::vector<float> image = ramp(image_len, 0.37f);
    std::vector<float> cols(g.rows() * g.row_len()), cols_ref(cols.size(), -7.0f);
    kernels::im2col(g, image.data(), cols.data());
    kernels::im2col_reference(g, image.data(), cols_ref.data());
    CHECK(cols == cols_ref);

    const std::vector<float> grad = ramp(g.rows() * g.row_len(), 0.113f);
    std::vector<float> back(image_len, 5.0f), back_ref(image_len, -5.0f);  // overwritten
    kernels::col2im(g, grad.data(), back.data());
    kernels::col2im_reference(g, grad.data(), back_ref.data());
    CHECK(back == back_ref);
  }
}

TEST_CASE("im2col reads zeros in the padding and lays a row out in (i, j, c) order") {
  // One 3x3 image of 2 channels, value = 10 * pixel + channel; kernel 3, stride 2, padding 1:
  // a 2x2 output. Row 0 is centred on pixel (0, 0), so its first row and column are padding.
  const kernels::ConvGeometry g{1, 3, 3, 2, 3, 2, 1};
  std::vector<float> image(18);
  for (int p = 0; p < 9; ++p)
    for (int c = 0; c < 2; ++c) image[p * 2 + c] = float(10 * p + c);
  std::vector<float> cols(g.rows() * g.row_len());
  REQUIRE(g.rows() == 4);
  kernels::im2col(g, image.data(), cols.data());
  const std::vector<float> row0(cols.begin(), cols.begin() + 18);
  // Tap by tap (i, j), each tap both channels of its pixel.
  CHECK(row0 == std::vector<float>{0, 0, 0, 0, 0, 0,    // taps (0, 0) (0, 1) (0, 2)
                                   0, 0, 0, 1, 10, 11,  // taps (1, 0) (1, 1) (1, 2)
                                   0, 0, 30, 31, 40, 41});
  // Row 3 is centred on pixel (2, 2): its last row and column are padding.
  const std::vector<float> row3(cols.begin() + 54, cols.end());
  CHECK(row3 == std::vector<float>{40, 41, 50, 51, 0, 0,  // taps (0, 0) (0, 1) (0, 2)
                                   70, 71, 80, 81, 0, 0,  // taps (1, 0) (1, 1) (1, 2)
                                   0, 0, 0, 0, 0, 0});
  // col2im of all-ones columns counts how many taps read each pixel.
  std::vector<float> ones(cols.size(), 1.0f), count(18);
  kernels::col2im(g, ones.data(), count.data());
  for (int c = 0; c < 2; ++c)
    CHECK(std::vector<float>{count[0 + c], count[2 + c], count[4 + c], count[8 + c]} ==
          std::vector<float>{1, 2, 1, 4});  // pixels (0,0) (0,1) (0,2) (1,1)
}

TEST_CASE("im2col and col2im give the same bits with 1 and 2 threads") {
  const int previous = num_threads();
  const kernels::ConvGeometry g{16, 14, 14, 8, 3, 2, 1};
  const std::vector<float> image = ramp(g.batch * g.height * g.width * g.channels, 0.21f);
  const std::vector<float> grad = ramp(g.rows() * g.row_len(), 0.057f);
  auto run = [&](int threads) {
    set_num_threads(threads);
    std::vector<float> cols(g.rows() * g.row_len()), back(image.size());
    kernels::im2col(g, image.data(), cols.data());
    kernels::col2im(g, grad.data(), back.data());
    return std::pair{cols, back};
  };
  const auto one = run(1), two = run(2);
  CHECK(one.first == two.first);
  CHECK(one.second == two.second);
  set_num_threads(previous);
}

TEST_CASE("conv_input_gradient is the product of all rows then col2im, bit for bit") {
  // Image by image, each image's rows of dY W are the same sums as in one product over every
  // row, so summing them back must give the same bits, in both product precisions.
  std::vector<MatmulPrecision> precisions{MatmulPrecision::fp32};
  if (bf16_hardware() != Bf16Hardware::none) precisions.push_back(MatmulPrecision::bf16);
  for (const MatmulPrecision precision : precisions) {
    const MatmulPrecisionGuard guard(precision);
    for (const kernels::ConvGeometry& g : geometries()) {
      INFO(matmul_precision_name(precision), " N ", g.batch, " H ", g.height, " C ", g.channels,
           " k ", g.kernel, " s ", g.stride);
      const int64_t c_out = 5, len = g.row_len();
      const std::vector<float> grad = ramp(g.rows() * c_out, 0.071f);
      const std::vector<float> weight = ramp(c_out * len, 0.029f);
      std::vector<float> columns(g.rows() * len);
      gemm(false, false, g.rows(), len, c_out, 1.0f, grad.data(), c_out, weight.data(), len, 0.0f,
           columns.data(), len);
      const int64_t image_len = g.batch * g.height * g.width * g.channels;
      std::vector<float> expected(image_len), image(image_len, 3.0f);  // overwritten
      kernels::col2im(g, columns.data(), expected.data());
      kernels::conv_input_gradient(g, c_out, grad.data(), weight.data(), image.data());
      CHECK(image == expected);
    }
  }
}

TEST_CASE("im2col_rows makes any block of rows and columns of the columns, bit for bit") {
  // The blocks a product asks for: whole rows, one tap's channels, ranges that cut a run
  // (a kernel row, or a tap at an edge) anywhere, and a single column.
  for (const kernels::ConvGeometry& g : geometries()) {
    INFO("N ", g.batch, " H ", g.height, " C ", g.channels, " k ", g.kernel, " s ", g.stride);
    const std::vector<float> image = ramp(g.batch * g.height * g.width * g.channels, 0.37f);
    const int64_t len = g.row_len(), rows = g.rows();
    std::vector<float> cols(rows * len);
    kernels::im2col_reference(g, image.data(), cols.data());
    const int64_t r0 = rows / 3, r1 = rows - 1;
    for (const auto& [c0, c1] : std::vector<std::pair<int64_t, int64_t>>{
             {0, len}, {0, g.channels}, {1, len - 1}, {len / 2, len}, {len - 1, len}}) {
      if (c0 >= c1) continue;
      INFO("rows ", r0, "..", r1, " columns ", c0, "..", c1);
      std::vector<float> block((r1 - r0) * (c1 - c0), -9.0f), expected;
      kernels::im2col_rows(g, image.data(), r0, r1, c0, c1, block.data());
      for (int64_t r = r0; r < r1; ++r)
        expected.insert(expected.end(), cols.begin() + r * len + c0, cols.begin() + r * len + c1);
      CHECK(block == expected);
    }
  }
}
