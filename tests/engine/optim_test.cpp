#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/optim/lamb.h"
#include "engine/optim/sgd.h"
#include "tests/engine/optim_helpers.h"

using namespace vg;
using namespace vg::optim;
using namespace vg::testing;

TEST_CASE("AdamW first step moves each element by about lr*sign(g), decaying p first") {
  const double lr = 0.1, wd = 0.5, eps = 1e-8;
  Parameter p = make_param("w", {1.0, -2.0, 3.0, 0.5}, {4});
  const std::vector<double> p0 = values(p), g = {0.3, -0.01, 5.0, 1e-8};
  set_grad(p, g);
  AdamW opt({make_group("decay", {p}, lr, wd)});
  opt.step();
  const std::vector<double> p1 = values(p);
  for (size_t i = 0; i < 4; ++i) {
    INFO("element ", i);
    // t = 1: m_hat = g, sqrt(v_hat) = |g|, so the Adam part is g / (|g| + eps)
    const double adam = g[i] / (std::abs(g[i]) + eps);
    CHECK(p1[i] == doctest::Approx(p0[i] * (1 - lr * wd) - lr * adam).epsilon(1e-12));
    // decaying after the Adam update would give a visibly different value
    CHECK(std::abs(p1[i] - (p0[i] - lr * adam) * (1 - lr * wd)) > 1e-4);
  }
  CHECK(std::abs(p1[2] - p0[2] * (1 - lr * wd) + lr) < 1e-9);        // |g| >> eps: exactly lr
  CHECK(p1[3] - p0[3] * (1 - lr * wd) == doctest::Approx(-lr / 2));  // |g| = eps: half
  CHECK(opt.step_count() == 1);
}

TEST_CASE("LAMB: ||dp|| = lr*||p|| for decayed tensors, wd=0 tensors take Adam steps, eps 1e-6") {
  const double lr = 0.01;
  Parameter w = random_param("fc.weight", {3, 4}, 1);
  Parameter b = make_param("fc.bias", {0.5, -0.25, 1.0, 0.0}, {4}, true);
  Lamb opt({make_group("decay", {w}, lr, 0.01), make_group("no_decay", {b}, lr, 0.0)}, 0.9, 0.999,
           1e-6, /*max_grad_norm=*/0);
  Rng rng(2);
  for (int step = 1; step <= 2; ++step) {
    INFO("step ", step);
    const std::vector<double> w0 = values(w), b0 = values(b);
    w.tensor.set_grad(randn({3, 4}, rng, DType::f64));
    const std::vector<double> gb = {0.2, -3.0, 1e-6, 0.0};
    set_grad(b, gb);
    opt.step();
    CHECK(l2(minus(values(w), w0)) == doctest::Approx(lr * l2(w0)).epsilon(1e-12));
    if (step == 1) {  // the same gradient twice: m_hat = g, v_hat = g^2 on both steps
      for (size_t i = 0; i < 4; ++i) {
        INFO("bias element ", i);
        CHECK(values(b)[i] ==
              doctest::Approx(b0[i] - lr * gb[i] / (std::abs(gb[i]) + 1e-6)).epsilon(1e-12));
      }
      CHECK(values(b)[2] == doctest::Approx(b0[2] - lr / 2).epsilon(1e-12));
    }
  }
}

TEST_CASE("LAMB trust ratio: 1 for a zero tensor, always_adapt for wd=0, trust_clip caps at 1") {
  const double lr = 0.1;
  Parameter zero = make_param("w", {0, 0, 0}, {3});
  set_grad(zero, {1.0, -2.0, 0.5});
  Lamb opt({make_group("decay", {zero}, lr, 0.1)}, 0.9, 0.999, 1e-6, 0);
  opt.step();  // ||p|| = 0: trust 1, a plain step of g / (|g| + eps)
  CHECK(values(zero)[1] == doctest::Approx(lr * 2.0 / (2.0 + 1e-6)).epsilon(1e-12));

  Parameter a = make_param("a", {3.0, -4.0}, {2}, true);
  set_grad(a, {0.1, 0.1});
  Lamb adapt({make_group("no_decay", {a}, lr, 0.0)}, 0.9, 0.999, 1e-6, 0, true, true,
             /*always_adapt=*/true);
  adapt.step();
  CHECK(l2(minus(values(a), {3.0, -4.0})) == doctest::Approx(lr * 5.0).epsilon(1e-12));

  Parameter big = make_param("big", {300.0, -400.0}, {2});
  set_grad(big, {0.1, 0.1});
  Lamb clipped({make_group("decay", {big}, lr, 1e-6)}, 0.9, 0.999, 1e-6, 0, true, true, false,
               /*trust_clip=*/true);
  clipped.step();  // trust would be ~500/sqrt(2): capped at 1, so dp = -lr * update
  const double u = 1 / (1 + 1e-5) + 1e-6 * 300.0;
  CHECK(values(big)[0] == doctest::Approx(300.0 - lr * u).epsilon(1e-12));
}

TEST_CASE("LAMB divides the gradients in place by max(global norm / max_grad_norm, 1)") {
  Parameter w = make_param("w", {1, 2, 3, 4}, {2, 2});
  Parameter b = make_param("b", {1, 1}, {2}, true);
  for (double max_norm : {1.0, 2.5, 100.0, 0.0}) {
    INFO("max_grad_norm ", max_norm);
    set_grad(w, {3, 0, 0, 4});  // with b: global norm sqrt(9 + 16 + 144) = 13
    set_grad(b, {12, 0});
    Lamb opt({make_group("decay", {w}, 0.01, 0.01), make_group("no_decay", {b}, 0.01)}, 0.9, 0.999,
             1e-6, max_norm);
    opt.step();
    const double clip = max_norm > 0 ? std::max(13.0 / max_norm, 1.0) : 1.0;
    CHECK(opt.last_grad_norm() == doctest::Approx(13.0).epsilon(1e-15));
    CHECK(w.tensor.grad().to_vector() == std::vector<double>{3 / clip, 0, 0, 4 / clip});
    CHECK(b.tensor.grad().to_vector() == std::vector<double>{12 / clip, 0});
  }
}

TEST_CASE("clip_grad_norm scales by min(1, max_norm / (total + 1e-6)) and returns the total") {
  Parameter w = make_param("w", {0, 0}, {2});
  Parameter b = make_param("b", {0}, {1});
  Parameter frozen = make_param("no_grad", {0}, {1});  // no gradient: ignored
  const ParameterList params = {w, b, frozen};
  set_grad(w, {3, 4});
  set_grad(b, {12});
  CHECK(grad_norm(params) == 13.0);
  CHECK(clip_grad_norm(params, 1.0) == 13.0);
  const double coef = 1.0 / (13.0 + 1e-6);
  CHECK(w.tensor.grad().to_vector() == std::vector<double>{3 * coef, 4 * coef});
  CHECK(b.tensor.grad().to_vector() == std::vector<double>{12 * coef});
  // Below the threshold and with max_norm <= 0 nothing changes, but the norm is returned.
  set_grad(w, {3, 4});
  set_grad(b, {12});
  CHECK(clip_grad_norm(params, 13.0) == 13.0);  // coef = 13 / (13 + 1e-6) < 1: scaled
  CHECK(w.tensor.grad().to_vector()[0] == 3 * (13.0 / (13.0 + 1e-6)));
  set_grad(w, {3, 4});
  CHECK(clip_grad_norm(params, 14.0) == doctest::Approx(13.0));
  CHECK(w.tensor.grad().to_vector() == std::vector<double>{3, 4});
  CHECK(clip_grad_norm(params, 0.0) == doctest::Approx(13.0));
  CHECK(w.tensor.grad().to_vector() == std::vector<double>{3, 4});
  // A non-finite norm is reported and the gradients are left alone.
  set_grad(b, {INFINITY});
  CHECK(std::isinf(clip_grad_norm(params, 1.0)));
  CHECK(w.tensor.grad().to_vector() == std::vector<double>{3, 4});
  CHECK(grad_norm({frozen}) == 0.0);
}

TEST_CASE("SGD momentum, nesterov and weight decay: the first two steps by hand") {
  struct Case {
    double momentum, dampening;
    bool nesterov;
    double p1, p2;
  };
  // lr 0.1, wd 0.1, p0 = 1, g = 0.5 on both steps; d = g + wd * p.
  const Case cases[] = {
      {0.0, 0.0, false, 0.94, 0.94 - 0.1 * 0.594},  // plain: p -= lr * d
      {0.9, 0.0, false, 0.94, 0.8266},              // buf1 = d1 = 0.6; buf2 = 0.54 + 0.594
      {0.9, 0.5, false, 0.94, 0.8563},              // no dampening on the first step
      {0.9, 0.0, true, 0.886, 0.725566},            // d + momentum * buf
  };
  for (const Case& c : cases) {
    INFO("momentum ", c.momentum, " dampening ", c.dampening, " nesterov ", c.nesterov);
    Parameter p = make_param("w", {1.0}, {1});
    SGD opt({make_group("decay", {p}, 0.1, 0.1)}, c.momentum, c.dampening, c.nesterov);
    set_grad(p, {0.5});
    opt.step();
    CHECK(values(p)[0] == doctest::Approx(c.p1).epsilon(1e-14));
    opt.step();
    CHECK(values(p)[0] == doctest::Approx(c.p2).epsilon(1e-14));
    CHECK(p.tensor.grad().to_vector()[0] == 0.5);  // SGD leaves the gradient alone
  }
  Parameter p = make_param("w", {1.0}, {1});
  CHECK_THROWS_WITH_AS(SGD({make_group("g", {p}, 0.1)}, 0.9, 0.1, true),
                       doctest::Contains("nesterov"), Error);
}

TEST_CASE("per-group options override the optimiser's defaults") {
  Parameter a = make_param("a", {1.0}, {1}), b = make_param("b", {1.0}, {1});
  ParamGroup ga = make_group("a", {a}, 0.1), gb = make_group("b", {b}, 0.1);
  gb.options["momentum"] = 0;
  SGD opt({ga, gb}, 0.9);
  CHECK(opt.groups()[0].options.at("momentum") == 0.9);
  CHECK(opt.groups()[1].options.at("momentum") == 0);
  for (int i = 0; i < 2; ++i) {
    set_grad(a, {1.0});
    set_grad(b, {1.0});
    opt.step();
  }
  CHECK(values(a)[0] == doctest::Approx(1 - 0.1 - 0.1 * 1.9));
  CHECK(values(b)[0] == doctest::Approx(1 - 0.2));
  ParamGroup typo = make_group("t", {make_param("t", {1.0}, {1})}, 0.1);
  typo.options["beta_1"] = 0.5;
  CHECK_THROWS_WITH_AS(AdamW({typo}), doctest::Contains("unknown option 'beta_1'"), Error);
  ParamGroup bad = make_group("t", {make_param("t", {1.0}, {1})}, 0.1);
  bad.options["beta2"] = 1.0;
  CHECK_THROWS_WITH_AS(Lamb({bad}), doctest::Contains("beta2 must be in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(AdamW({make_group("x", {a}, 0.1), make_group("y", {a}, 0.1)}),
                       doctest::Contains("'a' appears twice"), Error);
}

TEST_CASE("set_lr applies lr_scale, zero_grad drops every gradient") {
  Parameter a = make_param("a", {1.0}, {1}), b = make_param("b", {1.0}, {1});
  ParamGroup ga = make_group("a", {a}, 0), gb = make_group("b", {b}, 0);
  gb.lr_scale = 0.25;
  AdamW opt({ga, gb});
  opt.set_lr(0.2);
  CHECK(opt.groups()[0].lr == 0.2);
  CHECK(opt.groups()[1].lr == 0.05);
  set_grad(a, {1.0});
  set_grad(b, {1.0});
  opt.zero_grad();
  CHECK(!a.tensor.grad().defined());
  CHECK(!b.tensor.grad().defined());
  CHECK(opt.all_params().size() == 2);
  CHECK(opt.all_params()[1].name == "b");
}

TEST_CASE("default hyper-parameters are PyTorch's (AdamW) and timm's (LAMB)") {
  Parameter p = make_param("w", {1.0}, {1});
  const AdamW adamw({make_group("g", {p}, 1e-3)});
  const auto& a = adamw.groups()[0].options;
  CHECK(a.at("beta1") == 0.9);
  CHECK(a.at("beta2") == 0.999);
  CHECK(a.at("eps") == 1e-8);
  const Lamb lamb({make_group("g", {p}, 1e-3)});
  const auto& l = lamb.groups()[0].options;
  CHECK(l.at("beta1") == 0.9);
  CHECK(l.at("beta2") == 0.999);
  CHECK(l.at("eps") == 1e-6);  // not Adam's 1e-8
  CHECK(lamb.max_grad_norm() == 1.0);
  CHECK(l.at("bias_correction") == 1);
  CHECK(l.at("grad_averaging") == 1);
  CHECK(l.at("always_adapt") == 0);
  CHECK(l.at("trust_clip") == 0);
  const SGD sgd({make_group("g", {p}, 0.1)});
  CHECK(sgd.groups()[0].options.at("momentum") == 0.0);  // torch.optim.SGD's default
  CHECK(sgd.groups()[0].options.at("nesterov") == 0);
}
