#include "engine/data/idx_dataset.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/error.h"
#include "engine/data/idx.h"

namespace vg::data {
namespace {

void check_split(const std::string& context, const std::string& split) {
  check(split == "train" || split == "test", context, ": unknown split '", split,
        "' (expected train or test)");
}

// dir/stem if it exists, else dir/stem.gz.
std::string find_idx_file(const std::string& dir, const std::string& stem,
                          const std::string& context) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path plain = fs::path(dir) / stem;
  if (fs::exists(plain, ec)) return plain.string();
  const fs::path gz = fs::path(dir) / (stem + ".gz");
  if (fs::exists(gz, ec)) return gz.string();
  throw Error(cat_str(context, ": ", plain.string(), "[.gz]: file not found"));
}

// Both files of a split, read and checked against each other.
struct IdxSplit {
  IdxSplitFiles files;
  IdxImages images;
  IdxLabels labels;
  ImageShape shape() const { return {images.rows, images.cols, images.channels}; }
};

IdxSplit read_split(const std::string& dir, const std::string& split, const std::string& context) {
  IdxSplit s;
  s.files = find_idx_split(dir, split, context);
  s.labels = read_idx_labels(s.files.labels, context);
  s.images = read_idx_images(s.files.images, context);
  check(s.images.count > 0, context, ": ", s.files.images, ": holds no images");
  check(s.labels.count == s.images.count, context, ": ", s.files.labels, ": ", s.labels.count,
        " labels, but ", s.files.images, " holds ", s.images.count, " images");
  return s;
}

int64_t classes_of(const IdxLabels& labels) {
  return labels.labels.empty()
             ? 1
             : int64_t{*std::max_element(labels.labels.begin(), labels.labels.end())} + 1;
}

TensorDataset to_dataset(IdxSplit& s, int64_t num_classes, const Normalisation& normalisation,
                         const std::string& context, std::string name) {
  const ImageShape shape = s.shape();
  normalisation.validate(shape.channels, context + ": " + s.files.images);
  Tensor images = normalise_pixels(
      s.images.pixels, {s.images.count, shape.height, shape.width, shape.channels}, normalisation);
  s.images.pixels = {};  // the bytes are not needed any more: free them before the next split
  return TensorDataset(std::move(images), {s.labels.labels.begin(), s.labels.labels.end()},
                       num_classes, normalisation, std::move(name));
}

}  // namespace

Normalisation fashion_mnist_normalisation() {
  return {{kFashionMnistMean}, {kFashionMnistStd}};
}

IdxSplitFiles find_idx_split(const std::string& dir, const std::string& split,
                             const std::string& context) {
  check_split(context, split);
  std::error_code ec;
  const bool fashion = context == "fashion-mnist";
  check(std::filesystem::is_directory(dir, ec), context, ": ", dir, ": directory not found (",
        fashion ? "install the dataset-fashion-mnist package, or " : "",
        "give the directory that holds the IDX files)");
  const std::string prefix = split == "train" ? "train" : "t10k";
  return {find_idx_file(dir, prefix + "-images-idx3-ubyte", context),
          find_idx_file(dir, prefix + "-labels-idx1-ubyte", context)};
}

DataShape idx_shape(const std::string& dir, const std::string& split, const std::string& context) {
  const IdxSplitFiles files = find_idx_split(dir, split, context);
  const IdxLabels labels = read_idx_labels(files.labels, context);
  const IdxImages images = read_idx_images_header(files.images, context);
  check(labels.count == images.count, context, ": ", files.labels, ": ", labels.count,
        " labels, but ", files.images, " holds ", images.count, " images");
  return {images.count, {images.rows, images.cols, images.channels}, classes_of(labels)};
}

TensorDataset load_idx(const std::string& dir, const std::string& split,
                       const std::optional<Normalisation>& normalisation,
                       const std::string& context) {
  IdxSplit s = read_split(dir, split, context);
  Normalisation n;
  if (normalisation) {
    n = *normalisation;
  } else {
    n = pixel_statistics(s.images.pixels, s.images.channels);
    for (size_t c = 0; c < n.std.size(); ++c)
      check(n.std[c] > 0, context, ": ", s.files.images, ": channel ", c, " is ", 255 * n.mean[c],
            " in every pixel (std 0): give a normalisation");
  }
  const int64_t num_classes = classes_of(s.labels);
  const std::string name = s.files.images;
  return to_dataset(s, num_classes, n, context, name);
}

TensorDataset load_fashion_mnist(const std::string& dir, const std::string& split,
                                 const std::optional<Normalisation>& normalisation) {
  const std::string context = "fashion-mnist";
  IdxSplit s = read_split(dir, split, context);
  for (int64_t i = 0; i < s.labels.count; ++i)
    check(s.labels.labels[i] < kFashionMnistClasses, context, ": ", s.files.labels, ": label ",
          int{s.labels.labels[i]}, " at index ", i, " is out of range for ", kFashionMnistClasses,
          " classes");
  const ImageShape want{kFashionMnistSide, kFashionMnistSide, 1};
  check(s.shape() == want, context, ": ", s.files.images, ": images are ", to_string(s.shape()),
        ", expected ", to_string(want));
  return to_dataset(s, kFashionMnistClasses, normalisation.value_or(fashion_mnist_normalisation()),
                    context, "fashion-mnist/" + split);
}

}  // namespace vg::data
