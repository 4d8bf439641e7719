// The CMake package: a program outside the tree builds against vitgrad installed to a
// prefix (find_package), as a subproject (add_subdirectory) and through pkg-config, and runs.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/tools/cli_helpers.h"

namespace fs = std::filesystem;

// A sanitizer build's library needs the sanitizer runtimes in every program that links it, so
// the package is checked in ordinary builds only (make test); make asan leaves it out.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif

TEST_CASE("a consumer builds and runs with find_package, add_subdirectory and pkg-config" *
          doctest::skip(kSanitizerBuild)) {
  const fs::path build = fs::path(VG_VITGRAD_EXE).parent_path();
  const fs::path work = build / "package_test";  // kept between runs: the compiler cache hits
  fs::remove_all(work / "prefix");
  fs::remove_all(work / "found");
  const fs::path log = work.string() + ".log";
  const std::string command = std::string(VG_SOURCE_DIR) + "/tests/package/check_package.sh " +
                              VG_SOURCE_DIR + " " + build.string() + " " + work.string() + " >" +
                              log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  const std::string out = vg::testing::read_text(log);
  INFO(out);
  REQUIRE(status == 0);
  CHECK(out.find("lib/libvitgrad.a") != std::string::npos);
  CHECK(out.find("include/vitgrad/engine/core/tensor.h") != std::string::npos);
  CHECK(out.find("lib/cmake/vitgrad/vitgradConfig.cmake") != std::string::npos);
  CHECK(out.find("lib/pkgconfig/vitgrad.pc") != std::string::npos);
  CHECK(out.find("bin/vitgrad") != std::string::npos);
  for (const char* way : {"find_package: ", "add_subdirectory: ", "pkg-config: "}) {
    const size_t at = out.find(way);
    REQUIRE_MESSAGE(at != std::string::npos, way);
    CHECK(out.substr(at, out.find('\n', at) - at).find("checkpoint round-trips") !=
          std::string::npos);
  }
}
