#include "engine/optim/schedule.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::optim;
using nlohmann::json;

TEST_CASE("learnable-scaler custom schedule gives the recipe's check values for N=300") {
  const Schedule s = Schedule::learnable_scaler(0.005, 300);  // factor 0.8, threshold 0.5
  const std::pair<int64_t, double> expected[] = {{0, 0.8},        {100, 0.6},      {150, 0.4},
                                                 {175, 0.326627}, {198, 0.259123}, {250, 0.066987},
                                                 {299, 2.7e-5}};
  for (const auto& [e, value] : expected) {
    INFO("epoch ", e, ": multiplier ", s.multiplier(e), ", expected ", value);
    // the check values are rounded to 6 decimals (2.7e-5 to 2 significant digits)
    CHECK(std::abs(s.multiplier(e) - value) <= 5e-7);
    CHECK(s.lr(e) == doctest::Approx(0.005 * s.multiplier(e)));
  }
  // the unrounded values (Python, the recipe's formula in double)
  CHECK(s.multiplier(175) == doctest::Approx(0.3266266473693449).epsilon(1e-14));
  CHECK(s.multiplier(198) == doctest::Approx(0.2591231629491423).epsilon(1e-14));
  CHECK(s.multiplier(299) == doctest::Approx(2.7415317243928428e-05).epsilon(1e-12));
  // continuous at the two joints, and it stays at 0 once the run is over
  CHECK(s.multiplier(149) > s.multiplier(150));
  CHECK(s.multiplier(197) - s.multiplier(198) < 0.004);
  CHECK(s.multiplier(300) == doctest::Approx(0).scale(1));
  CHECK(s.multiplier(400) == s.multiplier(300));
}

TEST_CASE("cosine with warmup follows timm, absolute t after warmup by default") {
  const double base = 5e-4, min_lr = 1e-5, init = 1e-6;
  const Schedule s = Schedule::cosine(base, 100, min_lr, 10, init);
  CHECK(s.lr(0) == init);
  CHECK(s.lr(5) == doctest::Approx(init + 5 * (base - init) / 10));
  // timm's pitfall: at t = warmup_t the cosine already reads cos(pi * 10 / 100)
  const double at_10 = min_lr + 0.5 * (base - min_lr) * (1 + std::cos(M_PI * 0.1));
  CHECK(s.lr(10) == doctest::Approx(at_10).epsilon(1e-14));
  CHECK(s.lr(10) < base);
  CHECK(s.lr(50) == doctest::Approx(min_lr + 0.5 * (base - min_lr)));
  CHECK(s.lr(99) > min_lr);
  CHECK(s.lr(100) == min_lr);
  CHECK(s.lr(1000) == min_lr);
  CHECK(s.multiplier(50) == doctest::Approx(s.lr(50) / base));

  const Schedule prefix = Schedule::cosine(base, 100, min_lr, 10, init, true);
  CHECK(prefix.lr(10) == base);  // the peak is reached exactly
  CHECK(prefix.lr(60) == doctest::Approx(min_lr + 0.5 * (base - min_lr)));
  CHECK(prefix.lr(109) > min_lr);
  CHECK(prefix.lr(110) == min_lr);

  const Schedule plain = Schedule::cosine(1.0, 4);
  CHECK(plain.lr(0) == 1.0);
  CHECK(plain.lr(2) == doctest::Approx(0.5));
  CHECK(plain.lr(4) == 0.0);
}

TEST_CASE("constant and step schedules") {
  const Schedule c = Schedule::constant(0.1);
  CHECK(c.lr(0) == 0.1);
  CHECK(c.lr(12345) == 0.1);
  const Schedule s = Schedule::step(1.0, 30, 0.1);
  CHECK(s.lr(0) == 1.0);
  CHECK(s.lr(29) == 1.0);
  CHECK(s.lr(30) == doctest::Approx(0.1));
  CHECK(s.lr(65) == doctest::Approx(0.01));
}

TEST_CASE("schedules round-trip through JSON and give the same values") {
  const Schedule schedules[] = {Schedule::constant(0.3), Schedule::step(0.1, 7, 0.5),
                                Schedule::cosine(5e-4, 200, 1e-5, 10, 1e-6, true),
                                Schedule::learnable_scaler(0.005, 300, 0.7, 0.4)};
  for (const Schedule& s : schedules) {
    const json j = json::parse(s.to_json().dump());
    INFO(j.dump());
    const Schedule back = Schedule::from_json(j);
    CHECK(back.to_json() == s.to_json());
    for (int64_t t : {0, 1, 9, 10, 57, 150, 199, 250, 400}) CHECK(back.lr(t) == s.lr(t));
  }
}

TEST_CASE("schedule from_json and factories reject bad configurations, naming the field") {
  const auto fails = [](const json& j, const char* expected) {
    INFO("input: ", j.dump());
    CHECK_THROWS_WITH_AS(Schedule::from_json(j), doctest::Contains(expected), Error);
  };
  const json cosine = Schedule::cosine(1e-3, 100, 0, 5, 1e-6).to_json();
  json j = cosine;
  j["kind"] = "linear";
  fails(j, "unknown kind 'linear'");
  j = cosine;
  j.erase("t_initial");
  fails(j, "missing field 't_initial'");
  j = cosine;
  j["t_initial"] = 0;
  fails(j, "t_initial must be >= 1");
  j["t_initial"] = 10.5;
  fails(j, "'t_initial' must be an integer");
  j = cosine;
  j["min_lr"] = "0";
  fails(j, "'min_lr' must be a number");
  j = cosine;
  j["warmup_prefix"] = 0;
  fails(j, "warmup_prefix");
  j = cosine;
  j["gamma"] = 0.1;
  fails(j, "unknown field 'gamma'");
  j = cosine;
  j["base_lr"] = -1;
  fails(j, "base_lr");
  fails(json::array(), "expected an object");
  fails(json{{"base_lr", 1}}, "'kind'");
  j = Schedule::learnable_scaler(1, 10).to_json();
  j["threshold"] = 1.5;
  fails(j, "threshold must be in [0, 1]");
  CHECK_THROWS_WITH_AS(Schedule::step(0.1, 0), doctest::Contains("step_size"), Error);
  CHECK_THROWS_WITH_AS(Schedule::cosine(0.1, 10).lr(-1), doctest::Contains("t must be >= 0"),
                       Error);
}
