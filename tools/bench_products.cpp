#include "tools/bench_products.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "engine/core/parallel.h"
#include "engine/kernels/blas.h"
#include "engine/ops/ops.h"
#include "layers/linear.h"

namespace vg::tools {
namespace {

using Clock = std::chrono::steady_clock;

// The operands of one product, random, with room for its result on each side; in bf16 mode
// also X rounded to bf16 as the forward keeps it.
struct Operands {
  Tensor x, dy, w, bias, engine_out, openblas_out, bias_grad;
  Bf16Rows kept_x;
};

Operands operands_for(const LinearProduct& p) {
  Rng rng(11);
  Operands o{randn({p.rows, p.in}, rng),    randn({p.rows, p.out}, rng),
             randn({p.out, p.in}, rng),     randn({p.out}, rng),
             Tensor::empty({p.m(), p.n()}), Tensor::empty({p.m(), p.n()}),
             Tensor::empty({p.out}),        Bf16Rows()};
  if (p.kind == ProductKind::weight_gradient && products_keep_bf16()) {
    Tensor y = Tensor::empty({p.rows, p.out});
    gemm_bias_keeping_a(p.rows, p.out, p.in, o.x.data<float>(), o.w.data<float>(),
                        o.bias.data<float>(), y.data<float>(), o.kept_x);
  }
  return o;
}

// The product as a linear layer's op runs it (kernels/blas.h), in the run's precision: in bf16
// mode the forward keeps X in bf16 and the weight gradient reads those words, as a training
// step's linear layers do.
void on_engine(const LinearProduct& p, Operands& o) {
  const float *x = o.x.data<float>(), *dy = o.dy.data<float>(), *w = o.w.data<float>();
  float* c = o.engine_out.data<float>();
  const float* bias = o.bias.data<float>();
  const bool keep = products_keep_bf16();
  switch (p.kind) {
    case ProductKind::forward:
      if (keep) return gemm_bias_keeping_a(p.rows, p.out, p.in, x, w, bias, c, o.kept_x);
      return gemm_bias(p.rows, p.out, p.in, x, w, bias, c);
    case ProductKind::input_gradient:
      return gemm(false, false, p.rows, p.in, p.out, 1.0f, dy, p.out, w, p.in, 0.0f, c, p.in);
    case ProductKind::weight_gradient:
      if (keep) return gemm_tn_sums(p.out, dy, o.kept_x, c, o.bias_grad.data<float>());
      return gemm_tn_sums(p.out, p.in, p.rows, dy, x, c, o.bias_grad.data<float>());
  }
}

// The same product on OpenBLAS's sgemm (the forward without its bias, the weight gradient
// without the bias gradient's sums).
void on_openblas(const LinearProduct& p, Operands& o) {
  const float *x = o.x.data<float>(), *dy = o.dy.data<float>(), *w = o.w.data<float>();
  float* c = o.openblas_out.data<float>();
  switch (p.kind) {
    case ProductKind::forward:
      return gemm_on_openblas(false, true, p.rows, p.out, p.in, x, p.in, w, p.in, c, p.out);
    case ProductKind::input_gradient:
      return gemm_on_openblas(false, false, p.rows, p.in, p.out, dy, p.out, w, p.in, c, p.in);
    case ProductKind::weight_gradient:
      return gemm_on_openblas(true, false, p.out, p.in, p.rows, dy, p.out, x, p.in, c, p.in);
  }
}

template <class F>
double seconds_of(F&& run) {
  const auto t0 = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// max |engine - openblas| / max |openblas|; the forward's bias taken off the engine's result.
double relative_difference(const LinearProduct& p, const Operands& o) {
  const float *e = o.engine_out.data<float>(), *r = o.openblas_out.data<float>();
  const float* bias = o.bias.data<float>();
  double largest = 0, diff = 0;
  const int64_t m = p.m(), n = p.n();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double engine =
          double(e[i * n + j]) - (p.kind == ProductKind::forward ? bias[j] : 0.0f);
      largest = std::max(largest, std::abs(double(r[i * n + j])));
      diff = std::max(diff, std::abs(engine - double(r[i * n + j])));
    }
  return largest > 0 ? diff / largest : diff;
}

}  // namespace

const char* kind_name(ProductKind kind) {
  switch (kind) {
    case ProductKind::forward:
      return "forward";
    case ProductKind::input_gradient:
      return "input gradient";
    case ProductKind::weight_gradient:
      return "weight gradient";
  }
  return "";
}

std::vector<LinearProduct> block_products(const ViT& model, int64_t batch) {
  const int64_t rows = batch * (model.config().num_patches() + 1);  // the class token's too
  std::vector<LinearProduct> out;
  for (const auto& [name, module] : model.block(0).named_modules()) {
    const auto* linear = dynamic_cast<const nn::Linear*>(module);
    if (!linear) continue;
    for (ProductKind kind :
         {ProductKind::forward, ProductKind::input_gradient, ProductKind::weight_gradient})
      out.push_back({name, kind, rows, linear->in_features(), linear->out_features()});
  }
  return out;
}

std::vector<ProductTiming> time_products(const std::vector<LinearProduct>& products, int repeats) {
  std::vector<ProductTiming> timings;
  for (const LinearProduct& p : products) {
    Operands o = operands_for(p);
    ProductTiming t{p, 1e30, 1e30, 0};
    on_engine(p, o);  // untimed: scratch grown, pages touched
    on_openblas(p, o);
    t.relative_difference = relative_difference(p, o);
    for (int r = 0; r < repeats; ++r) {
      t.engine_s = std::min(t.engine_s, seconds_of([&] { on_engine(p, o); }));
      t.openblas_s = std::min(t.openblas_s, seconds_of([&] { on_openblas(p, o); }));
    }
    timings.push_back(t);
  }
  return timings;
}

void print_products(const std::vector<ProductTiming>& timings, bool bf16, int repeats) {
  std::cout << "\nproducts of block 0, fastest of " << repeats << " runs each, alternated, on "
            << num_threads() << " threads: vitgrad's " << (bf16 ? "bf16" : "fp32")
            << " products against OpenBLAS's sgemm (" << blas_core_name()
            << ") on the same float operands\n"
            << "  " << std::left << std::setw(30) << "product" << std::right << std::setw(20)
            << "m x n x k" << std::setw(12) << "vitgrad ms" << std::setw(9) << "GFLOP/s"
            << std::setw(13) << "OpenBLAS ms" << std::setw(9) << "GFLOP/s" << std::setw(12)
            << "time ratio" << std::setw(12) << "rel. diff"
            << "\n";
  for (const ProductTiming& t : timings) {
    const LinearProduct& p = t.product;
    const std::string shape =
        std::to_string(p.m()) + " x " + std::to_string(p.n()) + " x " + std::to_string(p.k());
    std::cout << "  " << std::left << std::setw(30) << (p.layer + " " + kind_name(p.kind))
              << std::right << std::setw(20) << shape << std::fixed << std::setprecision(3)
              << std::setw(12) << 1e3 * t.engine_s << std::setprecision(0) << std::setw(9)
              << t.gflop() / t.engine_s << std::setprecision(3) << std::setw(13)
              << 1e3 * t.openblas_s << std::setprecision(0) << std::setw(9)
              << t.gflop() / t.openblas_s << std::setprecision(2) << std::setw(12)
              << t.engine_s / t.openblas_s << std::scientific << std::setprecision(1)
              << std::setw(12) << t.relative_difference << std::defaultfloat << "\n";
  }
  std::cout
      << "  vitgrad's forwards start their sums from the bias, and its weight gradients also\n"
         "  sum dY's columns (the bias gradient) in the same pass: OpenBLAS's products do "
         "neither.\n";
}

nlohmann::json products_json(const std::vector<ProductTiming>& timings) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ProductTiming& t : timings)
    rows.push_back({{"layer", t.product.layer},
                    {"kind", kind_name(t.product.kind)},
                    {"m", t.product.m()},
                    {"n", t.product.n()},
                    {"k", t.product.k()},
                    {"vitgrad_ms", 1e3 * t.engine_s},
                    {"openblas_ms", 1e3 * t.openblas_s},
                    {"relative_difference", t.relative_difference}});
  return rows;
}

}  // namespace vg::tools
