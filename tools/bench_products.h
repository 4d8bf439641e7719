// `vitgrad bench --products`: each linear layer of a block, its three products timed one at a
// time on the engine's products (in the run's precision) and on OpenBLAS's sgemm, at the
// step's shapes, so that a step's time can be traced to the products that lag the library.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/vit.h"

namespace vg::tools {

// The three products of a linear layer with X (rows, in) and W (out, in), as C (m x n) over k:
//   forward           Y (rows, out) = X W^T + b   m = rows, n = out, k = in
//   input gradient    dX (rows, in) = dY W        m = rows, n = in,  k = out
//   weight gradient   dW (out, in) = dY^T X       m = out,  n = in,  k = rows (and db)
enum class ProductKind { forward, input_gradient, weight_gradient };
const char* kind_name(ProductKind kind);  // "forward", "input gradient", "weight gradient"

struct LinearProduct {
  std::string layer;  // "attn.qkv", "mlp.fc1", ...
  ProductKind kind = ProductKind::forward;
  int64_t rows = 0, in = 0, out = 0;

  int64_t m() const { return kind == ProductKind::weight_gradient ? out : rows; }
  int64_t n() const { return kind == ProductKind::forward ? out : in; }
  int64_t k() const {
    return kind == ProductKind::forward ? in : kind == ProductKind::input_gradient ? out : rows;
  }
};

// The three products of every linear layer in the model's first block, over batch * tokens
// rows, in the block's order.
std::vector<LinearProduct> block_products(const ViT& model, int64_t batch);

// A product's fastest time of `repeats` runs on each side, the runs alternated, and the
// largest difference between the two results relative to the largest |value| of OpenBLAS's.
struct ProductTiming {
  LinearProduct product;
  double engine_s = 0, openblas_s = 0, relative_difference = 0;
  double gflop() const {
    return 2.0 * double(product.m()) * double(product.n()) * double(product.k()) / 1e9;
  }
};

// Times each product on random operands after one untimed run of each side.
std::vector<ProductTiming> time_products(const std::vector<LinearProduct>& products, int repeats);

void print_products(const std::vector<ProductTiming>& timings, bool bf16, int repeats);
nlohmann::json products_json(const std::vector<ProductTiming>& timings);

}  // namespace vg::tools
