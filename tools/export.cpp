// `vitgrad export`: the weights of a checkpoint (config and model, no optimiser or run
// state), for `vitgrad eval`, `vitgrad train --init` and tools/vitgrad_to_torch.py; or as
// safetensors (timm, PyTorch) or as an ONNX inference graph (docs/interop.md).
#include <filesystem>
#include <iostream>

#include "engine/io/checkpoint.h"
#include "models/onnx_export.h"
#include "models/restore.h"
#include "models/weights_file.h"
#include "tools/args.h"

namespace vg::tools {

int run_export(const std::vector<std::string>& argv) {
  ArgParser args("export", "vitgrad export CKPT -o OUT [--format json|safetensors|onnx] [--ema]",
                 {{"-o", "OUT", "where to write the weights"},
                  {"--format", "F", "json (a weights-only checkpoint, default) | safetensors | onnx"},
                  {"--ema", "", "export the EMA weights the run kept (train --ema D)"}},
                 1, 1);
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help();
    return 0;
  }
  if (!args.has("-o")) args.fail("-o OUT is required");
  const std::string format = args.choice("--format", "json", {"json", "safetensors", "onnx"});
  const std::string path = args.positionals()[0], out = args.text("-o");
  std::error_code ec;
  if (std::filesystem::equivalent(path, out, ec))
    args.fail("-o " + out + " is the checkpoint itself; write the export to another file");
  const Checkpoint weights = weights_only(load_checkpoint(path), path, args.on("--ema"));
  // Load the export into a model before writing it, so what is written is known to load.
  ViT model(checkpoint_config(weights, path));
  restore_checkpoint(weights, path, {.model = &model});
  if (format == "json") save_checkpoint(out, weights);
  if (format == "safetensors") save_safetensors(out, safetensors_of(weights, model.named_parameters()));
  if (format == "onnx") write_file_atomically(out, onnx_model_bytes(model));
  std::cout << "wrote " << out << " (" << model.num_parameters() << " parameters, step "
            << weights.step << ")\n";
  return 0;
}

}  // namespace vg::tools
