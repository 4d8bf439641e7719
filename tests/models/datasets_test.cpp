// The data sets a run can use, where the installed ones live.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "engine/core/error.h"
#include "engine/data/idx.h"
#include "engine/data/idx_dataset.h"
#include "models/run_data.h"

using namespace vg;
using namespace vg::data;
namespace fs = std::filesystem;

TEST_CASE("the installed Fashion-MNIST has 60000/10000 images of 28x28 and its known statistics") {
  if (!fs::is_directory(kFashionMnistDir)) {
    MESSAGE("skipped: ", kFashionMnistDir,
            " is absent (install Debian's dataset-fashion-mnist package)");
    return;
  }
  const std::string dir = kFashionMnistDir;
  const IdxImages raw = read_idx_images(dir + "/train-images-idx3-ubyte.gz");
  CHECK(raw.count == 60000);
  CHECK(raw.rows == 28);
  CHECK(raw.cols == 28);
  double sum = 0, sum_sq = 0;
  for (uint8_t p : raw.pixels) {
    sum += p / 255.0;
    sum_sq += (p / 255.0) * (p / 255.0);
  }
  const double n = static_cast<double>(raw.pixels.size());
  const double mean = sum / n, std = std::sqrt(sum_sq / n - mean * mean);
  INFO("mean ", mean, ", std ", std);
  CHECK(std::abs(mean - 0.2860) <= 0.0005);
  CHECK(std::abs(std - 0.3530) <= 0.0005);
  const IdxLabels train_labels = read_idx_labels(dir + "/train-labels-idx1-ubyte.gz");
  CHECK(train_labels.count == 60000);
  std::map<int, int> per_class;
  for (uint8_t l : train_labels.labels) ++per_class[l];
  CHECK(per_class.size() == 10);
  CHECK(per_class.begin()->first == 0);
  CHECK(per_class.rbegin()->first == 9);

  const TensorDataset test = load_fashion_mnist(dir, "test");
  CHECK(test.images().shape() == Shape{10000, 28, 28, 1});
  CHECK(test.size() == 10000);
  CHECK(*std::min_element(test.labels().begin(), test.labels().end()) == 0);
  CHECK(*std::max_element(test.labels().begin(), test.labels().end()) == 9);
}

TEST_CASE("a run's data: the synthetic set, or Fashion-MNIST from --data-dir") {
  TrainOptions o;
  o.data = "synthetic";
  o.synthetic_test = 30;
  const std::shared_ptr<const Dataset> test = load_dataset(o, "test");
  CHECK(test->name() == "synthetic/test");
  CHECK(test->size() == 30);
  o.data = "fashion-mnist";
  o.data_dir = (fs::temp_directory_path() / "vg_no_such_fashion_mnist").string();
  CHECK_THROWS_WITH_AS(load_dataset(o, "test"), doctest::Contains(o.data_dir.c_str()), Error);
}
