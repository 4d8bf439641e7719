// RandAugment (Cubuk et al. 2019) for single-channel images, as timm's `rand-mN-...` policy:
// each image gets `num_ops` operations chosen uniformly with replacement; each is applied with
// probability `prob` at magnitude m (on timm's 0..10 scale, drawn from N(m, magnitude_std)
// and clipped to [0, magnitude_max] when magnitude_std > 0).
//
// The operations are timm's `rand` list without Color, which leaves a grey image as it is:
//   AutoContrast, Equalize, Invert, Posterize (keep int(m/10*4) bits), Solarize (invert at
//   and above int(m/10*256)), SolarizeAdd (add int(m/10*110) below 128), Contrast,
//   Brightness, Sharpness (factor m/10*1.8 + 0.1), Rotate (±m/10*30 degrees),
//   ShearX, ShearY (±m/10*0.3), TranslateXRel, TranslateYRel (±m/10*0.45 of the side).
// Like timm (which runs them on PIL images) they act on 8-bit grey levels: the loader turns
// a normalised image back into its bytes and afterwards normalises the result again.
// Geometric operations sample bilinearly and fill uncovered pixels with the data set's mean
// grey (timm's img_mean); timm also picks bicubic at random, which is left out here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/rng.h"

namespace vg::data {

enum class RandOp {
  kAutoContrast, kEqualize, kInvert, kPosterize, kSolarize, kSolarizeAdd, kContrast,
  kBrightness, kSharpness, kRotate, kShearX, kShearY, kTranslateXRel, kTranslateYRel,
};
inline constexpr int kNumRandOps = 14;
const char* rand_op_name(RandOp op);  // timm's name, "Rotate"

struct RandAugmentConfig {
  int64_t num_ops = 2;        // n
  double magnitude = 10;      // m
  double magnitude_std = 0;   // mstd
  double magnitude_max = 10;  // mmax
  double prob = 0.5;          // p: the chance that each chosen operation is applied
  bool operator==(const RandAugmentConfig&) const = default;
};

// Reads timm's policy string "rand-m7-mstd0.5" (keys m, n, mstd, mmax, p after "rand");
// anything else ("inc", "w", another policy) is a vg::Error naming the part.
RandAugmentConfig parse_rand_augment(const std::string& spec);

// One operation with its argument already taken from the magnitude (degrees, shear, share of
// the side, factor, bits, threshold or addend; signed where timm negates at random).
struct RandOpCall {
  RandOp op;
  double arg = 0;
};

// The operations of one image, drawn in timm's order: the choices, then per operation
// applied?, its magnitude and its sign.
std::vector<RandOpCall> draw_rand_augment(const RandAugmentConfig& config, Rng& rng);

// The argument of `op` at magnitude m (before any sign), as timm's level functions give it.
double rand_op_arg(RandOp op, double magnitude);

// Applies one operation to a (H, W) image of grey levels 0..255; `fill` covers what the
// geometric operations leave uncovered.
void apply_rand_op(std::vector<uint8_t>& image, int64_t height, int64_t width,
                   const RandOpCall& call, uint8_t fill);

}  // namespace vg::data
