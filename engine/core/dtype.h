// Element types: float32 for training, float64 for gradient checks.
#pragma once

#include <cstddef>
#include <string>

#include "engine/core/error.h"

namespace vg {

enum class DType : unsigned char { f32, f64 };

inline size_t dtype_size(DType dt) { return dt == DType::f32 ? 4 : 8; }
inline const char* dtype_name(DType dt) { return dt == DType::f32 ? "float32" : "float64"; }
inline DType dtype_from_name(const std::string& name) {
  if (name == "float32") return DType::f32;
  if (name == "float64") return DType::f64;
  throw Error("unknown dtype '" + name + "' (expected float32 or float64)");
}

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }

// Calls f with a value of the C++ type behind `dt`, so one generic lambda serves both:
//   dispatch(x.dtype(), [&](auto zero) { using T = decltype(zero); ... });
template <class F>
decltype(auto) dispatch(DType dt, F&& f) {
  if (dt == DType::f32) return f(float{});
  return f(double{});
}

}  // namespace vg
