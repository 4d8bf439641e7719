#include "layers/conv_stem.h"

namespace vg::nn {

ConvStem::ConvStem(int64_t img_size, int64_t in_chans, const std::vector<StemStage>& stages,
                   Rng& rng, StemNorm norm)
    : Module("ConvStem"), img_size_(img_size), in_chans_(in_chans), stages_(stages) {
  check(!stages.empty(), describe(), ": needs at least one stage");
  for (const StemStage& stage : stages)
    check(stage.stride == 1 || stage.stride == 2, describe(), ": a stage's stride must be 1 or 2");
  int64_t previous = in_chans;
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string number = std::to_string(i + 1);
    convs_.push_back(register_module(
        "conv" + number,
        std::make_shared<Conv2d>(previous, stages[i].channels, 3, stages[i].stride, 1, rng)));
    if (norm == StemNorm::layernorm)
      norms_.push_back(
          register_module("norm" + number, std::make_shared<LayerNorm>(stages[i].channels)));
    acts_.push_back(register_module("act" + number, std::make_shared<GELU>()));
    previous = stages[i].channels;
  }
}

int64_t ConvStem::output_size(int64_t img_size, const std::vector<StemStage>& stages) {
  for (const StemStage& stage : stages) img_size = (img_size + 2 - 3) / stage.stride + 1;
  return img_size;
}

std::string ConvStem::describe() const {
  std::vector<int64_t> channels, strides;
  for (const StemStage& stage : stages_) {
    channels.push_back(stage.channels);
    strides.push_back(stage.stride);
  }
  return cat_str("ConvStem(img_size=", img_size_, ", in_chans=", in_chans_,
                 ", channels=", shape_str(channels), ", strides=", shape_str(strides),
                 norms_.empty() ? "" : ", norm=layernorm", ")");
}

Tensor ConvStem::forward(const Tensor& images) {
  const Shape& s = images.shape();
  const auto name = [this] { return describe(); };
  check(s.size() == 4 && s[1] == img_size_ && s[2] == img_size_ && s[3] == in_chans_, name,
        ": images must be (B, ", img_size_, ", ", img_size_, ", ", in_chans_, "), got ", s);
  Tensor x = images;
  for (size_t i = 0; i < convs_.size(); ++i) {
    x = (*convs_[i])(x);
    if (!norms_.empty()) x = (*norms_[i])(x);  // (B, S, S, C): each pixel's C channels
    x = (*acts_[i])(x);
  }
  return x;
}

}  // namespace vg::nn
