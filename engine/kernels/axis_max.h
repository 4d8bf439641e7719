// The maximum over the middle axis of (outer, reduced, inner), and where it came from.
#pragma once

#include <cstdint>

namespace vg::kernels {

// dst[o, i] = max over r of src[o, r, i], reduced >= 1; where[o, i] = its index into src (the
// first one on ties; a NaN beats any number, so a NaN input gives a NaN maximum).
template <class T>
void max_middle_axis(const T* src, T* dst, int64_t* where, int64_t outer, int64_t reduced,
                     int64_t inner);

// The same as one serial loop over the columns: the same bits and the same `where`.
template <class T>
void max_middle_axis_reference(const T* src, T* dst, int64_t* where, int64_t outer,
                               int64_t reduced, int64_t inner);

}  // namespace vg::kernels
