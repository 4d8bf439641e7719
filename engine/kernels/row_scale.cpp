#include "engine/kernels/row_scale.h"

namespace vg::kernels {

template <class T>
void scale_rows(const T* w, const T* s, T* out, int64_t O, int64_t I) {
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) out[o * I + i] = w[o * I + i] * s[o];
}

template <class T>
void scale_grad_rows(const T* w, const T* G, const T* b, const T* col, T* ds, int64_t O,
                     int64_t I) {
  for (int64_t o = 0; o < O; ++o) {
    double s = 0;
    for (int64_t i = 0; i < I; ++i) s += double(w[o * I + i]) * double(G[o * I + i]);
    if (b) s += double(b[o]) * double(col[o]);
    ds[o] = T(s);
  }
}

template void scale_rows(const float*, const float*, float*, int64_t, int64_t);
template void scale_rows(const double*, const double*, double*, int64_t, int64_t);
template void scale_grad_rows(const float*, const float*, const float*, const float*, float*,
                              int64_t, int64_t);
template void scale_grad_rows(const double*, const double*, const double*, const double*,
                              double*, int64_t, int64_t);

}  // namespace vg::kernels
