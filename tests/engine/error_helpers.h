// Checking the one-line vg::Error that bad input must give, shared by the data tests.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"

namespace vg::testing {

// The message of the vg::Error that f throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// f throws one vg::Error line holding every one of `parts`.
template <class F>
void check_error(F&& f, const std::vector<std::string>& parts) {
  const std::string message = error_of(f);
  INFO("message: ", message);
  CHECK(!message.empty());
  CHECK(message.find('\n') == std::string::npos);
  for (const std::string& part : parts) CHECK(message.find(part) != std::string::npos);
}

// f throws one vg::Error line that names `file` and contains `what`.
template <class F>
void check_error(F&& f, const std::string& file, const std::string& what) {
  check_error(f, std::vector<std::string>{file, what});
}

}  // namespace vg::testing
