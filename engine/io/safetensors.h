// The safetensors format, the weight files of the PyTorch world (timm, Hugging Face):
//
//   8 bytes      N, the header's length, a little-endian uint64
//   N bytes      a JSON object: for each tensor  "name": {"dtype": "F32", "shape": [64, 3],
//                "data_offsets": [begin, end]}, and optionally "__metadata__": {string: string}
//   the rest     the tensors' bytes, little-endian, row-major; offsets count from here
//
// The tensors tile the data exactly: no gaps, no overlaps, nothing after the last one.
#pragma once

#include <map>
#include <string>

#include "engine/core/tensor.h"

namespace vg {

struct SafeTensors {
  std::map<std::string, Tensor> tensors;            // name -> value (float32 or float64)
  std::map<std::string, std::string> metadata;      // "__metadata__", free-form strings
};

// The bytes of a safetensors file holding `file` (float32 tensors as F32, float64 as F64),
// the data laid out in name order.
std::string safetensors_to_bytes(const SafeTensors& file);

// Reads and validates the whole file: the header's length and JSON, every entry's dtype,
// shape and offsets, the tiling of the data. F16 and BF16 tensors become float32 (exactly);
// F32 and F64 keep their type; any other dtype is refused. Each error is one vg::Error that
// names `source` and the entry, e.g.
// "m.safetensors: tensor 'head.weight': data_offsets [0,100] need 120 bytes for shape [10,3] F32".
SafeTensors parse_safetensors(const std::string& bytes, const std::string& source);

// The same, for a file on disk; a file that cannot be read is a vg::Error naming it.
SafeTensors load_safetensors(const std::string& path);
// Writes atomically (temporary file, then rename), as checkpoints are written.
void save_safetensors(const std::string& path, const SafeTensors& file);

// True when `path` names a safetensors file (by its ".safetensors" extension).
bool is_safetensors_path(const std::string& path);

}  // namespace vg
