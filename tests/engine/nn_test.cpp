#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "tests/engine/fixture_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_close;
using vg::testing::expect_gradients;
using vg::testing::fixture_tensor;
using vg::testing::load_fixture;
using vg::testing::variable;

namespace {

// Plain compositions of primitive ops: the references the fused kernels are checked against.
Tensor reference_softmax(const Tensor& x) {
  Tensor e = exp(x - max(x, {-1}, true).detach());
  return e / sum(e, {-1}, true);
}
Tensor reference_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  Tensor centred = x - mean(x, {-1}, true);
  Tensor y = centred / sqrt(mean(centred * centred, {-1}, true) + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}
// -sum(q * logp) / B with q = (1 - eps) onehot + eps / K.
Tensor reference_cross_entropy(const Tensor& z, const std::vector<int32_t>& labels, double eps) {
  const int64_t B = z.size(0), K = z.size(1);
  Tensor q = full({B, K}, eps / double(K), z.dtype());
  for (int64_t b = 0; b < B; ++b) q.set_at({b, labels[b]}, 1 - eps + eps / double(K));
  Tensor logp = log(reference_softmax(z));
  return -sum(q * logp) / double(B);
}

std::vector<double> row_sums(const Tensor& t) {
  return sum(t, {-1}).to_vector();
}

}  // namespace

TEST_CASE("softmax rows sum to one and match known numbers") {
  Tensor x = from_vector(std::vector<double>{1, 2, 3}, {3});
  const std::vector<double> y = softmax(x).to_vector();
  CHECK(y[0] == doctest::Approx(0.09003057).epsilon(1e-7));
  CHECK(y[1] == doctest::Approx(0.24472847).epsilon(1e-7));
  CHECK(y[2] == doctest::Approx(0.66524096).epsilon(1e-7));
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor r = variable({3, 4, 9}, 1).detach().to(dt) * 4.0;
    for (double s : row_sums(softmax(r))) CHECK(s == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("log_softmax is the log of softmax") {
  Tensor x = variable({4, 6}, 2).detach() * 3.0;
  const std::vector<double> a = log_softmax(x).to_vector(), b = log(softmax(x)).to_vector();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
}

TEST_CASE("softmax and log_softmax of large logits stay finite") {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = from_vector(std::vector<double>{1000, 1001}, {1, 2}, dt);
    CHECK(softmax(x).at({0, 0}) == doctest::Approx(0.2689414213699951).epsilon(1e-6));
    CHECK(softmax(x).at({0, 1}) == doctest::Approx(0.7310585786300049).epsilon(1e-6));
    CHECK(log_softmax(x).at({0, 1}) == doctest::Approx(-0.3132616875182228).epsilon(1e-6));
  }
}

TEST_CASE("softmax and log_softmax pass gradcheck on 2-D, 3-D and 4-D inputs") {
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 2, 3, 4}, Shape{4, 1}}) {
    INFO("shape ", shape_str(shape));
    Tensor x = variable(shape, 3);
    expect_gradients("softmax", [](auto& in) { return softmax(in[0]); }, {x});
    expect_gradients("log_softmax", [](auto& in) { return log_softmax(in[0]); }, {x});
  }
}

TEST_CASE("layer_norm of a constant row gives the bias") {
  Tensor x = full({2, 4}, 3.5, DType::f64);
  Tensor w = from_vector(std::vector<double>{1, 2, 3, 4}, {4});
  Tensor b = from_vector(std::vector<double>{0.5, -1, 2, 0}, {4});
  CHECK(layer_norm(x, w, b).to_vector() == std::vector<double>{0.5, -1, 2, 0, 0.5, -1, 2, 0});
}

TEST_CASE("layer_norm matches a hand computation") {
  // mean 2.5, biased variance 1.25, eps inside the sqrt
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4}, {1, 4});
  Tensor w = from_vector(std::vector<double>{1, 2, -1, 0.5}, {4});
  Tensor b = from_vector(std::vector<double>{0, 1, 0, -2}, {4});
  const double r = 1 / std::sqrt(1.25 + 1e-6);
  const std::vector<double> want{-1.5 * r, 2 * -0.5 * r + 1, -0.5 * r, 0.5 * 1.5 * r - 2};
  for (DType dt : {DType::f64, DType::f32}) {
    const std::vector<double> y = layer_norm(x.to(dt), w.to(dt), b.to(dt), 1e-6).to_vector();
    for (int i = 0; i < 4; ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
  // far from zero the two-pass variance keeps full precision
  Tensor shifted = from_vector(std::vector<double>{1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4}, {1, 4});
  const std::vector<double> y = layer_norm(shifted, Tensor(), Tensor(), 1e-6).to_vector();
  CHECK(y[0] == doctest::Approx(-1.5 * r).epsilon(1e-9));
}

TEST_CASE("layer_norm rows of dx sum to zero and are orthogonal to x-hat") {
  Tensor x = variable({5, 7}, 4, 2.0), w = variable({7}, 5), b = variable({7}, 6);
  Tensor dy = variable({5, 7}, 7).detach();
  // Sum(dx * xhat) = r * eps / (var + eps) * sum(g * xhat): exactly zero only for eps = 0.
  layer_norm(x, w, b, 0.0).backward(dy);
  Tensor xhat = layer_norm(x.detach(), Tensor(), Tensor(), 0.0);
  for (double s : row_sums(x.grad())) CHECK(std::fabs(s) < 1e-12);
  for (double s : row_sums(x.grad() * xhat)) CHECK(std::fabs(s) < 1e-12);
}

TEST_CASE("layer_norm passes gradcheck for x, weight and bias on 2-D, 3-D and 4-D inputs") {
  for (const Shape& shape : {Shape{5, 6}, Shape{2, 3, 4}, Shape{2, 2, 3, 4}}) {
    const int64_t C = shape.back();
    Tensor x = variable(shape, 8), w = variable({C}, 9, 1.0), b = variable({C}, 10);
    for (int with = 0; with < 4; ++with) {
      Tensor wi = with & 1 ? w : Tensor(), bi = with & 2 ? b : Tensor();
      INFO("shape ", shape_str(shape), " weight ", wi.defined(), " bias ", bi.defined());
      expect_gradients("layer_norm", [](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-6); },
                       {x, wi, bi});
    }
  }
}

TEST_CASE("layer_norm and softmax match their composed references") {
  Tensor x = variable({3, 4, 6}, 11), w = variable({6}, 12), b = variable({6}, 13);
  Tensor dy = variable({3, 4, 6}, 14).detach();
  layer_norm(x, w, b, 1e-5).backward(dy);
  const Tensor dx = x.grad(), dw = w.grad(), db = b.grad();
  for (Tensor t : {x, w, b}) t.zero_grad();
  reference_layer_norm(x, w, b, 1e-5).backward(dy);
  const std::vector<std::pair<Tensor, Tensor>> pairs{
      {dx, x.grad()}, {dw, w.grad()}, {db, b.grad()}};
  for (const auto& [fused, ref] : pairs) {
    CHECK(max(abs(fused - ref)).item() < 1e-12);
  }
  CHECK(max(abs(layer_norm(x, w, b, 1e-5) - reference_layer_norm(x, w, b, 1e-5))).item() < 1e-12);
  CHECK(max(abs(softmax(x) - reference_softmax(x))).item() < 1e-15);
}

TEST_CASE("layer_norm, softmax and cross_entropy give the same bits with 1 and 2 threads") {
  const int previous = num_threads();
  Tensor x = variable({3000, 48}, 15).detach().to(DType::f32);
  Tensor w = variable({48}, 16).detach().to(DType::f32),
         b = variable({48}, 17).detach().to(DType::f32);
  Tensor dy = variable({3000, 48}, 18).detach().to(DType::f32);
  std::vector<int32_t> labels(3000);
  for (int i = 0; i < 3000; ++i) labels[i] = i % 48;
  auto run = [&](int threads) {
    set_num_threads(threads);
    for (Tensor t : {x, w, b}) t.set_requires_grad().zero_grad();
    Tensor y = layer_norm(x, w, b);
    y.backward(dy);
    std::vector<std::vector<double>> r{y.to_vector(), x.grad().to_vector(), w.grad().to_vector(),
                                       b.grad().to_vector()};
    x.zero_grad();
    Tensor s = softmax(x);
    s.backward(dy);
    r.push_back(s.to_vector());
    r.push_back(x.grad().to_vector());
    x.zero_grad();
    Tensor loss = cross_entropy(x, labels, 0.1);
    loss.backward();
    r.push_back(loss.to_vector());
    r.push_back(x.grad().to_vector());
    return r;
  };
  const auto one = run(1), two = run(2);
  set_num_threads(previous);
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("result ", i);
    CHECK(one[i] == two[i]);
  }
}

TEST_CASE("cross_entropy of uniform logits is ln K, with or without smoothing") {
  Tensor z = zeros({4, 10}, DType::f64);
  for (double eps : {0.0, 0.1}) {
    CHECK(cross_entropy(z, {0, 3, 9, 5}, eps).item() == doctest::Approx(2.302585093).epsilon(1e-9));
  }
}

TEST_CASE("cross_entropy with label smoothing 0.1 over 10 classes bottoms out at 0.500288") {
  // logits log(q) make softmax equal the smoothed target q, the minimum: H(q), not 0.
  std::vector<double> logq(10, std::log(0.01));
  logq[3] = std::log(0.91);
  Tensor z = from_vector(logq, {1, 10}).set_requires_grad();
  Tensor loss = cross_entropy(z, {3}, 0.1);
  CHECK(loss.item() == doctest::Approx(0.500288).epsilon(1e-6));
  loss.backward();
  CHECK(max(abs(z.grad())).item() < 1e-15);
}

TEST_CASE("cross_entropy gradients are (softmax - q) / B and sum to zero per sample") {
  Tensor z = variable({5, 7}, 19);
  const std::vector<int32_t> labels{0, 6, 2, 2, 4};
  cross_entropy(z, labels, 0.1).backward();
  for (double s : row_sums(z.grad())) CHECK(std::fabs(s) < 1e-16);
  Tensor p = softmax(z.detach());
  for (int64_t b = 0; b < 5; ++b) {
    for (int64_t k = 0; k < 7; ++k) {
      const double q = (k == labels[b] ? 0.9 : 0.0) + 0.1 / 7;
      CHECK(z.grad().at({b, k}) == doctest::Approx((p.at({b, k}) - q) / 5).epsilon(1e-12));
    }
  }
  CHECK(cross_entropy(z, labels, 0.1).item() ==
        doctest::Approx(reference_cross_entropy(z, labels, 0.1).item()).epsilon(1e-13));
}

TEST_CASE("soft-target cross_entropy equals hard cross_entropy with one-hot targets") {
  Tensor z = variable({4, 6}, 20);
  const std::vector<int32_t> labels{5, 0, 3, 3};
  Tensor onehot = zeros({4, 6}, DType::f64);
  for (int64_t b = 0; b < 4; ++b) onehot.set_at({b, labels[b]}, 1);
  Tensor soft = cross_entropy(z, onehot);
  soft.backward();
  const Tensor soft_grad = z.grad();
  z.zero_grad();
  Tensor hard = cross_entropy(z, labels);
  hard.backward();
  CHECK(soft.item() == doctest::Approx(hard.item()).epsilon(1e-14));
  CHECK(max(abs(soft_grad - z.grad())).item() < 1e-16);
}

TEST_CASE("cross_entropy passes gradcheck with and without smoothing and with soft targets") {
  Tensor z = variable({4, 5}, 21);
  const std::vector<int32_t> labels{1, 4, 0, 1};
  for (double eps : {0.0, 0.1, 1.0}) {
    INFO("label_smoothing ", eps);
    expect_gradients("cross_entropy", [&](auto& in) { return cross_entropy(in[0], labels, eps); },
                     {z});
  }
  Tensor t = softmax(variable({4, 5}, 22).detach() * 2.0);
  expect_gradients("soft cross_entropy", [&](auto& in) { return cross_entropy(in[0], t); }, {z});
}

TEST_CASE("dropout keeps about 1 - p of the elements and scales them by 1 / (1 - p)") {
  Rng rng(23);
  Tensor x = ones({100, 100});
  Tensor y = dropout(x, 0.3, rng);
  int64_t kept = 0;
  for (double v : y.to_vector()) {
    if (v != 0) {
      CHECK(v == doctest::Approx(1 / 0.7).epsilon(1e-7));
      ++kept;
    }
  }
  CHECK(std::fabs(kept / 10000.0 - 0.7) < 0.02);
}

TEST_CASE("dropout is the identity in eval mode and for p = 0, and a seed fixes its mask") {
  Rng rng(24);
  Tensor x = variable({3, 8}, 25);
  CHECK(dropout(x, 0.5, rng, false).impl() == x.impl());
  CHECK(dropout(x, 0.0, rng, true).impl() == x.impl());
  Rng a(26), b(26);
  CHECK(dropout(x, 0.5, a).to_vector() == dropout(x, 0.5, b).to_vector());
  // The backward reuses the mask: dx = dy * mask / (1 - p), i.e. y / x here.
  Rng c(27);
  Tensor y = dropout(x, 0.25, c);
  sum(y).backward();
  CHECK(max(abs(x.grad() * x.detach() - y.detach())).item() < 1e-15);
}

TEST_CASE("dropout passes gradcheck with a fixed mask") {
  Tensor x = variable({4, 6}, 28);
  expect_gradients(
      "dropout",
      [](auto& in) {
        Rng rng(29);  // reseeded on every call, so every evaluation draws the same mask
        return dropout(in[0], 0.4, rng);
      },
      {x});
}

TEST_CASE("nn ops reject bad input with the op name and the numbers") {
  Tensor z = zeros({4, 10}, DType::f64);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 3, 4}), {0, 1}),
                       "cross_entropy: logits must be (B, K), got shape [2,3,4]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 1, 2}),
                       "cross_entropy: 3 labels for a batch of 4 (logits shape [4,10])", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 10, 2, 3}),
                       doctest::Contains("label 10 at batch index 1 is outside [0, 10)"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 1, 2, -1}), doctest::Contains("label -1"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, {0, 1, 2, 3}, 1.5),
                       doctest::Contains("label_smoothing must be in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(z, zeros({4, 9}, DType::f64)),
                       doctest::Contains("targets of shape [4,9] do not match logits"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 4}), ones({5}), Tensor()),
                       "layer_norm: weight has shape [5], expected [4] (input shape [2,4])", Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 4}), Tensor(), ones({4}, DType::f64)),
                       doctest::Contains("layer_norm: bias is float64"), Error);
  CHECK_THROWS_WITH_AS(softmax(full({}, 1.0)), doctest::Contains("softmax: input needs"), Error);
  Rng rng(30);
  CHECK_THROWS_WITH_AS(dropout(z, 1.0, rng),
                       doctest::Contains("dropout: p must be in [0, 1), got 1"), Error);
  CHECK_THROWS_AS(dropout(z, -0.1, rng), Error);
}

TEST_CASE("softmax, log_softmax, layer_norm and cross_entropy match PyTorch") {
  const nlohmann::json fx = load_fixture("nn_ops.json");
  for (auto [dt, tol] : {std::pair{DType::f64, 1e-10}, std::pair{DType::f32, 1e-5}}) {
    INFO(dtype_name(dt));
    auto in = [&](const nlohmann::json& j) {
      return j.is_null() ? Tensor() : fixture_tensor(j, dt).set_requires_grad();
    };
    for (const char* op : {"softmax", "log_softmax"}) {
      for (const auto& c : fx.at(op)) {
        Tensor x = in(c["x"]);
        Tensor y = std::string(op) == "softmax" ? softmax(x) : log_softmax(x);
        y.backward(fixture_tensor(c["dy"], dt));
        expect_close(std::string(op) + " y", y, c["y"], tol);
        expect_close(std::string(op) + " dx", x.grad(), c["dx"], tol);
      }
    }
    for (const auto& c : fx.at("layer_norm")) {
      Tensor x = in(c["x"]), w = in(c["weight"]), b = in(c["bias"]);
      Tensor y = layer_norm(x, w, b, c["eps"].get<double>());
      y.backward(fixture_tensor(c["dy"], dt));
      expect_close("layer_norm y", y, c["y"], tol);
      expect_close("layer_norm dx", x.grad(), c["dx"], tol);
      if (w.defined()) expect_close("layer_norm dweight", w.grad(), c["dweight"], tol);
      if (b.defined()) expect_close("layer_norm dbias", b.grad(), c["dbias"], tol);
    }
    for (const auto& c : fx.at("cross_entropy")) {
      Tensor z = in(c["logits"]);
      Tensor loss = cross_entropy(z, c["labels"].get<std::vector<int32_t>>(),
                                  c["label_smoothing"].get<double>());
      loss.backward();
      CHECK(loss.item() == doctest::Approx(c["loss"].get<double>()).epsilon(tol));
      expect_close("cross_entropy dlogits", z.grad(), c["dlogits"], tol);
    }
    for (const auto& c : fx.at("cross_entropy_soft")) {
      Tensor z = in(c["logits"]);
      Tensor loss = cross_entropy(z, fixture_tensor(c["targets"], dt));
      loss.backward();
      CHECK(loss.item() == doctest::Approx(c["loss"].get<double>()).epsilon(tol));
      expect_close("soft cross_entropy dlogits", z.grad(), c["dlogits"], tol);
    }
  }
}

TEST_CASE("nn ops and attention report NaN outputs in anomaly mode, even without grad") {
  Tensor bad = from_vector(std::vector<double>{1, NAN, 3, 4}, {2, 2});
  Tensor q = bad.reshape({1, 1, 2, 2});
  AnomalyGuard anomaly;
  CHECK_THROWS_WITH_AS(layer_norm(bad, Tensor(), Tensor()), doctest::Contains("layer_norm"), Error);
  CHECK_THROWS_WITH_AS(softmax(bad), doctest::Contains("softmax"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(bad, {0, 1}), doctest::Contains("cross_entropy"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, q, q),
                       doctest::Contains("scaled_dot_product_attention"), Error);
}
