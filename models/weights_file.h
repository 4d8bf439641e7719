// Weights in the files other tools read: a weights-only checkpoint as safetensors (timm's
// parameter names, the config in the metadata) and back.
#pragma once

#include <optional>
#include <string>

#include "engine/core/parameter.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "models/vit_config.h"

namespace vg {

// The metadata keys of vitgrad's safetensors exports. "format": "pt" tells the PyTorch
// world that the tensors have PyTorch's layout.
constexpr const char* kSafetensorsConfigKey = "vitgrad_config";  // ViTConfig as JSON text
constexpr const char* kSafetensorsStepKey = "vitgrad_step";
// The names of the parameters tagged no_weight_decay, as a JSON array, so that an optimiser
// elsewhere (tools/continue_in_pytorch.py) builds the same parameter groups.
constexpr const char* kSafetensorsNoWeightDecayKey = "vitgrad_no_weight_decay";

// The model weights of `weights`, with its config, step and the no-weight-decay names of
// `params` (the model's parameters) in the metadata.
SafeTensors safetensors_of(const Checkpoint& weights, const ParameterList& params);

// A weights-only checkpoint from a safetensors file read from `source`: its tensors, and
// `config` when given, otherwise the config in its metadata (a file without one, such as a
// timm model's, is a vg::Error asking for a config). Names and shapes are checked when the
// checkpoint is restored into a model.
Checkpoint checkpoint_from_safetensors(const SafeTensors& file, const std::string& source,
                                       const std::optional<ViTConfig>& config = std::nullopt);

// A checkpoint from `path`: JSON, or safetensors when the name ends in ".safetensors".
Checkpoint load_weights(const std::string& path);

}  // namespace vg
