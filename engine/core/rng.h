// The one random number generator type: xoshiro256** seeded through splitmix64.
//
// It is always passed explicitly (no global generator), and its whole state is plain data,
// so a checkpoint can save it and a resumed run draws exactly the numbers it would have.
#pragma once

#include <array>
#include <cstdint>

namespace vg {

struct RngState {
  std::array<uint64_t, 4> s{};
  bool has_spare_normal = false;  // Box-Muller makes normals in pairs
  double spare_normal = 0.0;
  bool operator==(const RngState& o) const {
    return s == o.s && has_spare_normal == o.has_spare_normal && spare_normal == o.spare_normal;
  }
};

class Rng {
 public:
  explicit Rng(uint64_t seed = 0);

  uint64_t next_u64();
  double uniform();                 // [0, 1) with 53 random bits
  double uniform(double lo, double hi);
  double normal();                  // N(0, 1)
  double normal(double mean, double std) { return mean + std * normal(); }
  uint64_t below(uint64_t n);       // uniform integer in [0, n), unbiased
  bool bernoulli(double p) { return uniform() < p; }

  const RngState& state() const { return state_; }
  void set_state(const RngState& state) { state_ = state; }

 private:
  RngState state_;
};

}  // namespace vg
