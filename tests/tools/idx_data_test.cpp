// `vitgrad train --data-dir` on IDX files of other sizes and channel counts, written here:
// the model is made for the data, the normalisation is the training split's (or given),
// recorded in the checkpoint and used by eval and resume; bad folders are one line each.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "engine/data/dataset.h"
#include "tests/engine/idx_helpers.h"
#include "tests/tools/cli_helpers.h"

using nlohmann::json;
using vg::testing::idx_bytes;
using vg::testing::pattern;
using vg::testing::read_text;
using vg::testing::scratch_dir;
using vg::testing::vitgrad;
using vg::testing::write_file;
namespace fs = std::filesystem;

namespace {

const std::string kSmall = " --depth 1 --dim 8 --heads 2 --batch 10 --threads 1 --log-every 1 ";

std::vector<uint8_t> labels_file(int n, int classes) {
  std::vector<uint8_t> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % classes);
  return idx_bytes(vg::data::kIdxLabelsMagic, {uint32_t(n)}, labels);
}

std::vector<uint8_t> colour_images(uint32_t n, uint32_t h, uint32_t w, uint32_t c, int mul) {
  return idx_bytes(vg::data::kIdxColourImagesMagic, {n, h, w, c}, pattern(n * h * w * c, mul));
}

// 30 training and 10 test images of 12x10 pixels and 3 channels, 5 classes; the training
// images gzipped, as MNIST is published.
fs::path colour_folder(const fs::path& root, const std::string& name) {
  const fs::path dir = root / name;
  fs::create_directories(dir);
  write_file((dir / "train-images-idx3-ubyte.gz").string(), colour_images(30, 12, 10, 3, 5));
  write_file((dir / "train-labels-idx1-ubyte").string(), labels_file(30, 5));
  write_file((dir / "t10k-images-idx3-ubyte").string(), colour_images(10, 12, 10, 3, 11));
  write_file((dir / "t10k-labels-idx1-ubyte").string(), labels_file(10, 5));
  return dir;
}

std::vector<double> numbers(const json& j) {
  return j.get<std::vector<double>>();
}

}  // namespace

TEST_CASE(
    "train --data-dir on 12x10 colour images: the model fits the data, eval reads the "
    "checkpoint's normalisation") {
  const fs::path root = scratch_dir("idx_colour");
  const fs::path data = colour_folder(root, "data"), out = root / "run";
  const auto r =
      vitgrad("train --data-dir " + data.string() + kSmall + "--steps 3 --out " + out.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("pixels normalised with mean [") != std::string::npos);
  const json config = json::parse(read_text(out / "config.json"));
  CHECK(config["model"]["img_size"] == 12);  // the longer side; 12x10 padded to 12x12
  CHECK(config["model"]["in_chans"] == 3);
  CHECK(config["model"]["num_classes"] == 5);
  CHECK(config["train"]["data"] == "idx");
  const json last = json::parse(read_text(out / "last.json"));
  const vg::data::Normalisation stats = vg::data::pixel_statistics(pattern(30 * 360, 5), 3);
  CHECK(numbers(last["data"]["mean"]) == stats.mean);
  CHECK(numbers(last["data"]["std"]) == stats.std);

  // eval gives what the run measured at its end ...
  const std::string ckpt = (out / "last.json").string();
  const auto e = vitgrad("eval " + ckpt + " --json");
  INFO(e.err);
  REQUIRE(e.exit_code == 0);
  const json measured = json::parse(e.out);
  CHECK(measured["count"] == 10);
  CHECK(measured["loss"].get<double>() == last["extra"]["last_eval"]["loss"].get<double>());
  CHECK(measured["accuracy"] == last["extra"]["last_eval"]["accuracy"]);
  // ... and still does when the training files change: the statistics come from the
  // checkpoint, not from whatever files are there now.
  write_file((data / "train-images-idx3-ubyte.gz").string(), colour_images(30, 12, 10, 3, 101));
  const auto again = vitgrad("eval " + ckpt + " --json --data-dir " + data.string());
  CHECK(again.exit_code == 0);
  CHECK(again.out == e.out);
  // An export keeps the normalisation, so it evaluates the same.
  const std::string exported = (root / "export.json").string();
  REQUIRE(vitgrad("export " + ckpt + " -o " + exported).exit_code == 0);
  const auto from_export = vitgrad("eval " + exported + " --json --data-dir " + data.string());
  INFO(from_export.err);
  CHECK(from_export.out == e.out);
  fs::remove_all(root);
}

TEST_CASE("a given normalisation on MNIST-style grey files is recorded, and resume is exact") {
  const fs::path root = scratch_dir("idx_grey");
  const fs::path data = root / "data";
  fs::create_directories(data);
  // 9x9 grey images (3-dimensional files, one channel), 4 classes; patch 3 divides 9.
  const auto grey = [](uint32_t n, int mul) {
    return idx_bytes(vg::data::kIdxImagesMagic, {n, 9, 9}, pattern(n * 81, mul));
  };
  write_file((data / "train-images-idx3-ubyte").string(), grey(40, 3));
  write_file((data / "train-labels-idx1-ubyte").string(), labels_file(40, 4));
  write_file((data / "t10k-images-idx3-ubyte").string(), grey(8, 7));
  write_file((data / "t10k-labels-idx1-ubyte").string(), labels_file(8, 4));
  const std::string recipe = "train --data-dir " + data.string() + kSmall +
                             "--patch 3 --data-mean 0.5 --data-std 0.25 --steps 6 ";
  const fs::path a = root / "a", b = root / "b";
  const auto whole = vitgrad(recipe + "--out " + a.string() + " --keep last,steps --save-every 3");
  INFO(whole.err);
  REQUIRE(whole.exit_code == 0);
  const json at6 = json::parse(read_text(a / "last.json"));
  CHECK(at6["data"]["mean"] == json{0.5});
  CHECK(at6["data"]["std"] == json{0.25});
  CHECK(at6["config"]["img_size"] == 9);
  CHECK(at6["config"]["in_chans"] == 1);
  // From step 3 in a new process: the same bits as the run that did not stop.
  const auto resumed =
      vitgrad("train --resume " + (a / "step-3.json").string() + " --out " + b.string());
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  const json b6 = json::parse(read_text(b / "last.json"));
  const bool same = b6["model"] == at6["model"] && b6["optimizer"] == at6["optimizer"] &&
                    b6["data"] == at6["data"];
  CHECK(same);
  fs::remove_all(root);
}

TEST_CASE("bad IDX folders and data flags are one line each, naming the file and the numbers") {
  const fs::path root = scratch_dir("idx_bad");
  struct Case {
    std::string name, flags, message;
  };
  auto folder = [&](const std::string& name, const std::string& file,
                    const std::vector<uint8_t>& bytes) {
    const fs::path dir = colour_folder(root, name);
    if (!file.empty()) fs::remove(dir / (file + ".gz")), fs::remove(dir / file);
    if (!bytes.empty()) write_file((dir / file).string(), bytes);
    return "--data-dir " + dir.string();
  };
  const std::string d = (root / "").string();
  std::vector<uint8_t> cut = colour_images(10, 12, 10, 3, 11);
  cut.resize(cut.size() - 100);
  std::vector<uint8_t> wrong_magic = colour_images(30, 12, 10, 3, 5);
  wrong_magic[3] = 0x02;
  const std::vector<Case> cases = {
      {"missing labels", folder("missing", "t10k-labels-idx1-ubyte", {}),
       d + "missing/t10k-labels-idx1-ubyte[.gz]: file not found"},
      {"counts differ", folder("count", "train-labels-idx1-ubyte", labels_file(29, 5)),
       d + "count/train-labels-idx1-ubyte: 29 labels, but " + d +
           "count/train-images-idx3-ubyte.gz holds 30 images"},
      {"wrong magic", folder("magic", "train-images-idx3-ubyte", wrong_magic),
       d + "magic/train-images-idx3-ubyte: bad magic 0x00000802, expected 0x00000803 or "
           "0x00000804"},
      {"truncated", folder("cut", "t10k-images-idx3-ubyte", cut),
       d + "cut/t10k-images-idx3-ubyte: truncated: header declares 10 images of 12x10x3 (3600 "
           "bytes after the header), the file holds 3500"},
      {"train and test shapes differ",
       folder("shapes", "t10k-images-idx3-ubyte", colour_images(10, 12, 10, 1, 3)),
       "the test images (" + d +
           "shapes/t10k-images-idx3-ubyte: 12x10x1) differ in shape from "
           "the training images (" +
           d + "shapes/train-images-idx3-ubyte.gz: 12x10x3)"},
      {"one grey value everywhere",
       folder("flat", "train-images-idx3-ubyte",
              idx_bytes(vg::data::kIdxImagesMagic, {30, 4, 4}, std::vector<uint8_t>(480, 7))),
       d + "flat/train-images-idx3-ubyte: channel 0 is 7 in every pixel (std 0)"},
      {"patch does not divide the side", folder("patch", "", {}) + " --patch 5",
       "img_size 12 is not divisible by patch_size 5 (img_size is the side of the data's 12x10 "
       "images; an img_size of 15 pads them"},
      {"image side below the data's", folder("small", "", {}) + " --img-size 8",
       "images 12x10x3, 5 classes) does not fit the model (img_size 8, in_chans 3"},
      {"a normalisation for one channel",
       folder("norm", "", {}) + " --data-mean 0.5 --data-std 0.5",
       d + "norm/train-images-idx3-ubyte.gz: the normalisation has 1 means and 1 standard "
           "deviations for 3 channels"},
      {"a mean without a std", folder("half", "", {}) + " --data-mean 0.5",
       "give --data-mean and --data-std together"},
      {"a std of zero", folder("zero", "", {}) + " --data-mean 0.5 --data-std 0",
       "--data-std must be between 1e-12"},
      {"idx without a folder", "--data idx", "--data idx needs --data-dir"},
  };
  for (const Case& c : cases) {
    const std::string args =
        "train " + c.flags + kSmall + "--steps 1 --out " + (root / "out").string();
    const auto r = vitgrad(args);
    INFO(c.name, "\nvitgrad ", args, "\nstderr: ", r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(root / "out"));
  }
  fs::remove_all(root);
}
