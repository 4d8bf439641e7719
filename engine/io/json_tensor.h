// Tensors and generator states as plain JSON, the building blocks of checkpoints and of
// optimiser state. Loss-free: a float32 written and read back is the same bits.
//
//   small tensor: {"shape": [2, 3], "dtype": "float32", "data": [...6 numbers, row-major...]}
//   large tensor: {"shape": [192, 576], "dtype": "float32", "base64": <bytes>}
// A large tensor's values are its little-endian bytes, row-major, as base64 text: a third
// larger than the bytes and a fifth of the numbers' text, and plain JSON wherever it goes.
// (json_reader.h hands them over already decoded, as a binary json value; both forms are
// read.) A tensor is large above kInlineValues values.
//   rng:    {"s": ["0123456789abcdef", x3 more], "has_spare_normal": false,
//            "spare_normal": "0000000000000000"}   (the double's bits, in hex)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"

namespace vg {

inline constexpr int64_t kInlineValues = 64;

// Shape, dtype and values of `t`. A small tensor's values are numbers: each is the double
// the value converts to exactly, in the shortest form that reads back to the same double
// (so float32 values come back bit for bit, -0.0 and denormals included). A large tensor's
// are its bytes. A NaN or Inf is a vg::Error naming `what` (or the tensor's own name when
// `what` is empty).
nlohmann::json tensor_to_json(const Tensor& t, const std::string& what = {});

// A new tensor (not requiring grad) from tensor_to_json's format, either form at any size.
// Checks that "shape" is an array of non-negative integers, "dtype" is float32 or float64,
// "data" holds exactly numel finite numbers that fit the dtype (or "base64" exactly numel
// values' bytes, as binary or as base64 text, all finite), and that no other key is present;
// each error names `what`, e.g. "model 'blocks.0.ls1.gamma': data has 63 values, shape [64]
// needs 64". Nothing of the claimed size is allocated before the values are known to be there.
Tensor tensor_from_json(const nlohmann::json& j, const std::string& what);

// The generator's whole state: the four xoshiro words as 16-digit hex strings and the
// cached Box-Muller normal as the exact bits of its double.
nlohmann::json rng_to_json(const RngState& state);

// The inverse of rng_to_json; a malformed entry (or an all-zero state, from which
// xoshiro256** can never leave) is a vg::Error naming `what`.
RngState rng_from_json(const nlohmann::json& j, const std::string& what);

// What a nlohmann exception says, without its "[json.exception.parse_error.101] " tag.
std::string json_reason(const nlohmann::json::exception& e);

}  // namespace vg
