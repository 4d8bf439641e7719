#include "engine/core/parallel.h"

#include <cblas.h>

namespace vg {
namespace {
int g_threads = 0;  // 0: not set yet, use OpenMP's default
}

int num_threads() {
  return g_threads > 0 ? g_threads : omp_get_max_threads();
}

void set_num_threads(int n) {
  g_threads = n < 1 ? 1 : n;
  omp_set_num_threads(g_threads);
  // OpenBLAS stays single-threaded: engine/kernels/blas.cpp splits products over these threads.
  openblas_set_num_threads(1);
}

}  // namespace vg
