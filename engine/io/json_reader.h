// A streaming JSON reader for checkpoints. It builds the nlohmann::json document as
// json::parse would, with two differences that matter at millions of values:
//   - a string under the key "base64" (a large tensor's bytes, json_tensor.h) is decoded as
//     it streams past, into a binary value; its text is never held in memory, and
//   - a file is read a megabyte at a time, so the whole file never is either.
// Reading a checkpoint of N float32 values therefore holds about 4N bytes, not the text's
// 5.3N plus a DOM node per number (see docs/checkpoints.md for the figures).
//
// Strict where a checkpoint must be: a repeated key, invalid UTF-8, a number beyond double's
// range, nesting deeper than kJsonMaxDepth or anything after the document is an error.
// Every error is one vg::Error line naming the source, and the byte or entry.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vg {

inline constexpr int kJsonMaxDepth = 256;

// The document in the file at `path`; errors name `path`.
nlohmann::json read_json_file(const std::string& path);

// The document in `text`; errors name `source`.
nlohmann::json read_json_text(std::string_view text, const std::string& source);

}  // namespace vg
