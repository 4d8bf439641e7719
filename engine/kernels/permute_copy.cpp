#include "engine/kernels/permute_copy.h"

#include <algorithm>

#include "engine/core/parallel.h"

namespace vg::kernels {

template <class T>
void permute_copy(const T* src, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& order, T* dst) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<int64_t> out_shape(rank), in_stride(rank), stride_for_out(rank);
  for (int64_t i = rank - 1, st = 1; i >= 0; --i) {
    in_stride[i] = st;
    st *= shape[i];
  }
  int64_t numel = 1;
  for (int64_t i = 0; i < rank; ++i) {
    out_shape[i] = shape[order[i]];
    stride_for_out[i] = in_stride[order[i]];
    numel *= out_shape[i];
  }
  if (numel == 0) return;
  const int64_t inner = out_shape[rank - 1], inner_stride = stride_for_out[rank - 1];
  const int64_t runs = numel / inner;
  parallel_for(runs, std::max<int64_t>(1, 8192 / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rest = r, base = 0;
      for (int64_t ax = rank - 2; ax >= 0; --ax) {
        base += (rest % out_shape[ax]) * stride_for_out[ax];
        rest /= out_shape[ax];
      }
      T* d = dst + r * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] = src[base + i * inner_stride];
    }
  });
}

template void permute_copy(const float*, const std::vector<int64_t>&, const std::vector<int64_t>&,
                           float*);
template void permute_copy(const double*, const std::vector<int64_t>&,
                           const std::vector<int64_t>&, double*);

}  // namespace vg::kernels
