// The writing half of json_reader.h: JSON text in which binary values (a large tensor's
// bytes as json_reader.h delivers them) are written as base64 strings, as nlohmann's dump()
// cannot. Within an object, a member holding a "base64" key or a binary value comes after
// the others, so a tensor reads {"dtype", "shape", "base64"} and whatever is short stays at
// the top of the file, readable with `head`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vg {

// Appends the compact (no spaces) text of `j` to `out`.
void append_json(std::string& out, const nlohmann::json& j);

// The size of that text, give or take the numbers: what to reserve before writing.
size_t json_size_hint(const nlohmann::json& j);

}  // namespace vg
