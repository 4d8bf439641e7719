// The example programs of tools/examples/ run as a reader would run them, and what they print
// says that they did what their comments promise.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <string>

namespace {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

Run run_example(const std::string& name) {
  const std::string command = std::string(VG_EXAMPLES_DIR) + "/example_" + name + " 2>&1";
  Run r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool has_line(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

}  // namespace

TEST_CASE("example_gradient: backward agrees with the formula and with gradcheck") {
  const Run r = run_example("gradient");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(has_line(r.out, "^dL/dw = tensor\\(\\[3,1\\], float64\\)"));
  CHECK(has_line(r.out, "^x\\^T \\(p - y\\) / N matches dL/dw"));
  CHECK(has_line(r.out, "^gradcheck: passed: .* over 4 elements"));  // w (3) and b (1)
}

TEST_CASE("example_custom_layer: DyT and the block built with it pass gradcheck") {
  const Run r = run_example("custom_layer");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  // The block's parameters include the reader's layer under the names it registered.
  CHECK(has_line(r.out,
                 "^DyTBlock\\(dim=8, heads=2\\): \\d+ parameters: norm1\\.alpha "
                 "norm1\\.weight norm1\\.bias attn\\.qkv\\.weight"));
  CHECK(has_line(
      r.out, "^DyT gradcheck: passed: .* over 97 elements"));  // x 80, alpha 1, weight 8, bias 8
  CHECK(has_line(r.out, "^DyTBlock gradcheck: passed"));
}

TEST_CASE("example_train_loop: the loss falls and the test accuracy is well above chance") {
  const Run r = run_example("train_loop");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m,
                            std::regex("loss ([0-9.]+) -> ([0-9.]+): decreased; "
                                       "test accuracy ([0-9.]+)%")));
  const double first = std::stod(m[1]), last = std::stod(m[2]), accuracy = std::stod(m[3]);
  CHECK(last < 0.8 * first);
  CHECK(accuracy > 20.0);
}

TEST_CASE("example_own_dataset: the Trainer learns a data set the program draws itself") {
  const Run r = run_example("own_dataset");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(has_line(r.out, "^step 100  loss [0-9.]+$"));  // the observer saw every step
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m,
                            std::regex("loss ([0-9.]+) -> ([0-9.]+) \\(means of the first and "
                                       "last 5 steps\\): decreased; test accuracy ([0-9.]+)% "
                                       "over 200 images")));
  const double first = std::stod(m[1]), last = std::stod(m[2]), accuracy = std::stod(m[3]);
  CHECK(last < 0.5 * first);
  CHECK(accuracy > 60.0);  // chance: 25%
}
