// ConvStem: a few 3x3 convolutions (stride 2 unless a stage asks for 1), each followed by GELU
// (and, if asked, a LayerNorm over the channels before it), between the images and the patch
// embedding: the convolutional stem of Xiao et al. 2021 ("Early Convolutions Help
// Transformers See Better") and the convolutional tokenizer of Hassani et al. 2021 (Compact
// Convolutional Transformers).
//
// Why it helps: a linear patch embedding has one matrix product to find the edges and
// textures of a patch, and a transformer has none of a CNN's built-in locality to learn them
// from little data. Small overlapping convolutions give the tokens that bias: neighbouring
// pixels are combined first, a shift of one pixel changes the features little, and the
// transformer attends over local features rather than raw pixels. Xiao et al. report faster,
// more stable training that is less sensitive to the optimiser's settings, and higher
// accuracy at the same cost; Hassani et al. show it is what lets a small transformer match
// CNNs on small data sets. On Fashion-MNIST stride-2 stages alone gained only a few tenths of
// a point over the plain patch embedding in 16 epochs; stages of stride 1, which convolve at
// full resolution before anything is discarded, gained 1 to 1.5 points (docs/experiments.md).
//
// The LayerNorm option normalises each pixel's channels after its convolution, as ConvNeXt
// does in channels-last layout (a BatchNorm needs the batch and differs between training and
// evaluation; this needs neither). Without it the convolutions' outputs drift in scale while
// the transformer's LayerNorms adapt to them; with it every stage starts from unit scale, and
// on Fashion-MNIST the stem model gained about half a point in the same epochs
// (docs/experiments.md).
//
// A stage of stride 2 halves the side, rounding up (28 -> 14 -> 7 -> 4); a stage of stride 1
// keeps it, and adds a convolution at that resolution: a CNN's stride-1 layers, which look at
// every pixel before anything is thrown away. The patch embedding then cuts the last feature
// map, so that patch 1 makes every position of it a token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/layer_norm.h"
#include "layers/module.h"

namespace vg::nn {

// One stage: a 3x3 convolution to `channels` channels with stride 1 or 2. Made from a bare
// channel count, a stage has stride 2, so {32, 64} lists two stride-2 stages.
struct StemStage {
  StemStage(int64_t channels, int64_t stride = 2) : channels(channels), stride(stride) {}
  int64_t channels;
  int64_t stride;
  bool operator==(const StemStage&) const = default;
};

// What follows each convolution before its GELU: nothing, or a LayerNorm over the channels.
enum class StemNorm { none, layernorm };

class ConvStem : public Module {
 public:
  // Stage i (from 1) is the children "conv<i>", Conv2d(the previous stage's channels or
  // in_chans, stages[i-1].channels, kernel_size=3, stride=stages[i-1].stride, padding=1),
  // with StemNorm::layernorm "norm<i>", LayerNorm(stages[i-1].channels), and "act<i>", GELU;
  // the convolutions draw their weights from `rng` in stage order (the norms draw nothing).
  ConvStem(int64_t img_size, int64_t in_chans, const std::vector<StemStage>& stages, Rng& rng,
           StemNorm norm = StemNorm::none);

  // images (B, img_size, img_size, in_chans) -> features (B, S, S, channels.back()),
  // S = output_size().
  Tensor forward(const Tensor& images) override;

  int64_t out_channels() const { return stages_.back().channels; }
  int64_t output_size() const { return output_size(img_size_, stages_); }
  // The side after `stages`: each one (side + 2 - 3) / stride + 1, the side halved and rounded
  // up at stride 2, kept at stride 1.
  static int64_t output_size(int64_t img_size, const std::vector<StemStage>& stages);
  // "ConvStem(img_size=28, in_chans=1, channels=[32,64], strides=[2,2])", with ", norm=layernorm"
  // before the ")" when the stages have norms.
  std::string describe() const;

 private:
  int64_t img_size_, in_chans_;
  std::vector<StemStage> stages_;
  std::vector<std::shared_ptr<Conv2d>> convs_;
  std::vector<std::shared_ptr<LayerNorm>> norms_;  // empty without StemNorm::layernorm
  std::vector<std::shared_ptr<GELU>> acts_;
};

}  // namespace vg::nn
