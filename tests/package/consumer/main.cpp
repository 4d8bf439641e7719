// A user's program: a small ViT, one AdamW step, its checkpoint saved and read back.
#include <vitgrad/engine/io/checkpoint.h>
#include <vitgrad/engine/ops/ops.h>
#include <vitgrad/engine/optim/adamw.h>
#include <vitgrad/engine/optim/param_groups.h>
#include <vitgrad/models/vit.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

int main(int argc, char** argv) {
  vg::ViTConfig config;
  config.embed_dim = 16;
  config.depth = 1;
  config.num_heads = 2;
  vg::ViT model(config, 1);
  vg::optim::AdamW adamw(vg::optim::param_groups_weight_decay(model.named_parameters(), 0.05));
  vg::Rng rng(2);
  const vg::Tensor images = vg::randn({2, config.img_size, config.img_size, config.in_chans}, rng);
  vg::Tensor loss = vg::cross_entropy(model.forward(images), {3, 7});
  loss.backward();
  adamw.step();

  vg::Checkpoint c;
  c.config = config.to_json();
  c.model = model.state_dict();
  c.optimizer = adamw.state_to_json();
  const std::string path = (std::filesystem::path(argc > 1 ? argv[1] : ".") / "c.json").string();
  vg::save_checkpoint(path, c);
  const vg::Checkpoint back = vg::load_checkpoint(path);
  bool same = back.model.size() == c.model.size();
  for (const auto& [name, t] : c.model)
    same = same && std::memcmp(back.model.at(name).raw_data(), t.raw_data(), t.numel() * 4) == 0;
  std::printf("consumer: %lld parameters, loss %.4f, checkpoint %s\n",
              static_cast<long long>(model.num_parameters()), loss.item(),
              same ? "round-trips" : "DIFFERS");
  return same ? 0 : 1;
}
