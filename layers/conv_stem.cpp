#include "layers/conv_stem.h"

namespace vg::nn {

ConvStem::ConvStem(int64_t img_size, int64_t in_chans, const std::vector<int64_t>& channels,
                   Rng& rng)
    : Module("ConvStem"), img_size_(img_size), in_chans_(in_chans), channels_(channels) {
  check(!channels.empty(), describe(), ": needs at least one stage");
  int64_t previous = in_chans;
  for (size_t i = 0; i < channels.size(); ++i) {
    const std::string stage = std::to_string(i + 1);
    convs_.push_back(register_module(
        "conv" + stage, std::make_shared<Conv2d>(previous, channels[i], 3, 2, 1, rng)));
    acts_.push_back(register_module("act" + stage, std::make_shared<GELU>()));
    previous = channels[i];
  }
}

int64_t ConvStem::output_size(int64_t img_size, size_t stages) {
  for (size_t i = 0; i < stages; ++i) img_size = (img_size + 2 - 3) / 2 + 1;
  return img_size;
}

std::string ConvStem::describe() const {
  return cat_str("ConvStem(img_size=", img_size_, ", in_chans=", in_chans_,
                 ", channels=", shape_str(channels_), ")");
}

Tensor ConvStem::forward(const Tensor& images) {
  const Shape& s = images.shape();
  check(s.size() == 4 && s[1] == img_size_ && s[2] == img_size_ && s[3] == in_chans_, describe(),
        ": images must be (B, ", img_size_, ", ", img_size_, ", ", in_chans_, "), got ",
        shape_str(s));
  Tensor x = images;
  for (size_t i = 0; i < convs_.size(); ++i) x = (*acts_[i])((*convs_[i])(x));
  return x;
}

}  // namespace vg::nn
