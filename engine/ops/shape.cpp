// Ops that move elements: permute, transpose, slice, select, cat, broadcast_to. Each one
// copies (tensors are always contiguous); the gradient moves the elements back. Tensor's own
// reshape (a view), to and clone are here too.
#include <cstring>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/kernels/block_copy.h"
#include "engine/kernels/elementwise_apply.h"
#include "engine/kernels/permute_copy.h"
#include "engine/ops/broadcast.h"
#include "engine/ops/ops.h"

namespace vg {
namespace {

int64_t normalize_axis(const char* op, int64_t axis, int64_t rank) {
  check(axis >= -rank && axis < rank, op, ": axis ", axis, " out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// The tensor seen as (outer, n along `axis`, inner).
void split_at(const Shape& s, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
}

}  // namespace

Tensor permute(const Tensor& a, const Axes& order_in) {
  const int64_t rank = a.dim();
  check(static_cast<int64_t>(order_in.size()) == rank, "permute: order of ", order_in.size(),
        " axes for shape ", a.shape());
  Axes order(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    order[i] = normalize_axis("permute", order_in[i], rank);
    check(!seen[order[i]], "permute: axis ", order_in[i], " appears twice");
    seen[order[i]] = true;
  }
  Shape out_shape(rank);
  for (int64_t i = 0; i < rank; ++i) out_shape[i] = a.shape()[order[i]];
  Tensor out = Tensor::empty(out_shape, a.dtype());
  if (out.numel() > 0) {
    dispatch(a.dtype(), [&](auto z) {
      using T = decltype(z);
      kernels::permute_copy(a.data<T>(), a.shape(), order, out.data<T>());
    });
  }
  Axes inverse(rank);
  for (int64_t i = 0; i < rank; ++i) inverse[order[i]] = i;
  return record("permute", out, {a},
                [inverse](const Tensor& g) { return std::vector<Tensor>{permute(g, inverse)}; });
}

Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1) {
  const int64_t rank = a.dim();
  Axes order(rank);
  for (int64_t i = 0; i < rank; ++i) order[i] = i;
  std::swap(order[normalize_axis("transpose", axis0, rank)],
            order[normalize_axis("transpose", axis1, rank)]);
  return permute(a, order);
}

Tensor slice(const Tensor& a, int64_t axis_in, int64_t start, int64_t stop) {
  const int64_t axis = normalize_axis("slice", axis_in, a.dim());
  const int64_t n = a.shape()[axis];
  check(0 <= start && start <= stop && stop <= n, "slice: range [", start, ", ", stop,
        ") out of bounds for axis ", axis_in, " of size ", n, " (shape ", a.shape(), ")");
  Shape out_shape = a.shape();
  out_shape[axis] = stop - start;
  Tensor out = Tensor::empty(out_shape, a.dtype());
  int64_t outer, inner;
  split_at(a.shape(), axis, outer, inner);
  kernels::take_block(a.raw_data(), out.raw_data(), outer, n, stop - start, inner, start,
                      dtype_size(a.dtype()));
  const Shape in_shape = a.shape();
  return record("slice", out, {a}, [=](const Tensor& g) {
    Tensor ga = zeros(in_shape, g.dtype());
    kernels::place_block(g.raw_data(), ga.raw_data(), outer, stop - start, n, inner, start,
                         dtype_size(g.dtype()));
    return std::vector<Tensor>{ga};
  });
}

Tensor select(const Tensor& a, int64_t axis_in, int64_t index) {
  const int64_t axis = normalize_axis("select", axis_in, a.dim());
  const int64_t n = a.shape()[axis];
  check(index >= -n && index < n, "select: index ", index, " out of range for axis ", axis_in,
        " of size ", n, " (shape ", a.shape(), ")");
  if (index < 0) index += n;
  Shape out_shape = a.shape();
  out_shape.erase(out_shape.begin() + axis);
  return slice(a, axis, index, index + 1).reshape(out_shape);
}

Tensor cat(const std::vector<Tensor>& parts, int64_t axis_in) {
  check(!parts.empty(), "cat: no tensors to concatenate");
  const Shape& first = parts[0].shape();
  const int64_t axis = normalize_axis("cat", axis_in, static_cast<int64_t>(first.size()));
  Shape out_shape = first;
  out_shape[axis] = 0;
  for (const Tensor& p : parts) {
    check(p.dtype() == parts[0].dtype(), "cat: mixed dtypes");
    bool same = p.dim() == static_cast<int64_t>(first.size());
    for (int64_t i = 0; same && i < p.dim(); ++i) same = i == axis || p.shape()[i] == first[i];
    check(same, "cat: shape ", p.shape(), " does not match ", first, " outside axis ", axis_in);
    out_shape[axis] += p.shape()[axis];
  }
  Tensor out = Tensor::empty(out_shape, parts[0].dtype());
  int64_t outer, inner;
  split_at(out_shape, axis, outer, inner);
  std::vector<int64_t> offsets, lengths;
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    kernels::place_block(p.raw_data(), out.raw_data(), outer, p.shape()[axis], out_shape[axis],
                         inner, offset, dtype_size(p.dtype()));
    offsets.push_back(offset);
    lengths.push_back(p.shape()[axis]);
    offset += p.shape()[axis];
  }
  return record("cat", out, parts, [=](const Tensor& g) {
    std::vector<Tensor> grads;
    for (size_t i = 0; i < offsets.size(); ++i)
      grads.push_back(slice(g, axis, offsets[i], offsets[i] + lengths[i]));
    return grads;
  });
}

Tensor broadcast_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  check(broadcast_shapes(a.shape(), shape, "broadcast_to") == shape, "broadcast_to: ", a.shape(),
        " does not broadcast to ", shape);
  Tensor out = Tensor::empty(shape, a.dtype());
  dispatch(a.dtype(), [&](auto z) {
    using T = decltype(z);
    kernels::broadcast_copy(kernels::plan_broadcast(a.shape(), shape, shape), a.data<T>(),
                            out.data<T>());
  });
  const Shape in_shape = a.shape();
  return record("broadcast_to", out, {a}, [in_shape](const Tensor& g) {
    return std::vector<Tensor>{sum_to_shape(g, in_shape)};
  });
}

// --- the ops that Tensor offers as methods (declared in core/tensor.h) -----------------

Tensor Tensor::reshape(const Shape& new_shape) const {
  Shape s = new_shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      check(infer < 0, "reshape: more than one -1 in ", new_shape);
      infer = static_cast<int64_t>(i);
    } else {
      check(s[i] >= 0, "reshape: negative size in ", new_shape);
      known *= s[i];
    }
  }
  if (infer >= 0) {
    check(known > 0 && numel() % known == 0, "reshape: cannot reshape ", shape(), " to ",
          new_shape);
    s[infer] = numel() / known;
  }
  check(shape_numel(s) == numel(), "reshape: cannot reshape ", shape(), " (", numel(),
        " elements) to ", new_shape);
  Tensor out = detach();
  out.impl_->name.clear();
  out.impl_->shape = s;
  const Shape in_shape = shape();
  return record("reshape", out, {*this},
                [in_shape](const Tensor& g) { return std::vector<Tensor>{g.reshape(in_shape)}; });
}

Tensor Tensor::to(DType target) const {
  Tensor out = Tensor::empty(shape(), target);
  dispatch(dtype(), [&](auto zs) {
    using S = decltype(zs);
    dispatch(target, [&](auto zt) {
      using T = decltype(zt);
      const S* src = data<S>();
      T* dst = out.data<T>();
      parallel_for(numel(), 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dst[i] = static_cast<T>(src[i]);
      });
    });
  });
  const DType source = dtype();
  return record("to", out, {*this},
                [source](const Tensor& g) { return std::vector<Tensor>{g.to(source)}; });
}

Tensor Tensor::clone() const {
  Tensor out = Tensor::empty(shape(), dtype());
  std::memcpy(out.raw_data(), raw_data(), numel() * dtype_size(dtype()));
  return record("clone", out, {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

}  // namespace vg
