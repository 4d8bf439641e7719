// Example 4: training on data of your own, through the same Trainer that `vitgrad train` runs.
//
// The loader, the Trainer and evaluate() read any class that implements vg::data::Dataset:
// its size, the shape of its images, item i (the pixels and the label) and the number of
// classes. Here the data is drawn on the fly, so nothing is stored: 16x16 colour images of a
// red or green square, small (3x3) or large (7x7), somewhere on a noisy background. The class
// is the square's colour and size (4 classes), which a small ViT learns in a hundred steps.
//
// Run: ./build/example_own_dataset   (about a second; it exits with 1 if nothing was learnt)
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "models/run_data.h"
#include "models/trainer/trainer.h"
#include "models/training.h"

class Squares final : public vg::data::Dataset {
 public:
  Squares(int64_t size, uint64_t seed) : size_(size), seed_(seed) {}

  int64_t size() const override { return size_; }
  vg::data::ImageShape image_shape() const override { return {kSide, kSide, 3}; }
  int64_t num_classes() const override { return 4; }
  std::string name() const override { return "squares"; }

  // The loader calls this from several threads at once: each image draws from a generator
  // of its own, seeded by the index, so item i is the same whenever and wherever it is read.
  int32_t item(int64_t index, float* pixels) const override {
    vg::Rng rng(vg::data::derive_seed(seed_, static_cast<uint64_t>(index)));
    const int32_t label = static_cast<int32_t>(rng.below(4));
    const bool big = label & 1, green = label & 2;
    const int64_t side = big ? 7 : 3;
    const int64_t x0 = static_cast<int64_t>(rng.below(kSide - side + 1));
    const int64_t y0 = static_cast<int64_t>(rng.below(kSide - side + 1));
    for (int64_t y = 0; y < kSide; ++y)
      for (int64_t x = 0; x < kSide; ++x) {
        const bool on = x >= x0 && x < x0 + side && y >= y0 && y < y0 + side;
        for (int64_t c = 0; c < 3; ++c) {
          const double lit = on && c == (green ? 1 : 0) ? 0.9 : 0.1;
          const double intensity = std::clamp(lit + 0.1 * rng.normal(), 0.0, 1.0);
          pixels[(y * kSide + x) * 3 + c] = static_cast<float>((intensity - 0.5) / 0.5);
        }
      }
    return label;
  }
  // How item() normalised the intensities. The loader's random crops pad with black, which is
  // (0 - 0.5) / 0.5 on every channel here.
  vg::data::Normalisation normalisation() const override {
    return {{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}};
  }

 private:
  static constexpr int64_t kSide = 16;
  int64_t size_;
  uint64_t seed_;
};

// An observer sees every step of the Trainer; this one keeps the training loss.
struct LossCurve : vg::TrainObserver {
  std::vector<double> losses;
  void on_step(vg::Run&, vg::StepReport& report) override {
    losses.push_back(report.micro_batches[0].loss);
    if (losses.size() % 10 == 0)
      std::printf("step %2zu  loss %.4f\n", losses.size(), losses.back());
  }
};

int main() {
  vg::set_num_threads(1);  // a model this small gains nothing from a second thread
  const auto train = std::make_shared<Squares>(640, /*seed=*/1);
  const auto test = std::make_shared<Squares>(200, /*seed=*/2);

  // The recipe: a small ViT made for the data (16x16x3 images, 4 classes), AdamW, 100 steps.
  vg::TrainOptions options;
  vg::ViTConfig model = vg::preset("fmnist-tiny");
  model.embed_dim = 32;
  model.depth = 2;
  model.num_heads = 2;
  // in_chans 3, num_classes 4 and img_size 16 come from the data (as `vitgrad train` does).
  options.model = vg::fit_model_to_data(model, vg::data::shape_of(*train), false);
  options.steps = 100;
  options.batch = 32;
  options.lr = 3e-3;
  options.warmup = 5;

  // The run holds the model, optimiser, schedule and a loader over our data; the Trainer
  // steps it, telling its observers.
  const std::unique_ptr<vg::Run> run =
      vg::build_run(options, 0, {.train_set = train, .test_set = test});
  LossCurve curve;
  vg::Trainer trainer(*run);
  trainer.add(curve);
  trainer.fit();

  const vg::EvalResult result = vg::evaluate(*run->model, *test);
  const auto mean = [](auto begin, auto end) {
    double sum = 0;
    for (auto it = begin; it != end; ++it) sum += *it;
    return sum / double(end - begin);
  };
  const double first = mean(curve.losses.begin(), curve.losses.begin() + 5);
  const double last = mean(curve.losses.end() - 5, curve.losses.end());
  std::printf(
      "loss %.4f -> %.4f (means of the first and last 5 steps): %s; test accuracy "
      "%.2f%% over %lld images (chance: 25%%)\n",
      first, last, last < first ? "decreased" : "DID NOT DECREASE", 100 * result.accuracy,
      static_cast<long long>(result.count));
  return last < first && result.accuracy > 0.5 ? 0 : 1;
}
