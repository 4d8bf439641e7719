#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "tests/scratch_dir.h"
#include "tests/tools/xml_check.h"
#include "tools/commands.h"

namespace fs = std::filesystem;
using vg::tools::run_plot;
using vg::tools::UsageError;

namespace {

// A fresh scratch folder per test case (tests/scratch_dir.h), removed at the end.
struct TempDir {
  fs::path root;
  explicit TempDir(const std::string& name) : root(vg::testing::scratch_dir("plot_test_" + name)) {}
  ~TempDir() { fs::remove_all(root); }

  // Writes runs/<run>/metrics.jsonl and returns its path.
  std::string metrics(const std::string& run, const std::string& text) const {
    fs::create_directories(root / run);
    const fs::path path = root / run / "metrics.jsonl";
    std::ofstream(path) << text;
    return path.string();
  }
  std::string out(const std::string& name = "chart.svg") const { return (root / name).string(); }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A short run: `steps` step records with LayerScale and GRN gammas of `depth` blocks, and an
// epoch record every 10 steps.
std::string synthetic_metrics(int steps, int depth, bool gammas = true) {
  std::ostringstream out;
  for (int s = 1; s <= steps; ++s) {
    out << "{\"kind\":\"step\",\"step\":" << s << ",\"epoch\":" << 1 + s / 10
        << ",\"loss\":" << 2.3 / (1 + 0.1 * s) << ",\"accuracy\":" << 0.9 * s / steps
        << ",\"lr\":" << 5e-4 * s / steps << ",\"grad_norm\":1.3,\"images_per_s\":900.0";
    if (gammas) {
      out << ",\"layerscale\":{";
      for (int b = 0; b < depth; ++b)
        out << (b ? "," : "") << "\"blocks." << b << ".ls1\":" << 1e-4 * (1 + 0.05 * s * (b + 1))
            << ",\"blocks." << b << ".ls2\":" << 1.2e-4 * (1 + 0.03 * s * (b + 1));
      out << "},\"grn\":{";
      for (int b = 0; b < depth; ++b)
        out << (b ? "," : "") << "\"blocks." << b << ".mlp.grn\":" << 0.001 * s * (b + 1);
      out << "}";
    }
    out << ",\"future_key\":[1,2]}\n";
    if (s % 10 == 0)
      out << "{\"kind\":\"epoch\",\"step\":" << s << ",\"epoch\":" << s / 10
          << ",\"train_loss\":0.6,\"train_accuracy\":0.7,\"test_loss\":" << 1.5 / (1 + 0.1 * s)
          << ",\"test_accuracy\":" << 0.85 * s / steps << ",\"lr\":0.0005,\"seconds\":51.2}\n";
  }
  return out.str();
}

// Runs `vitgrad plot` and expects a misuse: the exception type, the message, no output file.
template <class E>
void expect_misuse(const std::vector<std::string>& args, const std::string& out,
                   const std::string& message) {
  INFO("args end with " << args.back() << "; expected message: " << message);
  CHECK_THROWS_WITH_AS(run_plot(args), doctest::Contains(message.c_str()), E);
  CHECK_FALSE(fs::exists(out));
}

}  // namespace

TEST_CASE("plot loss draws train loss per step and test loss per epoch") {
  TempDir dir("loss");
  const std::string metrics = dir.metrics("baseline", synthetic_metrics(50, 2));
  REQUIRE(run_plot({metrics, "-o", dir.out()}) == 0);
  const std::string svg = read(dir.out());
  INFO(svg.substr(0, 2000));
  CHECK(vg::testing::xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 2);
  CHECK(svg.find("train (per step)") != std::string::npos);
  CHECK(svg.find("test (per epoch)") != std::string::npos);
  CHECK(svg.find("Loss \u2014 baseline") != std::string::npos);
  CHECK(count(svg, "<circle") >= 5);  // one marker per epoch
  // No temporary file left next to the chart.
  CHECK(std::distance(fs::directory_iterator(dir.root), fs::directory_iterator()) == 2);
}

TEST_CASE("plot accuracy and lr pick their own fields") {
  TempDir dir("acc_lr");
  const std::string metrics = dir.metrics("run", synthetic_metrics(30, 1));
  REQUIRE(run_plot({metrics, "--what", "accuracy", "-o", dir.out("acc.svg")}) == 0);
  const std::string acc = read(dir.out("acc.svg"));
  CHECK(count(acc, "<polyline") == 2);
  CHECK(acc.find("Accuracy") != std::string::npos);
  REQUIRE(run_plot({metrics, "--what=lr", "-o", dir.out("lr.svg")}) == 0);
  const std::string lr = read(dir.out("lr.svg"));
  CHECK(count(lr, "<polyline") == 1);
  CHECK(lr.find("learning rate") != std::string::npos);
  CHECK(lr.find(">0.0005<") != std::string::npos);
}

TEST_CASE("plot layerscale draws every gamma on a log axis coloured by depth") {
  TempDir dir("layerscale");
  const std::string metrics = dir.metrics("ls", synthetic_metrics(40, 12));
  REQUIRE(run_plot({metrics, "--what", "layerscale", "-o", dir.out()}) == 0);
  const std::string svg = read(dir.out());
  CHECK(vg::testing::xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 24);
  CHECK(count(svg, "stroke-dasharray") == 12 + 1);  // the ls2 lines and their legend key
  for (const char* text : {"block 0", "block 11", "ls1 (attention)", "ls2 (MLP)", "10<tspan"}) {
    INFO(std::string(text));
    CHECK(svg.find(text) != std::string::npos);
  }
  // Shallow and deep blocks differ in colour.
  CHECK(count(svg, "<polyline stroke=\"#7ad151\"") == 2);
  CHECK(count(svg, "<polyline stroke=\"#440154\"") == 2);
}

TEST_CASE("plot grn skips the zero gammas of initialisation on its log axis") {
  TempDir dir("grn");
  const std::string metrics = dir.metrics(
      "grn",
      "{\"kind\":\"step\",\"step\":0,\"grn\":{\"blocks.0.mlp.grn\":0,\"blocks.1.mlp.grn\":0}}\n" +
          synthetic_metrics(20, 2));
  REQUIRE(run_plot({metrics, "--what", "grn", "-o", dir.out()}) == 0);
  const std::string svg = read(dir.out());
  CHECK(count(svg, "<polyline") == 2);
  CHECK(svg.find("GRN mean") != std::string::npos);
}

TEST_CASE("plot with several files draws one series per file, named after its folder") {
  TempDir dir("several");
  const std::string a = dir.metrics("ls-1e-4", synthetic_metrics(30, 2));
  const std::string b = dir.metrics("ls-off", synthetic_metrics(20, 2));
  REQUIRE(run_plot({a, b, "--what", "lr", "-o", dir.out()}) == 0);
  std::string svg = read(dir.out());
  CHECK(count(svg, "<polyline") == 2);
  CHECK(svg.find(">ls-1e-4<") != std::string::npos);
  CHECK(svg.find(">ls-off<") != std::string::npos);

  REQUIRE(run_plot({a, b, "-o", dir.out("loss.svg")}) == 0);
  svg = read(dir.out("loss.svg"));
  CHECK(count(svg, "<polyline") == 4);
  CHECK(svg.find("ls-off test") != std::string::npos);

  REQUIRE(run_plot({a, b, "--what", "layerscale", "-o", dir.out("ls.svg")}) == 0);
  svg = read(dir.out("ls.svg"));
  CHECK(count(svg, "<polyline") == 8);
  CHECK(count(svg, "<linearGradient") == 2);  // one depth ramp per run

  // Run folders work as well as their metrics files; --label renames.
  REQUIRE(run_plot({(dir.root / "ls-1e-4").string(), (dir.root / "ls-off").string(), "--label",
                    "LayerScale,none", "--what", "lr", "-o", dir.out("named.svg")}) == 0);
  svg = read(dir.out("named.svg"));
  CHECK(svg.find(">LayerScale<") != std::string::npos);
  CHECK(svg.find(">none<") != std::string::npos);
}

TEST_CASE("plot reads records leniently: unknown keys and kinds, null values, resumed runs") {
  TempDir dir("lenient");
  const std::string metrics =
      dir.metrics("run",
                  "{\"kind\":\"config\",\"preset\":\"fmnist-tiny\"}\n"
                  "\n"
                  "{\"kind\":\"step\",\"step\":1,\"loss\":2.0,\"new\":{\"a\":1}}\n"
                  "{\"kind\":\"step\",\"step\":2,\"loss\":null}\n"
                  "{\"kind\":\"step\",\"step\":3,\"loss\":1.0}\n"
                  "{\"kind\":\"step\",\"step\":2,\"loss\":1.5}\n"  // resumed from step 1
                  "{\"kind\":\"step\",\"step\":3,\"loss\":1.2}\n"
                  "{\"kind\":\"step\",\"step\":4,\"lo");  // being written by a running training
  REQUIRE(run_plot({metrics, "-o", dir.out()}) == 0);
  const std::string svg = read(dir.out());
  const size_t at = svg.find("points=\"");
  REQUIRE(at != std::string::npos);
  const std::string points = svg.substr(at, svg.find('"', at + 8) - at);
  CHECK(count(points, ",") == 3);  // steps 1, 2, 3 once each
}

TEST_CASE("plot names the file and line of a malformed record and writes nothing") {
  TempDir dir("malformed");
  const std::string out = dir.out();
  const std::string bad_json =
      dir.metrics("a",
                  "{\"kind\":\"step\",\"step\":1,\"loss\":1}\n{\"kind\":\"step\",}\n"
                  "{\"kind\":\"step\",\"step\":2,\"loss\":1}\n");
  expect_misuse<vg::Error>({bad_json, "-o", out}, out, bad_json + ":2: not valid JSON");
  // A number beyond double's range is nlohmann's out_of_range, not a parse_error.
  const std::string overflow = dir.metrics("e", "{\"kind\":\"step\",\"step\":1,\"loss\":8E1888}\n");
  expect_misuse<vg::Error>({overflow, "-o", out}, out,
                           overflow + ":1: not valid JSON: number overflow parsing '8E1888'");
  const std::string bad_type =
      dir.metrics("b", "{\"kind\":\"step\",\"step\":1,\"loss\":\"low\"}\n");
  expect_misuse<vg::Error>({bad_type, "-o", out}, out,
                           bad_type + ":1: \"loss\" is string, expected a number");
  const std::string no_step = dir.metrics("c", "\n{\"kind\":\"epoch\",\"test_loss\":1}\n");
  expect_misuse<vg::Error>({no_step, "-o", out}, out,
                           no_step + ":2: epoch record has no numeric \"step\"");
  const std::string no_kind = dir.metrics("d", "[1,2]\n");
  expect_misuse<vg::Error>({no_kind, "-o", out}, out, no_kind + ":1: a array, expected an object");
  const std::string bad_gammas =
      dir.metrics("e", "{\"kind\":\"step\",\"step\":1,\"layerscale\":[0.1]}\n");
  expect_misuse<vg::Error>({bad_gammas, "-o", out}, out,
                           bad_gammas + ":1: \"layerscale\" is array, expected an object");
}

TEST_CASE("plot misuse is a one-line UsageError and leaves no output file") {
  TempDir dir("misuse");
  const std::string out = dir.out();
  const std::string good = dir.metrics("good", synthetic_metrics(20, 2));
  const std::string plain = dir.metrics("x", synthetic_metrics(20, 2, false));
  const std::string empty = dir.metrics("empty", "");
  const std::string missing = (dir.root / "nope" / "metrics.jsonl").string();

  expect_misuse<UsageError>({missing, "-o", out}, out,
                            "vitgrad plot: " + missing + " does not exist");
  expect_misuse<UsageError>({good}, out, "vitgrad plot: no output file (add -o OUT.svg)");
  expect_misuse<UsageError>({good, "-o"}, out, "vitgrad plot: -o needs a value (OUT.svg)");
  expect_misuse<UsageError>({good, "--what", "speed", "-o", out}, out,
                            "vitgrad plot: --what must be one of "
                            "loss|accuracy|lr|layerscale|grn, got 'speed'");
  expect_misuse<UsageError>(
      {plain, "--what", "layerscale", "-o", out}, out,
      "vitgrad plot: " + plain + " has no layerscale values (was LayerScale on?)");
  expect_misuse<UsageError>({good, plain, "--what", "grn", "-o", out}, out,
                            "vitgrad plot: " + plain + " has no grn values (was GRN on?)");
  expect_misuse<UsageError>({empty, "-o", out}, out,
                            "vitgrad plot: " + empty + " has no loss values");
  expect_misuse<UsageError>({good, plain, "--label", "a", "-o", out}, out,
                            "vitgrad plot: --label gives 1 name(s) for 2 file(s)");
  expect_misuse<UsageError>({"-o", out}, out,
                            "vitgrad plot: expected 1 to 1000 positional argument(s), got 0");
  expect_misuse<UsageError>({good, "-o", out, "--width", "50"}, out,
                            "vitgrad plot: --width must be between 200 and 20000, got 50");
  // -o pointing at the metrics themselves would destroy them.
  CHECK_THROWS_WITH_AS(run_plot({good, "-o", good}), doctest::Contains("would overwrite"),
                       UsageError);
  CHECK(read(good) == synthetic_metrics(20, 2));
}

TEST_CASE("plot replaces an existing chart only when the new one is complete") {
  TempDir dir("replace");
  const std::string out = dir.out();
  std::ofstream(out) << "old chart";
  const std::string plain = dir.metrics("x", synthetic_metrics(5, 1, false));
  CHECK_THROWS_AS(run_plot({plain, "--what", "grn", "-o", out}), UsageError);
  CHECK(read(out) == "old chart");
  REQUIRE(run_plot({plain, "-o", out}) == 0);
  CHECK(read(out).rfind("<svg", 0) == 0);
}

TEST_CASE("vitgrad plot exits with code 2 and one line on stderr for misuse") {
  TempDir dir("exit_code");
  const std::string err = dir.out("stderr.txt");
  const std::string command = std::string("'") + VG_VITGRAD_EXE + "' plot '" +
                              (dir.root / "missing.jsonl").string() + "' -o '" + dir.out() +
                              "' 2> '" + err + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  const std::string message = read(err);
  INFO(message);
  CHECK(count(message, "\n") == 1);
  CHECK(message.find("missing.jsonl does not exist") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.out()));
}

TEST_CASE("plot accuracy draws the EMA weights' test accuracy beside the raw weights', dashed") {
  TempDir dir("ema");
  std::string text = synthetic_metrics(20, 1, false);
  // The same records with the EMA's accuracy in each epoch record.
  for (size_t at = 0; (at = text.find("\"lr\":0.0005,\"seconds\"", at)) != std::string::npos;
       at += 40)
    text.insert(at, "\"ema_test_accuracy\":0.5,");
  const std::string metrics = dir.metrics("run", text);
  REQUIRE(run_plot({metrics, "--what", "accuracy", "-o", dir.out("acc.svg")}) == 0);
  const std::string acc = read(dir.out("acc.svg"));
  CHECK(count(acc, "<polyline") == 3);
  CHECK(acc.find(">EMA (per epoch)<") != std::string::npos);
  CHECK(acc.find("stroke-dasharray") != std::string::npos);
}
