// Checkpoints: one JSON document holding everything a run needs to go on exactly where it
// stopped (every field in docs/checkpoints.md):
//   { "format": "vitgrad-checkpoint", "version": 2, "step": N, "config": {...},
//     "scheduler": {...}, "rng": {...}, "data": {...}, "extra": {...}, "optimizer": {...},
//     "model": {...} }
// Everything but the tensors reads as plain JSON; a large tensor's values are its float32
// bytes in base64 (json_tensor.h), so the file is about 1.33 times the raw bytes and a
// value reads back to the same bits. Version 1 files (every value a number) still load.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"

namespace vg {

struct Checkpoint {
  nlohmann::json config = nlohmann::json::object();     // the model's ViTConfig
  std::map<std::string, Tensor> model;                  // parameter name -> value
  nlohmann::json optimizer = nullptr;                   // null in a weights-only export
  nlohmann::json scheduler = nullptr;
  nlohmann::json rng = nlohmann::json::object();        // name -> generator state
  nlohmann::json data = nlohmann::json::object();       // loader position
  int64_t step = 0;
  nlohmann::json extra = nlohmann::json::object();      // metrics worth keeping (best accuracy)
};

constexpr const char* kCheckpointFormat = "vitgrad-checkpoint";
constexpr int kCheckpointVersion = 2;  // the version written; 1 and 2 are read

// Writes atomically: a temporary file in the same folder, flushed to disk, then renamed over
// `path`. A crash during the write leaves the previous file intact.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Reads and validates the whole document (format, version, every section's type, every
// tensor's shape, dtype and values) and returns it; nothing outside is touched. Errors are a
// vg::Error naming the file and the entry. The file is streamed (json_reader.h): what is
// held at the end is about the tensors' bytes, never the text or a node per number.
Checkpoint load_checkpoint(const std::string& path);

// The same as JSON text, for tests and fuzzers; `source` names it in messages.
Checkpoint parse_checkpoint(const std::string& text, const std::string& source);
std::string checkpoint_to_string(const Checkpoint& checkpoint);

// Writes `text` to `path` atomically (temporary file, fsync, rename).
void write_file_atomically(const std::string& path, const std::string& text);
// Deletes the temporary files that writers killed mid-write left in `folder` (those whose
// process is gone); the files they were replacing are intact.
void remove_stale_temporaries(const std::string& folder);

}  // namespace vg
