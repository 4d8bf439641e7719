// Matrix products on engine/kernels/blas.h: matmul (batched, broadcast, transposed operands
// read in place) and linear (x W^T + b, PyTorch's weight layout). The fused forms of linear
// are in ops/fused_linear.cpp.
//
// Both backward passes are themselves matmul calls with trans flags, so no transposed copy
// is ever made, and each product costs exactly one gemm per batch element.
//
// Threads: a batch of small products runs in parallel, one task per range of products, each
// product on its task's thread; a big product is split over the threads by gemm() itself
// (engine/kernels/blas.h). Either way a product is the same sequence of calls, so the bits do not
// depend on the thread count.
#include <algorithm>
#include <climits>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/kernels/add_arrays.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/channel_affine_rows.h"
#include "engine/kernels/residual_rows.h"
#include "engine/ops/linear_parts.h"
#include "engine/ops/norm_parts.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

// Below this m*n*k per product, a batch is split into tasks of whole products.
constexpr double kSmallProduct = 65536.0 * 4;

bool needs_grad(const Tensor& t) {
  return t.defined() && (t.requires_grad() || t.grad_fn());
}

// The shapes of one matmul call: op(a) is (M, K), op(b) is (K, N), over `batch` (the
// broadcast leading axes). a_index / b_index give, per output batch element, which matrix
// of a / b it reads (a broadcast operand is read in place, never copied).
struct MatmulPlan {
  int64_t M = 0, N = 0, K = 0;
  Shape batch, out_shape;
  std::vector<int64_t> a_index, b_index;
  bool folded = false;  // b is one matrix and a is not transposed: one gemm over all rows
};

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check(a.defined() && b.defined(), "matmul: undefined operand");
  auto operands = [&] {
    return cat_str("a ", shape_str(a.shape()), ", b ", shape_str(b.shape()),
                   ", trans_a=", ta ? "true" : "false", ", trans_b=", tb ? "true" : "false");
  };
  check(a.dim() >= 2 && b.dim() >= 2, "matmul: both operands need rank >= 2 (", operands, ")");
  check(a.dtype() == b.dtype(), "matmul: operands have dtypes ", dtype_name(a.dtype()), " and ",
        dtype_name(b.dtype()), " (", operands, "); convert one with .to()");
  MatmulPlan p;
  p.M = ta ? a.size(-1) : a.size(-2);
  const int64_t Ka = ta ? a.size(-2) : a.size(-1);
  const int64_t Kb = tb ? b.size(-1) : b.size(-2);
  p.N = tb ? b.size(-2) : b.size(-1);
  check(Ka == Kb, "matmul: inner sizes differ: ", operands, ", K=", Ka, " in a and K=", Kb,
        " in b");
  p.K = Ka;
  for (int64_t d : {a.size(-2), a.size(-1), b.size(-2), b.size(-1)})
    check(d < INT_MAX, "matmul: a matrix axis of ", d, " exceeds the BLAS int range (", operands,
          ")");

  // Broadcast the batch axes, aligned from the right; stride 0 where an operand repeats.
  const Shape ab(a.shape().begin(), a.shape().end() - 2),
      bb(b.shape().begin(), b.shape().end() - 2);
  const size_t rank = std::max(ab.size(), bb.size());
  std::vector<int64_t> sa(rank, 0), sb(rank, 0);
  p.batch.assign(rank, 1);
  int64_t stride_a = 1, stride_b = 1;
  for (size_t i = rank; i-- > 0;) {
    const int64_t da = i + ab.size() >= rank ? ab[i + ab.size() - rank] : 1;
    const int64_t db = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
    check(da == db || da == 1 || db == 1, "matmul: batch axes do not broadcast (", operands, ")");
    p.batch[i] = da == 1 ? db : da;
    sa[i] = da == 1 ? 0 : stride_a;
    sb[i] = db == 1 ? 0 : stride_b;
    stride_a *= da;
    stride_b *= db;
  }
  p.out_shape = p.batch;
  p.out_shape.push_back(p.M);
  p.out_shape.push_back(p.N);
  p.folded = stride_b == 1 && !ta && stride_a * p.M < INT_MAX;
  if (p.folded) return p;
  const int64_t count = shape_numel(p.batch);
  p.a_index.resize(count);
  p.b_index.resize(count);
  for (int64_t n = 0; n < count; ++n) {
    int64_t rest = n, ia = 0, ib = 0;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % p.batch[i];
      rest /= p.batch[i];
      ia += idx * sa[i];
      ib += idx * sb[i];
    }
    p.a_index[n] = ia;
    p.b_index[n] = ib;
  }
  return p;
}

// out = op(a) op(b) as planned: one gemm over the folded rows, or one per batch element.
Tensor matmul_values(const Tensor& a, const Tensor& b, bool ta, bool tb, const MatmulPlan& p) {
  Tensor out = Tensor::empty(p.out_shape, a.dtype());
  const int64_t lda = a.size(-1), ldb = b.size(-1);
  const int64_t count = shape_numel(p.batch);
  dispatch(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* pc = out.data<T>();
    if (p.folded) {  // a as (batch*M, K) times the one matrix of b
      gemm(false, tb, count * p.M, p.N, p.K, T(1), pa, lda, pb, ldb, T(0), pc, p.N);
      return;
    }
    const int64_t a_size = a.size(-2) * a.size(-1), b_size = b.size(-2) * b.size(-1);
    auto run = [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n)
        gemm(ta, tb, p.M, p.N, p.K, T(1), pa + p.a_index[n] * a_size, lda,
             pb + p.b_index[n] * b_size, ldb, T(0), pc + n * p.M * p.N, p.N);
    };
    // A task gets enough small products (about 32k multiply-adds) to pay for its thread.
    const double work = std::max(1.0, double(p.M) * p.N * p.K);
    if (work < kSmallProduct)
      parallel_for(count, int64_t(1 + 32768 / work), run);
    else
      run(0, count);
  });
  add_flops(2.0 * double(count) * p.M * p.N * p.K, /*is_matmul=*/true);
  return out;
}

}  // namespace

// C = op(A) op(B). Saved for backward: A (for dB) and B (for dA), only where the other
// operand needs a gradient.
//   no trans:  C = A B      dA = dC B^T        dB = A^T dC
//   trans_a:   C = A^T B    dA = B dC^T        dB = A dC
//   trans_b:   C = A B^T    dA = dC B          dB = dC^T A
//   both:      C = A^T B^T  dA = B^T dC^T      dB = dC^T A^T
// Each is one matmul with trans flags. Where an operand was broadcast over the batch its
// gradient comes back in the broadcast shape and the engine sums it down; on the folded
// path (b one matrix) dB is a single gemm over all the folded rows instead.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const MatmulPlan p = plan_matmul(a, b, trans_a, trans_b);
  Tensor out = matmul_values(a, b, trans_a, trans_b, p);
  if (!any_requires_grad({a, b})) return record("matmul", out, {a, b}, nullptr);
  const bool need_a = needs_grad(a), need_b = needs_grad(b), ta = trans_a, tb = trans_b;
  const Tensor as = need_b ? a.detach() : Tensor(), bs = need_a ? b.detach() : Tensor();
  const Shape a_shape = a.shape(), b_shape = b.shape();
  const bool folded = p.folded;
  return record("matmul", out, {a, b}, [=](const Tensor& g) {
    Tensor da, db;
    if (folded) {
      // Fold a and dC to (rows, K) and (rows, N); b is viewed as its one matrix.
      const int64_t K = a_shape.back(),
                    rows = shape_numel(Shape(a_shape.begin(), a_shape.end() - 1));
      const Tensor g2 = g.reshape({rows, g.size(-1)});
      if (need_a) {
        const Tensor b2 = bs.reshape({bs.size(-2), bs.size(-1)});
        da = matmul(g2, b2, false, !tb).reshape(a_shape);
      }
      if (need_b) {
        const Tensor a2 = as.reshape({rows, K});
        db = (tb ? matmul(g2, a2, true, false) : matmul(a2, g2, true, false)).reshape(b_shape);
      }
    } else {
      if (need_a) da = ta ? matmul(bs, g, tb, true) : matmul(g, bs, false, !tb);
      if (need_b) db = tb ? matmul(g, as, true, ta) : matmul(as, g, !ta, false);
    }
    return std::vector<Tensor>{da, db};
  });
}

namespace detail {

LinearPlan plan_linear(const char* op, const char* input, const Tensor& x, const Tensor& weight,
                       const Tensor& bias) {
  check(x.defined() && weight.defined(), op, ": undefined input or weight");
  const bool has_bias = bias.defined();
  auto operands = [&] {
    return cat_str(input, " ", shape_str(x.shape()), ", weight ", shape_str(weight.shape()),
                   ", bias ", has_bias ? shape_str(bias.shape()) : std::string("none"));
  };
  check(weight.dim() == 2, op, ": weight must be (out, in) (", operands, ")");
  LinearPlan p;
  p.out_features = weight.size(0);
  p.in_features = weight.size(1);
  check(x.dim() >= 1 && x.size(-1) == p.in_features, op, ": ", input, "'s last axis is ",
        x.dim() >= 1 ? x.size(-1) : 0, ", expected in=", p.in_features, " (", operands, ")");
  check(!has_bias || (bias.dim() == 1 && bias.size(0) == p.out_features), op,
        ": bias must be (out)=[", p.out_features, "] (", operands, ")");
  check(
      x.dtype() == weight.dtype() && (!has_bias || bias.dtype() == x.dtype()), op, ": ", input,
      ", weight and bias must share a dtype (", input, " ", dtype_name(x.dtype()), ", weight ",
      dtype_name(weight.dtype()),
      [&] { return has_bias ? cat_str(", bias ", dtype_name(bias.dtype())) : std::string(); }, ")");
  p.rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  check(p.rows < INT_MAX && p.in_features < INT_MAX && p.out_features < INT_MAX, op,
        ": sizes exceed the BLAS int range (", operands, ")");
  p.out_shape = x.shape();
  p.out_shape.back() = p.out_features;
  return p;
}

bool keeps_bf16_input(const Tensor& x) {
  return products_keep_bf16() && x.dtype() == DType::f32;
}

namespace {

// What a bf16 forward's product does with each finished block of rows instead of storing it:
// `after` done to it (channel_affine's and add's values), into out.
RowsDone after_into(Tensor& out, const AfterProduct& after) {
  const int64_t n = out.size(-1);
  float* y = out.data<float>();
  const float* s = after.scale.defined() ? after.scale.data<float>() : nullptr;
  const float* residual = after.residual.defined() ? after.residual.data<float>() : nullptr;
  return [=](int64_t r0, int64_t r1, const float* rows) {
    if (residual)
      kernels::residual_scaled_block(rows, s, residual + r0 * n, y + r0 * n, r1 - r0, n);
    else
      kernels::channel_affine_block(rows, s, static_cast<const float*>(nullptr), y + r0 * n,
                                    r1 - r0, n);
  };
}

// `after` done to the product y: by the product (`by_product`, its FLOPs counted here), or in
// passes of their own. A float residual goes in with the scale in one pass over y, in place
// (after_into's kernel, with channel_affine's and add's bits), and not as an `add` op: one
// tensor less, and `bench --profile` charges the product to the fused op that made it.
Tensor finished(const Tensor& y, const AfterProduct& after, bool by_product) {
  if (by_product) {
    add_flops(double(y.numel()) * (after.scale.defined() + after.residual.defined()));
    return y;
  }
  if (after.residual.defined() && y.dtype() == DType::f32) {
    Tensor out = y;
    const RowsDone in_place = after_into(out, after);
    const int64_t n = y.size(-1), rows = y.numel() / std::max<int64_t>(n, 1);
    const float* values = y.data<float>();
    parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)),
                 [&](int64_t r0, int64_t r1) { in_place(r0, r1, values + r0 * n); });
    add_flops(double(y.numel()) * (after.scale.defined() + 1));
    return out;
  }
  Tensor scaled = after.scale.defined() ? channel_affine_values(y, after.scale, Tensor()) : y;
  if (!after.residual.defined()) return scaled;
  dispatch(scaled.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::add_arrays(after.residual.data<T>(), scaled.data<T>(), scaled.data<T>(),
                        scaled.numel());
  });
  add_flops(double(scaled.numel()));
  return scaled;
}

}  // namespace

// y = x W^T + b as planned, with its FLOPs.
Tensor linear_values(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearPlan& p,
                     Bf16Rows* kept_input, const AfterProduct& after) {
  const bool has_bias = bias.defined();
  const int64_t rows = p.rows, in_features = p.in_features, out_features = p.out_features;
  Tensor out = Tensor::empty(p.out_shape, x.dtype());
  const bool by_product = kept_input && after.any();
  if (kept_input) {
    check(keeps_bf16_input(x), "linear: a bf16 copy of x kept outside bf16 mode");
    const RowsDone after_rows = by_product ? after_into(out, after) : RowsDone();
    gemm_bias_keeping_a(rows, out_features, in_features, x.data<float>(), weight.data<float>(),
                        has_bias ? bias.data<float>() : nullptr, out.data<float>(), *kept_input,
                        by_product ? &after_rows : nullptr);
  } else {
    dispatch(x.dtype(), [&](auto z) {
      using T = decltype(z);
      gemm_bias(rows, out_features, in_features, x.data<T>(), weight.data<T>(),
                has_bias ? bias.data<T>() : nullptr, out.data<T>());
    });
  }
  add_flops(2.0 * double(rows) * in_features * out_features, /*is_matmul=*/true);
  if (has_bias) add_flops(double(rows) * out_features);
  return finished(out, after, by_product);
}

namespace {

// A float forward y = x W^T + b (and `after`) into a new output, with its FLOPs, for an x that
// is not a float tensor: product(out, bias or null, after_rows or null) runs the product.
template <class Product>
Tensor linear_values_of(const Tensor& weight, const Tensor& bias, const LinearPlan& p,
                        const AfterProduct& after, Product product) {
  Tensor out = Tensor::empty(p.out_shape, weight.dtype());
  const bool by_product = after.any() && products_make_rows();
  const RowsDone after_rows = by_product ? after_into(out, after) : RowsDone();
  product(out.data<float>(), bias.defined() ? bias.data<float>() : nullptr,
          by_product ? &after_rows : nullptr);
  add_flops(2.0 * double(p.rows) * p.in_features * p.out_features, /*is_matmul=*/true);
  if (bias.defined()) add_flops(double(p.rows) * p.out_features);
  return finished(out, after, by_product);
}

}  // namespace

Tensor linear_values_made(const MadeRows& x, const Tensor& weight, const Tensor& bias,
                          const LinearPlan& p, const AfterProduct& after) {
  return linear_values_of(weight, bias, p, after,
                          [&](float* out, const float* b, const RowsDone* after_rows) {
                            gemm_bias_made(x, p.out_features, weight.data<float>(), b, out,
                                           after_rows);
                          });
}

Tensor linear_values_rounded(const Bf16Rows& x, const Tensor& weight, const Tensor& bias,
                             const LinearPlan& p, const AfterProduct& after) {
  return linear_values_of(weight, bias, p, after,
                          [&](float* out, const float* b, const RowsDone* after_rows) {
                            gemm_bias_rounded(x, p.out_features, weight.data<float>(), b, out,
                                              after_rows);
                          });
}

namespace {

// dy^T a (out, in) and sum(dy, {0}) into `col`, both made by `fill(product, col)`, with their
// FLOPs: the weight gradient of either kind of kept input.
template <class Fill>
Tensor product_and_column_sums(const Tensor& dy, int64_t in_features, Tensor& col, Fill fill) {
  const int64_t rows = dy.size(0), out_features = dy.size(1);
  Tensor product = Tensor::empty({out_features, in_features}, dy.dtype());
  col = Tensor::empty({out_features}, dy.dtype());
  fill(product, col);
  add_flops(2.0 * double(rows) * in_features * out_features, /*is_matmul=*/true);
  add_flops(double(dy.numel()));
  return product;
}

}  // namespace

Tensor weight_product(const Tensor& dy, const Tensor& a, Tensor* col) {
  if (!col) return matmul(dy, a, true, false);
  return product_and_column_sums(dy, a.size(1), *col, [&](Tensor& product, Tensor& sums) {
    dispatch(dy.dtype(), [&](auto z) {
      using T = decltype(z);
      gemm_tn_sums(product.size(0), product.size(1), dy.size(0), dy.data<T>(), a.data<T>(),
                   product.data<T>(), sums.data<T>());
    });
  });
}

Tensor weight_product(const Tensor& dy, const Bf16Rows& a, Tensor* col) {
  check(dy.dtype() == DType::f32 && a.rows == dy.size(0), "linear: dy ", dy.shape(),
        " does not match the kept input's ", a.rows, " rows");
  Tensor sums;  // the products take them with dY's packing, wanted or not
  return product_and_column_sums(dy, a.cols, col ? *col : sums, [&](Tensor& product, Tensor& s) {
    gemm_tn_sums(product.size(0), dy.data<float>(), a, product.data<float>(), s.data<float>());
  });
}

void input_product_then(const Tensor& dy, const Tensor& w, const RowsDone& done) {
  const int64_t rows = dy.size(0), out_features = w.size(0), in_features = w.size(1);
  check(dy.dtype() == DType::f32 && w.dtype() == DType::f32 && dy.dim() == 2 &&
            dy.size(1) == out_features,
        "linear: an input gradient of dy ", dy.shape(), " and weight ", w.shape());
  gemm_then(rows, in_features, out_features, dy.data<float>(), w.data<float>(), done);
  add_flops(2.0 * double(rows) * in_features * out_features, /*is_matmul=*/true);
}

std::vector<Tensor> linear_inputs(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return bias.defined() ? std::vector<Tensor>{x, weight, bias} : std::vector<Tensor>{x, weight};
}

}  // namespace detail

// y = x W^T + b over the rows of x folded to (rows, in). Saved for backward: x (for dW) and
// W (for dx), only where the other needs a gradient; the bias needs nothing.
//   dx = dy W        one gemm (rows, out) x (out, in)
//   dW = dy^T x      one gemm over all rows, (out, in)
//   db = sum_rows dy deterministic, accumulated in double
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const detail::LinearPlan p = detail::plan_linear("linear", "x", x, weight, bias);
  Tensor out = detail::linear_values(x, weight, bias, p);
  const std::vector<Tensor> inputs = detail::linear_inputs(x, weight, bias);
  if (!any_requires_grad(inputs)) return record("linear", out, inputs, nullptr);
  const bool has_bias = bias.defined();
  const bool need_x = needs_grad(x), need_w = needs_grad(weight), need_b = needs_grad(bias);
  const Tensor xs = need_w ? x.detach() : Tensor(), ws = need_x ? weight.detach() : Tensor();
  const Shape x_shape = x.shape();
  const int64_t rows = p.rows, in_features = p.in_features, out_features = p.out_features;
  return record("linear", out, inputs, [=](const Tensor& g) {
    const Tensor g2 = g.reshape({rows, out_features});
    std::vector<Tensor> grads(has_bias ? 3 : 2);
    if (need_x) grads[0] = matmul(g2, ws).reshape(x_shape);
    if (need_w)  // with the bias's gradient, where it has one: one pass over dy
      grads[1] =
          detail::weight_product(g2, xs.reshape({rows, in_features}), need_b ? &grads[2] : nullptr);
    else if (need_b)
      grads[2] = sum(g2, {0});
    return grads;
  });
}

}  // namespace vg
