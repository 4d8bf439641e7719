#include "engine/core/tensor.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "engine/core/parallel.h"
#include "engine/core/rng.h"

namespace vg {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    check(d >= 0, "negative size in shape ", shape);
    n *= d;
  }
  return n;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->numel = shape_numel(shape);
  impl->storage = std::make_shared<Storage>(impl->numel * dtype_size(dtype));
  return Tensor(std::move(impl));
}

static TensorImpl& need(const std::shared_ptr<TensorImpl>& impl) {
  check(impl != nullptr, "operation on an undefined tensor");
  return *impl;
}

const Shape& Tensor::shape() const {
  return need(impl_).shape;
}
int64_t Tensor::numel() const {
  return need(impl_).numel;
}
DType Tensor::dtype() const {
  return need(impl_).dtype;
}
void* Tensor::raw_data() const {
  return need(impl_).storage->data();
}

int64_t Tensor::size(int64_t axis) const {
  const int64_t d = dim();
  check(axis >= -d && axis < d, "axis ", axis, " out of range for shape ", shape());
  return shape()[axis < 0 ? axis + d : axis];
}

bool Tensor::requires_grad() const {
  return impl_ && impl_->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool on) {
  check(is_leaf(),
        "set_requires_grad: only a leaf tensor (not the result of an op) can be "
        "marked; use detach() first");
  impl_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const {
  return need(impl_).grad_fn == nullptr;
}
Tensor Tensor::grad() const {
  return need(impl_).grad;
}
void Tensor::set_grad(const Tensor& g) {
  if (g.defined())
    check(g.shape() == shape(), "set_grad: gradient shape ", g.shape(),
          " does not match tensor shape ", shape());
  need(impl_).grad = g;
}
void Tensor::zero_grad() {
  need(impl_).grad = Tensor();
}
const std::shared_ptr<Node>& Tensor::grad_fn() const {
  return need(impl_).grad_fn;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape();
  impl->dtype = dtype();
  impl->numel = numel();
  impl->storage = impl_->storage;
  impl->name = impl_->name;
  return Tensor(std::move(impl));
}

static int64_t flat_index(const Tensor& t, std::initializer_list<int64_t> index) {
  const Shape& s = t.shape();
  check(index.size() == s.size(), "at: ", index.size(), " indices for shape ", s);
  int64_t flat = 0, axis = 0;
  for (int64_t i : index) {
    check(i >= 0 && i < s[axis], "at: index ", i, " out of range for axis ", axis, " of shape ", s);
    flat = flat * s[axis++] + i;
  }
  return flat;
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  const int64_t i = flat_index(*this, index);
  return dispatch(dtype(), [&](auto z) { return double(data<decltype(z)>()[i]); });
}

void Tensor::set_at(std::initializer_list<int64_t> index, double value) {
  const int64_t i = flat_index(*this, index);
  dispatch(dtype(), [&](auto z) { data<decltype(z)>()[i] = static_cast<decltype(z)>(value); });
}

double Tensor::item() const {
  check(numel() == 1, "item: the tensor has shape ", shape(), ", not one element");
  return dispatch(dtype(), [&](auto z) { return double(data<decltype(z)>()[0]); });
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> v(numel());
  dispatch(dtype(), [&](auto z) {
    const auto* p = data<decltype(z)>();
    for (int64_t i = 0; i < numel(); ++i) v[i] = p[i];
  });
  return v;
}

std::string Tensor::str(int64_t max_values) const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream out;
  out << "tensor(" << shape_str(shape()) << ", " << dtype_name(dtype());
  if (!name().empty()) out << ", '" << name() << "'";
  if (requires_grad()) out << ", requires_grad";
  out << ") [" << std::setprecision(6);
  const std::vector<double> v = to_vector();
  for (int64_t i = 0; i < numel() && i < max_values; ++i) out << (i ? ", " : "") << v[i];
  if (numel() > max_values) out << ", ...";
  out << "]";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  return out << t.str();
}

const std::string& Tensor::name() const {
  return need(impl_).name;
}
Tensor& Tensor::set_name(const std::string& name) {
  need(impl_).name = name;
  return *this;
}

// --- factories --------------------------------------------------------------------------

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch(dtype, [&](auto z) {
    using T = decltype(z);
    T* p = t.data<T>();
    const T v = static_cast<T>(value);
    parallel_for(t.numel(), 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = v;
    });
  });
  return t;
}

Tensor zeros(const Shape& shape, DType dtype) {
  return full(shape, 0.0, dtype);
}
Tensor ones(const Shape& shape, DType dtype) {
  return full(shape, 1.0, dtype);
}
Tensor zeros_like(const Tensor& t) {
  return zeros(t.shape(), t.dtype());
}

Tensor arange(double start, double stop, double step, DType dtype) {
  check(step != 0, "arange: step must not be 0");
  const double count = std::ceil((stop - start) / step);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  Tensor t = Tensor::empty({n}, dtype);
  dispatch(dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < n; ++i) t.data<T>()[i] = static_cast<T>(start + step * i);
  });
  return t;
}

Tensor arange(int64_t n, DType dtype) {
  return arange(0.0, double(n), 1.0, dtype);
}

template <class T>
static Tensor from_values(const std::vector<T>& values, const Shape& shape, DType dtype) {
  check(int64_t(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
        " values do not fill shape ", shape);
  Tensor t = Tensor::empty(shape, dtype);
  dispatch(dtype, [&](auto z) {
    using D = decltype(z);
    for (size_t i = 0; i < values.size(); ++i) t.data<D>()[i] = static_cast<D>(values[i]);
  });
  return t;
}

Tensor from_vector(const std::vector<float>& v, const Shape& s) {
  return from_values(v, s, DType::f32);
}
Tensor from_vector(const std::vector<double>& v, const Shape& s) {
  return from_values(v, s, DType::f64);
}
Tensor from_vector(const std::vector<double>& v, const Shape& s, DType dtype) {
  return from_values(v, s, dtype);
}

// Random factories draw serially, element by element, so the values depend only on the
// generator's state, never on the thread count.
template <class Draw>
static Tensor draw(const Shape& shape, DType dtype, Draw&& next) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch(dtype, [&](auto z) {
    using T = decltype(z);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(next());
  });
  return t;
}

Tensor randn(const Shape& shape, Rng& rng, DType dtype) {
  return draw(shape, dtype, [&] { return rng.normal(); });
}

Tensor rand(const Shape& shape, Rng& rng, DType dtype) {
  return draw(shape, dtype, [&] { return rng.uniform(); });
}

Tensor trunc_normal(const Shape& shape, Rng& rng, double mean, double std, double a, double b,
                    DType dtype) {
  check(a < b, "trunc_normal: empty interval [", a, ", ", b, "]");
  check(std > 0, "trunc_normal: std must be positive, got ", std);
  // Rejection sampling needs the interval to hold a fair share of the mass.
  const double mass =
      0.5 * (std::erfc((a - mean) / (std * M_SQRT2)) - std::erfc((b - mean) / (std * M_SQRT2)));
  check(mass > 1e-3, "trunc_normal: [", a, ", ", b, "] holds only ", mass, " of N(", mean, ", ",
        std, "^2)");
  return draw(shape, dtype, [&] {
    for (;;) {
      const double x = rng.normal(mean, std);
      if (x >= a && x <= b) return x;
    }
  });
}

}  // namespace vg
