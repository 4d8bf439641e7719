// IDX folders of any image size and channel count: 4-dimensional image files, normalisation
// from the training split's statistics (or given), and every malformed folder one line.
#include "engine/data/idx_dataset.h"

#include <doctest/doctest.h>

#include "engine/core/error.h"
#include "engine/data/idx.h"
#include "tests/engine/error_helpers.h"
#include "tests/engine/idx_helpers.h"

using namespace vg;
using namespace vg::data;
using namespace vg::testing;

namespace {

// An IDX folder of 12x10 images with 3 channels: 7 training and 5 test images, pixels from
// pattern(), labels 0..3 (train) and 0..2 (test).
void write_colour_folder(const TempDir& dir, const std::string& gz = "") {
  write_file(dir / ("train-images-idx3-ubyte" + gz),
             idx_bytes(kIdxColourImagesMagic, {7, 12, 10, 3}, pattern(7 * 360, 5)));
  write_labels(dir / ("train-labels-idx1-ubyte" + gz), {0, 3, 1, 2, 0, 1, 3});
  write_file(dir / ("t10k-images-idx3-ubyte" + gz),
             idx_bytes(kIdxColourImagesMagic, {5, 12, 10, 3}, pattern(5 * 360, 11)));
  write_labels(dir / ("t10k-labels-idx1-ubyte" + gz), {2, 0, 1, 1, 0});
}

}  // namespace

TEST_CASE("a 4-dimensional IDX image file holds channels-last colour images") {
  TempDir dir("idx4");
  const std::vector<uint8_t> pixels = pattern(2 * 3 * 5 * 4);
  write_file(dir / "rgba", idx_bytes(kIdxColourImagesMagic, {2, 3, 5, 4}, pixels));
  const IdxImages images = read_idx_images(dir / "rgba");
  CHECK(images.count == 2);
  CHECK(images.rows == 3);
  CHECK(images.cols == 5);
  CHECK(images.channels == 4);
  CHECK(images.pixels == pixels);
  const IdxImages header = read_idx_images_header(dir / "rgba");
  CHECK(header.channels == 4);
  CHECK(header.pixels.empty());
}

TEST_CASE("an IDX folder of colour images loads with the training split's statistics") {
  for (const std::string gz : {"", ".gz"}) {
    INFO("suffix '", gz, "'");
    TempDir dir("idx_colour" + gz);
    write_colour_folder(dir, gz);
    const TensorDataset train = load_idx(dir.path.string(), "train", {});
    CHECK(train.name() == dir / ("train-images-idx3-ubyte" + gz));
    CHECK(train.image_shape() == ImageShape{12, 10, 3});
    CHECK(train.size() == 7);
    CHECK(train.num_classes() == 4);  // the largest label + 1
    const Normalisation stats = pixel_statistics(pattern(7 * 360, 5), 3);
    CHECK(train.normalisation() == stats);
    CHECK(stats.mean[0] != stats.mean[1]);  // the channels differ
    // Pixel 37 is channel 1 of the 13th pixel of image 0.
    const float want =
        static_cast<float>((pattern(7 * 360, 5)[37] / 255.0 - stats.mean[1]) / stats.std[1]);
    CHECK(train.images().data<float>()[37] == want);
    // The test split takes the normalisation it is given, not its own statistics.
    const TensorDataset test = load_idx(dir.path.string(), "test", train.normalisation());
    CHECK(test.normalisation() == stats);
    CHECK(test.num_classes() == 3);
    CHECK(test.labels() == std::vector<int32_t>{2, 0, 1, 1, 0});
    // The shape alone, from the headers and labels.
    const DataShape shape = idx_shape(dir.path.string(), "train");
    CHECK(shape.size == 7);
    CHECK(shape.image == ImageShape{12, 10, 3});
    CHECK(shape.num_classes == 4);
  }
}

TEST_CASE("MNIST-style 3-dimensional files are one channel") {
  TempDir dir("idx_grey");
  write_images(dir / "train-images-idx3-ubyte", 4, 9, 7);
  write_labels(dir / "train-labels-idx1-ubyte", {1, 0, 1, 0});
  const TensorDataset train = load_idx(dir.path.string(), "train", Normalisation{{0.5}, {0.25}});
  CHECK(train.image_shape() == ImageShape{9, 7, 1});
  CHECK(train.num_classes() == 2);
  CHECK(train.images().data<float>()[1] == static_cast<float>((7 / 255.0 - 0.5) / 0.25));
}

TEST_CASE("malformed IDX folders give one line naming the file and the numbers") {
  TempDir dir("idx_bad");
  write_colour_folder(dir);
  const std::string d = dir.path.string();
  const std::string images = dir / "train-images-idx3-ubyte";
  const std::string labels = dir / "train-labels-idx1-ubyte";

  SUBCASE("missing folder or file") {
    check_error([&] { load_idx(d + "/absent", "train", {}); }, {d + "/absent", "not found"});
    fs::remove(labels);
    check_error([&] { load_idx(d, "train", {}); }, {labels + "[.gz]", "file not found"});
  }
  SUBCASE("wrong magic") {
    write_labels(images, {1, 2});
    check_error([&] { load_idx(d, "train", {}); },
                {images, "bad magic 0x00000801, expected 0x00000803 or 0x00000804"});
  }
  SUBCASE("counts of images and labels differ") {
    write_labels(labels, {0, 1, 2});
    check_error([&] { load_idx(d, "train", {}); }, {labels, "3 labels, but", "holds 7 images"});
    check_error([&] { idx_shape(d, "train"); }, {labels, "3 labels, but", "holds 7 images"});
  }
  SUBCASE("truncated pixels") {
    std::vector<uint8_t> bytes = idx_bytes(kIdxColourImagesMagic, {7, 12, 10, 3}, pattern(2519));
    write_file(images, bytes);
    check_error([&] { load_idx(d, "train", {}); },
                {images, "header declares 7 images of 12x10x3 (2520 bytes", "holds 2519"});
  }
  SUBCASE("channels out of range") {
    write_file(images, idx_bytes(kIdxColourImagesMagic, {7, 12, 10, 0}, {}));
    check_error([&] { load_idx(d, "train", {}); },
                {images, "header declares 0 channels, expected between 1 and 256"});
  }
  SUBCASE("a normalisation for other channels") {
    check_error(
        [&] {
          load_idx(d, "train", Normalisation{{0.5}, {0.5}});
        },
        {images, "the normalisation has 1 means and 1 standard deviations for 3 channels"});
  }
  SUBCASE("a channel with one value everywhere") {
    write_file(images, idx_bytes(kIdxImagesMagic, {7, 2, 2}, std::vector<uint8_t>(28, 9)));
    check_error([&] { load_idx(d, "train", {}); },
                {images, "channel 0 is 9 in every pixel (std 0)"});
  }
}
