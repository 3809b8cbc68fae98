#pragma once
// Data sets in the MNIST layout (MNIST, Fashion-MNIST): a directory with four IDX files,
//   train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte
// each plain or with a .gz suffix. Images become float32 rows of rows*cols pixels scaled to [0, 1]
// (pixel / 255), labels int32. Needs zlib (see idx.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "../core/tensor.hpp"
#include "batches.hpp"
#include "idx.hpp"

namespace symflow {

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr std::string_view fashion_mnist_directory = "/usr/share/datasets/fashion-mnist";

inline constexpr std::size_t all_examples = std::numeric_limits<std::size_t>::max();

// One split (training or test) of an image classification data set.
struct image_split {
  tensor<float, shape<dyn, dyn>> images;    // [n, rows * cols], values in [0, 1]
  tensor<std::int32_t, shape<dyn>> labels;  // [n]
  std::size_t rows = 0, cols = 0;

  std::size_t size() const { return labels.size(); }

  // The same pixels as [n, rows, cols, 1] (NHWC, one channel), without copying.
  tensor_view<const float, shape<dyn, dyn, dyn, 1>> images_nhwc() const {
    return {images.data(), {size(), rows, cols, 1}};
  }

  // The first n examples (all of them when there are fewer), e.g. a small subset for a quick run.
  image_split first(std::size_t n) const {
    n = std::min(n, size());
    image_split out;
    out.rows = rows;
    out.cols = cols;
    out.images = tensor<float, shape<dyn, dyn>>({n, rows * cols}, uninitialized);
    std::copy_n(images.data(), n * rows * cols, out.images.data());
    out.labels = tensor<std::int32_t, shape<dyn>>({n}, uninitialized);
    std::copy_n(labels.data(), n, out.labels.data());
    return out;
  }
};

struct image_dataset {
  image_split train, test;
};

struct image_dataset_options {
  std::size_t train_limit = all_examples;  // keep only the first examples of each split
  std::size_t test_limit = all_examples;
};

// One split from an images file (u8, rank 3) and a labels file (u8, rank 1) of equal counts.
inline image_split load_image_split(const std::string& images_path, const std::string& labels_path,
                                    std::size_t limit = all_examples) {
  const idx_array images = read_idx(images_path, idx_type::u8, 3);
  const idx_array labels = read_idx(labels_path, idx_type::u8, 1);
  if (images.extents[0] != labels.extents[0])
    throw data_error("idx: '" + images_path + "' holds " + std::to_string(images.extents[0]) + " images but '" +
                     labels_path + "' holds " + std::to_string(labels.extents[0]) + " labels");
  image_split out;
  out.rows = images.extents[1];
  out.cols = images.extents[2];
  const std::size_t n = std::min(limit, images.extents[0]);
  const std::size_t pixels = out.rows * out.cols;
  out.images = tensor<float, shape<dyn, dyn>>({n, pixels}, uninitialized);
  for (std::size_t i = 0; i < n * pixels; ++i) out.images[i] = static_cast<float>(images.bytes[i]) / 255.0f;
  out.labels = tensor<std::int32_t, shape<dyn>>({n}, uninitialized);
  for (std::size_t i = 0; i < n; ++i) out.labels[i] = labels.bytes[i];
  return out;
}

namespace detail {
// The plain file when it exists, else the .gz one; neither gives an error naming both.
inline std::string find_idx_file(const std::string& dir, const std::string& stem, std::uint32_t magic) {
  const std::filesystem::path plain = std::filesystem::path(dir) / stem;
  const std::filesystem::path gz = std::filesystem::path(dir) / (stem + ".gz");
  std::error_code ec;
  if (std::filesystem::exists(plain, ec)) return plain.string();
  if (std::filesystem::exists(gz, ec)) return gz.string();
  throw data_error("idx: neither '" + plain.string() + "' nor '" + gz.string() + "' exists; expected an IDX file with magic " +
                   describe_idx_magic(magic));
}
}  // namespace detail

inline image_dataset load_mnist_format(const std::string& dir, const image_dataset_options& options = {}) {
  const std::uint32_t images = idx_magic(idx_type::u8, 3), labels = idx_magic(idx_type::u8, 1);
  auto split = [&](const std::string& prefix, std::size_t limit) {
    const std::string images_path = detail::find_idx_file(dir, prefix + "-images-idx3-ubyte", images);
    const std::string labels_path = detail::find_idx_file(dir, prefix + "-labels-idx1-ubyte", labels);
    return load_image_split(images_path, labels_path, limit);
  };
  image_dataset out;
  out.train = split("train", options.train_limit);
  out.test = split("t10k", options.test_limit);
  return out;
}

inline image_dataset fashion_mnist(const std::string& dir = std::string(fashion_mnist_directory),
                                   const image_dataset_options& options = {}) {
  return load_mnist_format(dir, options);
}

inline image_dataset mnist(const std::string& dir, const image_dataset_options& options = {}) {
  return load_mnist_format(dir, options);
}

// One mini-batch, reused across iterations (its storage is kept while the batch size is unchanged).
struct image_batch {
  tensor<float, shape<dyn, dyn>> images;
  tensor<std::int32_t, shape<dyn>> labels;
};

// Copies batch b of plan from split into out.
inline void load_batch(const image_split& split, const batch_plan& plan, std::size_t b, image_batch& out) {
  const std::span<const std::size_t> rows = plan.batch(b);
  gather_rows(split.images, rows, out.images);
  gather_rows(split.labels, rows, out.labels);
}

}  // namespace symflow
