// Saves and loads the checkpoint of a ViT with AdamW state, timed: the figures behind
// docs/checkpoints.md. A model of the given size takes one AdamW step on random gradients
// (so both moments exist), then its whole state is saved and read back three times each.
//
//   example_checkpoint_timing [dim depth heads mlp_ratio [folder]]   (default 192 12 3 4 /tmp)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <vitgrad/engine/core/rng.h>
#include <vitgrad/engine/io/checkpoint.h>
#include <vitgrad/engine/optim/adamw.h>
#include <vitgrad/engine/optim/param_groups.h>
#include <vitgrad/models/vit.h>

using namespace vg;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
  ViTConfig config;
  config.embed_dim = argc > 1 ? std::stoll(argv[1]) : 192;
  config.depth = argc > 2 ? std::stoll(argv[2]) : 12;
  config.num_heads = argc > 3 ? std::stoll(argv[3]) : 3;
  config.mlp_ratio = argc > 4 ? std::stod(argv[4]) : 4.0;
  const std::filesystem::path folder = argc > 5 ? argv[5] : "/tmp";
  ViT model(config);
  optim::AdamW adamw(optim::param_groups_weight_decay(model.named_parameters(), 0.05));
  Rng rng(1);
  for (Parameter& p : model.named_parameters()) p.tensor.set_grad(randn(p.tensor.shape(), rng));
  adamw.step();

  const double raw = 3.0 * double(model.num_parameters()) * 4;  // weights and two moments
  const std::string path = (folder / "checkpoint_timing.json").string();
  double save = 1e30, load = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();  // a save as training does it: snapshot, encode, write, sync
    Checkpoint c;
    c.config = config.to_json();
    c.model = model.state_dict();
    c.optimizer = adamw.state_to_json();
    save_checkpoint(path, c);
    save = std::min(save, seconds_since(t0));
    t0 = Clock::now();
    const Checkpoint back = load_checkpoint(path);
    load = std::min(load, seconds_since(t0));
  }
  const double bytes = double(std::filesystem::file_size(path));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%lld parameters, raw float32 (weights + 2 moments) %.1f MB\n",
              static_cast<long long>(model.num_parameters()), raw / 1e6);
  std::printf("file %.1f MB (%.3f x raw); save %.3f s, load %.3f s (best of 3)\n", bytes / 1e6,
              bytes / raw, save, load);
  std::printf("peak RSS %.1f MB\n", double(usage.ru_maxrss) / 1024.0);
  std::filesystem::remove(path);
}
