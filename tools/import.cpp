// `vitgrad import`: weights from a safetensors file (a timm VisionTransformer's, or a vitgrad
// export) as a weights-only checkpoint, ready for `vitgrad eval` and `vitgrad train --init`.
#include <iostream>

#include "engine/io/checkpoint.h"
#include "models/restore.h"
#include "models/weights_file.h"
#include "tools/args.h"
#include "tools/model_flags.h"

namespace vg::tools {

int run_import(const std::vector<std::string>& argv) {
  std::vector<Flag> flags = model_flags();
  flags.push_back({"-o", "OUT", "the checkpoint to write (.json, or .safetensors)"});
  flags.push_back({"--add-layerscale", "V",
                   "give a model without LayerScale LayerScale at init V (1.0 keeps its "
                   "function), for fine-tuning"});
  ArgParser args("import",
                 "vitgrad import MODEL.safetensors [--config FILE | --preset NAME | model flags] "
                 "[--add-layerscale V] -o OUT.json",
                 flags, 1, 1);
  args.parse(argv);
  if (args.help_requested()) {
    std::cout << args.help()
              << "The model's config comes from the model flags, or else from the file's "
                 "metadata (vitgrad exports carry it; timm files do not).\n";
    return 0;
  }
  if (!args.has("-o")) args.fail("-o OUT is required");
  const std::string path = args.positionals()[0], out = args.text("-o");
  if (!is_safetensors_path(path)) args.fail(path + " is not a .safetensors file");
  bool flags_given = false;
  for (const Flag& f : model_flags()) flags_given = flags_given || args.has(f.name);
  std::optional<ViTConfig> config;
  if (flags_given) config = model_from_flags(args);

  const Checkpoint weights = checkpoint_from_safetensors(load_safetensors(path), path, config);
  ViT model(checkpoint_config(weights, path));
  restore_checkpoint(weights, path, {.model = &model});  // names, shapes and dtypes checked
  if (args.has("--add-layerscale"))
    model.add_layerscale(args.number("--add-layerscale", 1.0, 1e-12, 1e6));

  Checkpoint imported;
  imported.config = model.config().to_json();
  imported.model = model.state_dict();
  imported.step = weights.step;
  if (is_safetensors_path(out))
    save_safetensors(out, safetensors_of(imported, model.named_parameters()));
  else
    save_checkpoint(out, imported);
  std::cout << "wrote " << out << " (" << model.num_parameters() << " parameters"
            << (args.has("--add-layerscale") ? ", LayerScale added" : "") << ")\n";
  return 0;
}

}  // namespace vg::tools
