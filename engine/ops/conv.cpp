// conv2d: a 2-D convolution of channels-last images, written as im2col and one matrix product
// (engine/kernels/im2col.h). With the columns X (rows, k*k*C), one row per output position,
// and the weight [C_out, C, k, k] permuted to [C_out, k, k, C] and viewed as W (C_out, k*k*C),
// the columns' (i, j, c) order:
//
//   forward    Y  = X W^T + b                     one gemm, the bias where each sum starts
//   backward   dX = dY W,  dx = col2im(dX)        one gemm, then every column entry added
//                                                 back to the pixel it was read from, one
//                                                 image at a time
//              dW = dY^T X                        one gemm over all positions, permuted
//                                                 back to [C_out, C, k, k]
//              db = sum over positions of dY
//
// The products are linear's (ops/matmul.cpp), so --amp bf16 switches them as it does every
// other product. Saved for backward: the columns (for dW) and the weight (for dx), each only
// where the other needs a gradient. Where the products make an operand a block of rows at a
// time (kernels/made_rows.h: the engine's float tiles, or bf16 products), X is never stored: the
// forward and dW make its rows from the image as they read them, and the image is saved
// instead, the same bits either way.
#include <climits>

#include "engine/autograd/autograd.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/im2col.h"
#include "engine/ops/linear_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

// The shortest rows of X that the products make on demand instead of keeping (see conv2d).
constexpr int64_t kMadeRowLen = 64;

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

// Checks the operands before anything is allocated; the message names every shape.
kernels::ConvGeometry plan_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  int64_t stride, int64_t padding) {
  check(x.defined() && weight.defined(), "conv2d: undefined input or weight");
  const bool has_bias = bias.defined();
  const std::string operands =
      cat_str("x ", shape_str(x.shape()), ", weight ", shape_str(weight.shape()), ", bias ",
              has_bias ? shape_str(bias.shape()) : std::string("none"), ", stride ", stride,
              ", padding ", padding);
  check(x.dim() == 4, "conv2d: x must be (N, H, W, C_in) (", operands, ")");
  check(weight.dim() == 4 && weight.size(2) == weight.size(3) && weight.size(2) > 0,
        "conv2d: weight must be (C_out, C_in, k, k) (", operands, ")");
  const int64_t k = weight.size(2);
  check(weight.size(1) == x.size(3), "conv2d: x has ", x.size(3), " channels, the weight expects ",
        weight.size(1), " (", operands, ")");
  check(!has_bias || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
        "conv2d: bias must be (C_out)=[", weight.size(0), "] (", operands, ")");
  check(x.dtype() == weight.dtype() && (!has_bias || bias.dtype() == x.dtype()),
        "conv2d: x, weight and bias must share a dtype (", operands, ")");
  check(stride >= 1 && padding >= 0, "conv2d: stride must be >= 1 and padding >= 0 (", operands,
        ")");
  check(x.size(1) + 2 * padding >= k && x.size(2) + 2 * padding >= k, "conv2d: the ", k, "x", k,
        " kernel is larger than the padded ", x.size(1) + 2 * padding, "x", x.size(2) + 2 * padding,
        " image (", operands, ")");
  const kernels::ConvGeometry g{x.size(0), x.size(1), x.size(2), x.size(3), k, stride, padding};
  check(g.rows() < INT_MAX && g.row_len() < INT_MAX && weight.size(0) < INT_MAX,
        "conv2d: sizes exceed the BLAS int range (", operands, ")");
  return g;
}

Tensor image_to_columns(const kernels::ConvGeometry& g, const Tensor& x) {
  Tensor columns = Tensor::empty({g.rows(), g.row_len()}, x.dtype());
  dispatch(x.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::im2col(g, x.data<T>(), columns.data<T>());
  });
  return columns;
}

// The columns of a float image as rows made on demand. The image must outlive them.
MadeRows columns_of(const kernels::ConvGeometry& g, const Tensor& image) {
  const float* pixels = image.data<float>();
  return {g.rows(), g.row_len(),
          [g, pixels](int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out) {
            kernels::im2col_rows(g, pixels, r0, r1, c0, c1, out);
          }};
}

// dW = dY^T X (c_out, row_len) with X made from the image.
Tensor weight_grad_from_image(const kernels::ConvGeometry& g, const Tensor& grad_rows,
                              const Tensor& image) {
  const int64_t c_out = grad_rows.size(1);
  Tensor dw = Tensor::empty({c_out, g.row_len()}, image.dtype());
  gemm_tn_made(c_out, grad_rows.data<float>(), columns_of(g, image), dw.data<float>());
  add_flops(2.0 * double(g.rows()) * c_out * g.row_len(), /*is_matmul=*/true);
  return dw;
}

// dx = col2im(dY W), image by image (kernels::conv_input_gradient).
Tensor input_gradient(const kernels::ConvGeometry& g, const Tensor& grad_rows, const Tensor& w) {
  Tensor image = Tensor::empty({g.batch, g.height, g.width, g.channels}, grad_rows.dtype());
  dispatch(grad_rows.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::conv_input_gradient(g, w.size(0), grad_rows.data<T>(), w.data<T>(), image.data<T>());
  });
  return image;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding) {
  const kernels::ConvGeometry g = plan_conv2d(x, weight, bias, stride, padding);
  const int64_t c_out = weight.size(0);
  const Tensor w2 = permute(weight.detach(), {0, 2, 3, 1}).reshape({c_out, g.row_len()});
  // The product's rows are the output positions in (n, oy, ox) order: written straight into
  // the output's shape.
  const detail::LinearPlan plan{
      g.rows(), g.row_len(), c_out, {g.batch, g.out_height(), g.out_width(), c_out}};
  // Short rows (a grey image's 9 values, a run per tap) cost more to make twice than to keep.
  const bool made = x.dtype() == DType::f32 && g.row_len() >= kMadeRowLen &&
                    products_make_rows_for(g.rows(), g.row_len(), c_out);
  const Tensor image = made ? x.detach() : Tensor();
  Tensor columns = made ? Tensor() : image_to_columns(g, x);
  const Tensor out = made ? detail::linear_values_made(columns_of(g, image), w2, bias, plan)
                          : detail::linear_values(columns, w2, bias, plan);
  const std::vector<Tensor> inputs = detail::linear_inputs(x, weight, bias);
  if (!any_requires_grad(inputs)) return record("conv2d", out, inputs, nullptr);
  const bool need_x = needs_grad(x), need_w = needs_grad(weight), need_b = needs_grad(bias);
  if (!need_w) columns = Tensor();
  const Tensor saved_image = made && need_w ? image : Tensor();
  const Tensor ws = need_x ? w2 : Tensor();
  const int64_t k = g.kernel, c_in = g.channels;
  const size_t n_inputs = inputs.size();
  return record("conv2d", out, inputs, [=](const Tensor& grad) {
    const Tensor g2 = grad.reshape({g.rows(), c_out});
    std::vector<Tensor> grads(n_inputs);
    if (need_x) grads[0] = input_gradient(g, g2, ws);
    if (need_w) {
      const Tensor dw =
          made ? weight_grad_from_image(g, g2, saved_image) : matmul(g2, columns, true, false);
      grads[1] = permute(dw.reshape({c_out, k, k, c_in}), {0, 3, 1, 2});
    }
    if (need_b) grads[2] = sum(g2, {0});
    return grads;
  });
}

}  // namespace vg
