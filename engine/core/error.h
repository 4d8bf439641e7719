// The one exception type of vitgrad, and helpers that build its messages.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace vg {

// Every failure vitgrad reports: bad shapes, bad files, bad flags. The message names the
// op or layer and the numbers involved, e.g.
// "LayerScale(dim=768): input last axis is 512, expected 768 (input shape [2,196,512])".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "[2,196,768]": how shapes appear in every message.
inline void put_shape(std::ostream& out, const std::vector<int64_t>& shape) {
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << ']';
}
inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  put_shape(s, shape);
  return s.str();
}

// One part of a message: anything printable, a shape (printed as shape_str prints it), or a
// function of no arguments that returns one of those, called only when the message is made.
template <class Part>
void put_part(std::ostream& out, const Part& part) {
  if constexpr (std::is_invocable_v<const Part&>)
    put_part(out, part());
  else if constexpr (std::is_same_v<Part, std::vector<int64_t>>)
    put_shape(out, part);
  else
    out << part;
}

// Concatenates its parts (put_part) into one message.
template <class... Parts>
std::string cat_str(const Parts&... parts) {
  std::ostringstream out;
  (put_part(out, parts), ...);
  return out.str();
}

// Throws vg::Error with the concatenated message when `ok` is false. The parts are evaluated
// before the call, so a shape is passed as itself, not as shape_str(shape), and any other part
// that takes work to make as a function that makes it: check(ok, "matmul: ", operands) formats
// nothing while ok holds, where operands() would format on every call.
template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (!ok) throw Error(cat_str(parts...));
}

}  // namespace vg
