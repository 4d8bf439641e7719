// Example 3: a training loop over the library, on synthetic images.
//
// The loop that `vitgrad train` runs, without what a real run adds around it (metrics
// files, progress line, checkpoints, divergence guard): a small ViT learns to tell ten
// classes of drawn shapes apart. Each step is the same five lines as in any framework:
// forward, loss, zero_grad, backward, optimiser step.
//
// Run: ./build/example_train_loop   (about a second; it exits with 1 if the loss did not fall)
#include <cstdio>

#include "engine/autograd/autograd.h"
#include "engine/core/parallel.h"
#include "engine/data/loader.h"
#include "engine/data/synthetic.h"
#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/schedule.h"
#include "models/vit.h"

int main() {
  // One thread: in a model this small a second one would wait more than it works. Results
  // are the same bits at any thread count.
  vg::set_num_threads(1);
  // The model: the default preset made smaller (7x7 patches give 16 tokens plus the cls).
  vg::ViTConfig config = vg::preset("fmnist-tiny");
  config.patch_size = 7;
  config.embed_dim = 32;
  config.depth = 2;
  config.num_heads = 2;
  vg::ViT model(config, /*seed=*/0);

  // Data: 28x28 images of ten shape classes, generated from a seed (no download).
  const vg::data::TensorDataset train = vg::data::make_synthetic("train", 1024, /*seed=*/0);
  const vg::data::TensorDataset test = vg::data::make_synthetic("test", 256, /*seed=*/0);
  vg::data::Loader loader(train, /*batch_size=*/64, /*shuffle=*/true, /*augment=*/false,
                          /*seed=*/0);

  // AdamW over timm's two groups: weight decay on the weight matrices, none on biases, norms
  // and embeddings (each parameter says which through its no_weight_decay tag).
  vg::optim::AdamW optimizer(vg::optim::param_groups_weight_decay(model.named_parameters(), 0.05));
  const int steps = 96;  // six epochs of 16 batches
  vg::optim::Schedule schedule = vg::optim::Schedule::cosine(3e-3, steps, 1e-5, /*warmup=*/10);

  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < steps; ++step) {
    optimizer.set_lr(schedule.lr(step));
    vg::data::Batch batch = loader.next();
    vg::Tensor loss = vg::cross_entropy(model(batch.images), batch.labels);
    optimizer.zero_grad();  // drop the last step's gradients ...
    loss.backward();        // ... fill every parameter's .grad() ...
    optimizer.step();       // ... and move the weights
    if (step == 0) first_loss = loss.item();
    if (step % 16 == 15) std::printf("step %2d  loss %.4f\n", step + 1, loss.item());
    last_loss = loss.item();
  }

  // Evaluation: dropout off (eval mode) and no graph recorded, in the test set's order.
  model.eval();
  vg::NoGradGuard no_grad;
  int64_t correct = 0;
  for (const vg::data::Batch& batch : vg::data::InOrder(test, 128)) {
    vg::Tensor logits = model(batch.images);  // (n, 10), float32
    const float* row = logits.data<float>();
    for (size_t i = 0; i < batch.labels.size(); ++i, row += 10) {
      int best = 0;
      for (int k = 1; k < 10; ++k) best = row[k] > row[best] ? k : best;
      correct += best == batch.labels[i];
    }
  }
  const double accuracy = double(correct) / double(test.size());
  std::printf("loss %.4f -> %.4f: %s; test accuracy %.2f%% (chance: 10%%)\n", first_loss, last_loss,
              last_loss < first_loss ? "decreased" : "DID NOT DECREASE", 100 * accuracy);
  return last_loss < first_loss && accuracy > 0.2 ? 0 : 1;
}
