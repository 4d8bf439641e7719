// Elementwise ops. Binary ops broadcast (NumPy rules) and return gradients in the output's
// shape; the engine sums them down to each operand's shape. Unary ops are defined by two
// lines each: the value and the derivative, side by side.
#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/kernels/elementwise_apply.h"
#include "engine/kernels/gelu_math.h"
#include "engine/ops/broadcast.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  check(a.defined() && b.defined(), op, ": undefined operand");
  check(a.dtype() == b.dtype(), op, ": operands have dtypes ", dtype_name(a.dtype()), " and ",
        dtype_name(b.dtype()), "; convert one with .to()");
}

// out[i] = f(a[i], b[i]) over the broadcast shape.
template <class F>
Tensor broadcast_apply(const char* op, const Tensor& a, const Tensor& b, F f) {
  check_same_dtype(op, a, b);
  const Shape shape = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(shape, a.dtype());
  dispatch(a.dtype(), [&](auto z) {
    using T = decltype(z);
    if (a.shape() == b.shape())
      kernels::zip_elements(a.data<T>(), b.data<T>(), out.data<T>(), out.numel(), f);
    else
      kernels::zip_broadcast(kernels::plan_broadcast(a.shape(), b.shape(), shape), a.data<T>(),
                             b.data<T>(), out.data<T>(), f);
  });
  add_flops(double(out.numel()));
  return out;
}

// out[i] = f(a[i]); the result of a unary op.
template <class F>
Tensor map(const Tensor& a, double flops_per_element, F f) {
  check(a.defined(), "elementwise op on an undefined tensor");
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  dispatch(a.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::map_elements(a.data<T>(), out.data<T>(), a.numel(), f);
  });
  add_flops(flops_per_element * double(a.numel()));
  return out;
}

// A unary op y = value(x) with dy/dx = derivative(x, y): the backward multiplies the
// output gradient by it elementwise.
template <class Value, class Derivative>
Tensor unary(const char* op, const Tensor& x, double flops, Value value, Derivative derivative) {
  Tensor y = map(x, flops, value);
  if (!any_requires_grad({x})) return record(op, y, {x}, nullptr);
  Tensor xs = x.detach(), ys = y.detach();
  return record(op, y, {x}, [xs, ys, derivative](const Tensor& g) {
    Tensor gx = Tensor::empty(g.shape(), g.dtype());
    dispatch(g.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::times_derivative(xs.data<T>(), ys.data<T>(), g.data<T>(), gx.data<T>(), g.numel(),
                                derivative);
    });
    return std::vector<Tensor>{gx};
  });
}

}  // namespace

// --- binary, tensor (op) tensor ----------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_apply("add", a, b, [](auto x, auto y) { return x + y; });
  return record("add", out, {a, b}, [](const Tensor& g) { return std::vector<Tensor>{g, g}; });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_apply("sub", a, b, [](auto x, auto y) { return x - y; });
  return record("sub", out, {a, b},
                [](const Tensor& g) { return std::vector<Tensor>{g, neg(g)}; });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_apply("mul", a, b, [](auto x, auto y) { return x * y; });
  if (!any_requires_grad({a, b})) return record("mul", out, {a, b}, nullptr);
  Tensor as = a.detach(), bs = b.detach();
  bool need_a = a.requires_grad() || a.grad_fn(), need_b = b.requires_grad() || b.grad_fn();
  return record("mul", out, {a, b}, [as, bs, need_a, need_b](const Tensor& g) {
    return std::vector<Tensor>{need_a ? mul(g, bs) : Tensor(), need_b ? mul(g, as) : Tensor()};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_apply("div", a, b, [](auto x, auto y) { return x / y; });
  if (!any_requires_grad({a, b})) return record("div", out, {a, b}, nullptr);
  Tensor bs = b.detach(), outs = out.detach();
  bool need_b = b.requires_grad() || b.grad_fn();
  // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b
  return record("div", out, {a, b}, [bs, outs, need_b](const Tensor& g) {
    Tensor ga = div(g, bs);
    return std::vector<Tensor>{ga, need_b ? neg(mul(ga, outs)) : Tensor()};
  });
}

// --- binary with a scalar ----------------------------------------------------------------

Tensor add(const Tensor& a, double s) {
  return unary("add_scalar", a, 1, [s](auto x) { return x + decltype(x)(s); },
               [](auto, auto) { return 1; });
}
Tensor sub(const Tensor& a, double s) { return add(a, -s); }
Tensor sub(double s, const Tensor& a) {
  return unary("rsub_scalar", a, 1, [s](auto x) { return decltype(x)(s) - x; },
               [](auto, auto) { return -1; });
}
Tensor mul(const Tensor& a, double s) {
  return unary("mul_scalar", a, 1, [s](auto x) { return x * decltype(x)(s); },
               [s](auto x, auto) { return decltype(x)(s); });
}
Tensor div(const Tensor& a, double s) { return mul(a, 1.0 / s); }
Tensor div(double s, const Tensor& a) {
  return unary("rdiv_scalar", a, 1, [s](auto x) { return decltype(x)(s) / x; },
               [](auto x, auto y) { return -y / x; });
}

// --- unary: value and derivative ---------------------------------------------------------

Tensor neg(const Tensor& a) {
  return unary("neg", a, 1, [](auto x) { return -x; }, [](auto, auto) { return -1; });
}

Tensor exp(const Tensor& a) {
  return unary("exp", a, 1, [](auto x) { return std::exp(x); },
               [](auto, auto y) { return y; });
}

Tensor log(const Tensor& a) {
  return unary("log", a, 1, [](auto x) { return std::log(x); },
               [](auto x, auto) { return 1 / x; });
}

Tensor sqrt(const Tensor& a) {
  return unary("sqrt", a, 1, [](auto x) { return std::sqrt(x); },
               [](auto, auto y) { return decltype(y)(0.5) / y; });
}

Tensor pow(const Tensor& a, double p) {
  return unary("pow", a, 1, [p](auto x) { return std::pow(x, decltype(x)(p)); },
               [p](auto x, auto) { return decltype(x)(p) * std::pow(x, decltype(x)(p - 1)); });
}

Tensor abs(const Tensor& a) {
  return unary("abs", a, 1, [](auto x) { return std::abs(x); },
               [](auto x, auto) { return decltype(x)((x > 0) - (x < 0)); });
}

Tensor tanh(const Tensor& a) {
  return unary("tanh", a, 1, [](auto x) { return std::tanh(x); },
               [](auto, auto y) { return 1 - y * y; });
}

Tensor sigmoid(const Tensor& a) {
  return unary("sigmoid", a, 1, [](auto x) { return 1 / (1 + std::exp(-x)); },
               [](auto, auto y) { return y * (1 - y); });
}

Tensor relu(const Tensor& a) {
  return unary("relu", a, 1, [](auto x) { return x > 0 ? x : decltype(x)(0); },
               [](auto x, auto) { return decltype(x)(x > 0); });
}

// The value and the derivative of both forms are in kernels/gelu_math.h, shared with the fused
// gelu_linear (ops/fused_linear_maps.cpp).
Tensor gelu(const Tensor& a, GeluApprox approx) {
  using namespace gelu_math;
  if (approx == GeluApprox::none)
    return unary(
        "gelu", a, kErfFlops, [](auto x) { return erf_value(x); },
        [](auto x, auto) { return erf_derivative(x); });
  return unary(
      "gelu_tanh", a, kTanhFlops, [](auto x) { return tanh_value(x); },
      [](auto x, auto) { return tanh_derivative(x); });
}

}  // namespace vg
