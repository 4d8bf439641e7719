// The tensor: a cheap shared handle to a shape, a dtype, a contiguous 64-byte aligned
// row-major buffer and the autograd metadata.
//
// Channels-last is the convention: the last axis is the channel axis C. Tokens are (B, T, C),
// images (B, H, W, C). Every tensor is contiguous: `reshape` shares the buffer, while
// `permute`, `transpose`, `slice`, `select` and `cat` copy (ops.h), so the cost is explicit.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/storage.h"

namespace vg {

using Shape = std::vector<int64_t>;

class Rng;
struct Node;
struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: "no value", e.g. an absent bias
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Uninitialised memory of the given shape; everything else starts from here.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const;
  DType dtype() const;

  template <class T> T* data();
  template <class T> const T* data() const;
  void* raw_data() const;

  // --- autograd -------------------------------------------------------------------------
  bool requires_grad() const;
  // Marks a leaf as a variable whose gradient backward() accumulates into grad().
  Tensor& set_requires_grad(bool on = true);
  bool is_leaf() const;  // made by the user, not recorded by an op
  Tensor grad() const;   // undefined until a backward pass reaches this leaf
  void set_grad(const Tensor& g);
  void zero_grad();      // drops the gradient, as PyTorch's set_to_none
  const std::shared_ptr<Node>& grad_fn() const;
  // Backpropagates from a scalar (gradient 1) or from any tensor with an explicit gradient.
  // The graph is freed afterwards unless retain_graph is true.
  // backward is the autograd pass (defined in engine/autograd/autograd.cpp).
  void backward(bool retain_graph = false) const;
  void backward(const Tensor& gradient, bool retain_graph = false) const;
  Tensor detach() const;  // the same buffer, cut from the graph

  // --- shape and conversion -------------------------------------------------------------
  // A view with the same buffer; one axis may be -1. Differentiable.
  // reshape, to and clone are differentiable ops (defined in engine/ops/shape.cpp).
  Tensor reshape(const Shape& shape) const;
  Tensor view(const Shape& shape) const { return reshape(shape); }
  Tensor to(DType dtype) const;  // a copy in another dtype (differentiable)
  Tensor clone() const;          // a copy of the values (differentiable)

  // --- values, for tests and printing ---------------------------------------------------
  double item() const;  // the single value of a one-element tensor
  double at(std::initializer_list<int64_t> index) const;
  void set_at(std::initializer_list<int64_t> index, double value);
  std::vector<double> to_vector() const;
  std::string str(int64_t max_values = 8) const;  // "tensor([2,3], float32) [1, 2, ...]"

  const std::string& name() const;
  Tensor& set_name(const std::string& name);

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  Shape shape;
  DType dtype = DType::f32;
  int64_t numel = 0;
  std::shared_ptr<Storage> storage;
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  // set on results of recorded ops
  std::string name;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// --- factories --------------------------------------------------------------------------
Tensor zeros(const Shape& shape, DType dtype = DType::f32);
Tensor ones(const Shape& shape, DType dtype = DType::f32);
Tensor full(const Shape& shape, double value, DType dtype = DType::f32);
Tensor zeros_like(const Tensor& t);
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::f32);
Tensor arange(int64_t n, DType dtype = DType::f32);  // 0, 1, ..., n-1
Tensor from_vector(const std::vector<float>& values, const Shape& shape);
Tensor from_vector(const std::vector<double>& values, const Shape& shape);
Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype);
// Random tensors draw from an explicit generator, so every run is reproducible.
Tensor randn(const Shape& shape, Rng& rng, DType dtype = DType::f32);  // N(0, 1)
Tensor rand(const Shape& shape, Rng& rng, DType dtype = DType::f32);   // U[0, 1)
// N(mean, std^2) redrawn outside [a, b]; like timm, a and b are absolute bounds.
Tensor trunc_normal(const Shape& shape, Rng& rng, double mean = 0.0, double std = 1.0,
                    double a = -2.0, double b = 2.0, DType dtype = DType::f32);

int64_t shape_numel(const Shape& shape);

// --- inline accessors -------------------------------------------------------------------
template <class T>
T* Tensor::data() {
  check(impl_ && impl_->dtype == dtype_of<T>(), "Tensor::data: tensor is ",
        impl_ ? dtype_name(impl_->dtype) : "undefined", ", asked for ",
        dtype_name(dtype_of<T>()));
  return static_cast<T*>(impl_->storage->data());
}
template <class T>
const T* Tensor::data() const {
  return const_cast<Tensor*>(this)->data<T>();
}

}  // namespace vg
