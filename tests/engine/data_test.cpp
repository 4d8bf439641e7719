#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/data/idx.h"
#include "engine/data/idx_dataset.h"
#include "engine/data/synthetic.h"
#include "tests/engine/error_helpers.h"
#include "tests/engine/idx_helpers.h"

using namespace vg;
using namespace vg::data;
using namespace vg::testing;
namespace fs = std::filesystem;

namespace {

// A small Fashion-MNIST-shaped directory: 3 training and 2 test images of 28x28.
void write_small_fashion_mnist(const TempDir& dir, bool gzip) {
  const std::string gz = gzip ? ".gz" : "";
  write_images(dir / ("train-images-idx3-ubyte" + gz), 3, 28, 28);
  write_labels(dir / ("train-labels-idx1-ubyte" + gz), {9, 0, 4});
  write_images(dir / ("t10k-images-idx3-ubyte" + gz), 2, 28, 28, 3);
  write_labels(dir / ("t10k-labels-idx1-ubyte" + gz), {1, 2});
}

}  // namespace

TEST_CASE("IDX images and labels read the same from plain and gzipped files") {
  TempDir dir("read");
  for (const std::string suffix : {"", ".gz"}) {
    INFO("suffix '", suffix, "'");
    write_images(dir / ("images" + suffix), 4, 3, 5);
    write_labels(dir / ("labels" + suffix), {0, 7, 255, 3});
    const IdxImages images = read_idx_images(dir / ("images" + suffix));
    CHECK(images.count == 4);
    CHECK(images.rows == 3);
    CHECK(images.cols == 5);
    CHECK(images.pixels == pattern(60));
    const IdxLabels labels = read_idx_labels(dir / ("labels" + suffix));
    CHECK(labels.count == 4);
    CHECK(labels.labels == std::vector<uint8_t>{0, 7, 255, 3});
  }
}

TEST_CASE("a missing IDX file or a directory in its place is an error naming it") {
  TempDir dir("missing");
  check_error([&] { read_idx_images(dir / "nope.gz", "fashion-mnist"); }, dir / "nope.gz",
              "fashion-mnist: ");
  check_error([&] { read_idx_labels(dir / "nope"); }, dir / "nope", "file not found");
  check_error([&] { read_idx_labels(dir.path.string()); }, dir.path.string(), "is a directory");
}

TEST_CASE("an IDX file with the wrong magic names the magic it found") {
  TempDir dir("magic");
  for (const std::string suffix : {"", ".gz"}) {
    write_images(dir / ("images" + suffix), 2, 2, 2);
    write_labels(dir / ("labels" + suffix), {1, 2});
    check_error([&] { read_idx_labels(dir / ("images" + suffix), "fashion-mnist"); },
                dir / ("images" + suffix),
                "bad magic 0x00000803, expected 0x00000801 (not an IDX label file)");
    check_error([&] { read_idx_images(dir / ("labels" + suffix)); }, dir / ("labels" + suffix),
                "bad magic 0x00000801, expected 0x00000803 or 0x00000804 (not an IDX image file)");
  }
  // A text file is not an IDX file either.
  write_file(dir / "text", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!'});
  check_error([&] { read_idx_labels(dir / "text"); }, dir / "text", "bad magic 0x68656c6c");
}

TEST_CASE("a truncated IDX file is an error, plain or gzipped") {
  TempDir dir("truncated");
  std::vector<uint8_t> full = idx_bytes(kIdxImagesMagic, {10, 4, 4}, pattern(160));

  SUBCASE("short header") {
    write_file(dir / "h", {full.begin(), full.begin() + 10});
    check_error([&] { read_idx_images(dir / "h"); }, dir / "h",
                "truncated header: 10 bytes, an IDX image header has 16");
    write_file(dir / "e", {});
    check_error([&] { read_idx_labels(dir / "e"); }, dir / "e", "truncated header: 0 bytes");
  }
  SUBCASE("short data, plain and gzipped") {
    for (const std::string name : {"d", "d.gz"}) {
      write_file(dir / name, {full.begin(), full.end() - 5});
      check_error([&] { read_idx_images(dir / name); }, dir / name,
                  "truncated: header declares 10 images of 4x4 (160 bytes after the header), "
                  "the file holds 155");
    }
    write_file(dir / "l.gz", idx_bytes(kIdxLabelsMagic, {6}, {1, 2, 3}));
    check_error([&] { read_idx_labels(dir / "l.gz"); }, dir / "l.gz", "the file holds 3");
  }
  SUBCASE("a gzip stream cut in the middle") {
    write_file(dir / "cut.gz", full);
    std::vector<uint8_t> gz = read_bytes(dir / "cut.gz");
    gz.resize(gz.size() / 2);
    write_file(dir / "cut", gz);  // no .gz suffix: written as is
    check_error([&] { read_idx_images(dir / "cut"); }, dir / "cut", "gzip stream cut short");
  }
  SUBCASE("a gzip stream missing its checksum trailer") {
    write_file(dir / "trailer.gz", full);
    std::vector<uint8_t> gz = read_bytes(dir / "trailer.gz");
    gz.resize(gz.size() - 8);  // CRC32 and length
    write_file(dir / "trailer", gz);
    check_error([&] { read_idx_images(dir / "trailer"); }, dir / "trailer",
                "truncated gzip stream");
  }
}

TEST_CASE("a corrupt gzip stream is an error") {
  TempDir dir("corrupt");
  write_file(dir / "c.gz", idx_bytes(kIdxImagesMagic, {10, 4, 4}, pattern(160)));
  std::vector<uint8_t> gz = read_bytes(dir / "c.gz");
  gz[gz.size() - 6] ^= 0xff;  // inside the CRC32 of the trailer
  write_file(dir / "c", gz);
  check_error([&] { read_idx_images(dir / "c"); }, dir / "c", "corrupt gzip data");
}

TEST_CASE("data beyond what the IDX header declares is an error") {
  TempDir dir("extra");
  write_file(dir / "x.gz", idx_bytes(kIdxLabelsMagic, {3}, {1, 2, 3, 4}));
  check_error([&] { read_idx_labels(dir / "x.gz"); }, dir / "x.gz",
              "more data than the header declares (3 labels)");
}

TEST_CASE("IDX headers with absurd sizes are rejected before anything is allocated") {
  TempDir dir("absurd");
  write_file(dir / "many", idx_bytes(kIdxImagesMagic, {0xffffffffu, 28, 28}, {}));
  check_error([&] { read_idx_images(dir / "many"); }, dir / "many",
              "header declares 4294967295 images, more than the limit of 10000000");
  write_file(dir / "wide", idx_bytes(kIdxImagesMagic, {1, 28, 5000}, {}));
  check_error([&] { read_idx_images(dir / "wide"); }, dir / "wide",
              "header declares 28x5000 images, expected sides between 1 and 1024");
  write_file(dir / "flat", idx_bytes(kIdxImagesMagic, {1, 0, 28}, {}));
  check_error([&] { read_idx_images(dir / "flat"); }, dir / "flat", "0x28 images");
  write_file(dir / "labels", idx_bytes(kIdxLabelsMagic, {0x80000000u}, {}));
  check_error([&] { read_idx_labels(dir / "labels"); }, dir / "labels",
              "header declares 2147483648 labels");
  // Within the limits but far more than the file holds: truncated, not out of memory.
  write_file(dir / "big", idx_bytes(kIdxImagesMagic, {5'000'000, 28, 28}, pattern(100)));
  check_error([&] { read_idx_images(dir / "big"); }, dir / "big", "the file holds 100");
}

TEST_CASE("Fashion-MNIST loads from a directory of gzipped or plain IDX files") {
  for (const bool gzip : {true, false}) {
    INFO("gzip ", gzip);
    TempDir dir(gzip ? "fm_gz" : "fm_plain");
    write_small_fashion_mnist(dir, gzip);
    const TensorDataset train = load_fashion_mnist(dir.path.string(), "train");
    CHECK(train.name() == "fashion-mnist/train");
    CHECK(train.images().shape() == Shape{3, 28, 28, 1});
    CHECK(train.labels() == std::vector<int32_t>{9, 0, 4});
    CHECK(train.num_classes() == 10);
    const std::vector<uint8_t> raw = pattern(3 * 28 * 28);
    const float* px = train.images().data<float>();
    for (size_t i : {size_t{0}, size_t{1}, size_t{100}, size_t{2351}})
      CHECK(px[i] == static_cast<float>((raw[i] / 255.0 - 0.2860) / 0.3530));
    CHECK(train.normalisation().black() == std::vector<float>{float(-0.2860 / 0.3530)});
    const TensorDataset test = load_fashion_mnist(dir.path.string(), "test");
    CHECK(test.images().shape() == Shape{2, 28, 28, 1});
    CHECK(test.labels() == std::vector<int32_t>{1, 2});
  }
}

TEST_CASE("a plain IDX file is preferred to its gzipped twin") {
  TempDir dir("prefer");
  write_small_fashion_mnist(dir, true);
  write_labels(dir / "train-labels-idx1-ubyte", {5, 6, 7});
  CHECK(load_fashion_mnist(dir.path.string(), "train").labels() == std::vector<int32_t>{5, 6, 7});
}

TEST_CASE("malformed Fashion-MNIST directories give one line naming the file") {
  TempDir dir("fm_bad");
  write_small_fashion_mnist(dir, true);
  const std::string d = dir.path.string();
  const std::string labels = dir / "train-labels-idx1-ubyte.gz";
  const std::string images = dir / "train-images-idx3-ubyte.gz";

  SUBCASE("missing directory") {
    check_error([&] { load_fashion_mnist(d + "/absent", "train"); }, d + "/absent",
                "directory not found");
  }
  SUBCASE("missing file") {
    fs::remove(labels);
    check_error([&] { load_fashion_mnist(d, "train"); }, dir / "train-labels-idx1-ubyte[.gz]",
                "file not found");
  }
  SUBCASE("unknown split") {
    check_error([&] { load_fashion_mnist(d, "validation"); }, "validation", "unknown split");
  }
  SUBCASE("bad magic") {
    write_images(labels, 3, 28, 28);
    check_error([&] { load_fashion_mnist(d, "train"); }, labels,
                "fashion-mnist: " + labels +
                    ": bad magic 0x00000803, expected 0x00000801 (not an IDX label file)");
  }
  SUBCASE("counts of images and labels differ") {
    write_labels(labels, {1, 2});
    check_error([&] { load_fashion_mnist(d, "train"); }, labels,
                "2 labels, but " + images + " holds 3 images");
  }
  SUBCASE("a label out of range") {
    write_labels(labels, {1, 10, 2});
    check_error([&] { load_fashion_mnist(d, "train"); }, labels,
                "label 10 at index 1 is out of range for 10 classes");
  }
  SUBCASE("wrong image size") {
    write_images(images, 3, 32, 32);
    check_error([&] { load_fashion_mnist(d, "train"); }, images,
                "images are 32x32x1, expected 28x28x1");
  }
  SUBCASE("truncated images") {
    std::vector<uint8_t> bytes = idx_bytes(kIdxImagesMagic, {3, 28, 28}, pattern(3 * 784));
    bytes.resize(bytes.size() - 1);
    write_file(images, bytes);
    check_error([&] { load_fashion_mnist(d, "train"); }, images, "truncated");
  }
}

TEST_CASE("synthetic data is deterministic per seed, balanced and split-specific") {
  const TensorDataset a = make_synthetic("train", 200, 7);
  const TensorDataset b = make_synthetic("train", 200, 7);
  CHECK(a.name() == "synthetic/train");
  CHECK(a.images().shape() == Shape{200, 28, 28, 1});
  CHECK(a.num_classes() == 10);
  CHECK(a.images().to_vector() == b.images().to_vector());
  CHECK(a.labels() == b.labels());
  CHECK(make_synthetic("train", 200, 8).images().to_vector() != a.images().to_vector());
  CHECK(make_synthetic("test", 200, 7).images().to_vector() != a.images().to_vector());

  // Image i depends only on (split, seed, i), not on how many images were made.
  const std::vector<double> prefix = make_synthetic("train", 20, 7).images().to_vector();
  const std::vector<double> all = a.images().to_vector();
  CHECK(std::equal(prefix.begin(), prefix.end(), all.begin()));

  std::map<int32_t, int> per_class;
  const TensorDataset balanced = make_synthetic("test", 503, 1);
  for (int32_t l : balanced.labels()) ++per_class[l];
  REQUIRE(per_class.size() == 10);
  for (const auto& [label, n] : per_class) {
    INFO("class ", label);
    CHECK(n >= 50);
    CHECK(n <= 51);
  }
  // Pixels are normalised bytes: within the range of (0..1 - mean) / std.
  const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  CHECK(*lo >= -0.2860 / 0.3530 - 1e-6);
  CHECK(*hi <= (1 - 0.2860) / 0.3530 + 1e-6);
  CHECK(*hi - *lo > 2.0);  // shapes and background use most of the range
}

TEST_CASE("synthetic classes are easy: nearest-neighbour accuracy is far above chance") {
  const TensorDataset train = make_synthetic("train", 600, 0);
  const TensorDataset test = make_synthetic("test", 100, 0);
  const float* tr = train.images().data<float>();
  const float* te = test.images().data<float>();
  int correct = 0;
  for (int64_t i = 0; i < test.size(); ++i) {
    double best = 1e300;
    int32_t label = -1;
    for (int64_t j = 0; j < train.size(); ++j) {
      double d = 0;
      for (int64_t k = 0; k < 784; ++k) {
        const double diff = te[i * 784 + k] - tr[j * 784 + k];
        d += diff * diff;
      }
      if (d < best) best = d, label = train.labels()[j];
    }
    correct += label == test.labels()[i];
  }
  INFO("1-NN accuracy on synthetic: ", correct, "/100 (chance: 10)");
  CHECK(correct >= 60);
}

TEST_CASE("bad synthetic requests are errors") {
  CHECK_THROWS_WITH_AS(make_synthetic("val", 10, 0), doctest::Contains("unknown split 'val'"),
                       Error);
  CHECK_THROWS_WITH_AS(make_synthetic("train", 0, 0), doctest::Contains("count 0"), Error);
}

TEST_CASE("random corruptions of IDX files give a vg::Error or a clean read, never a crash") {
  TempDir dir("fuzz");
  const std::vector<uint8_t> plain = idx_bytes(kIdxImagesMagic, {6, 4, 3}, pattern(72));
  write_file(dir / "seed.gz", plain);
  const std::vector<uint8_t> gz = read_bytes(dir / "seed.gz");
  Rng rng(2024);
  int errors = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> bytes = trial % 2 ? gz : plain;
    const int edits = 1 + static_cast<int>(rng.below(4));
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng.below(bytes.size());
      if (rng.bernoulli(0.2))
        bytes.resize(at);  // truncate
      else
        bytes[at] = static_cast<uint8_t>(rng.below(256));
      if (bytes.empty()) break;
    }
    const std::string path = dir / "fuzzed";
    write_file(path, bytes);
    INFO("trial ", trial);
    try {
      const IdxImages images = read_idx_images(path);
      CHECK(static_cast<int64_t>(images.pixels.size()) ==
            images.count * images.rows * images.cols * images.channels);
    } catch (const Error& e) {
      ++errors;
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  }
  CHECK(errors > 200);
}
