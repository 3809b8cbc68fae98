#pragma once
// Data sets in the MNIST layout (MNIST, Fashion-MNIST): a directory with four IDX files,
//   train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte
// each plain or with a .gz suffix. Images become float32 rows of rows*cols pixels scaled to [0, 1]
// (pixel / 255), labels int32. Needs zlib (see idx.hpp). The loaders are defined in
// mnist_impl.hpp, compiled once per program under SYMFLOW_SEPARATE_COMPILATION.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "../core/separate_compilation.hpp"
#include "../core/tensor.hpp"
#include "batches.hpp"
#include "../io/idx.hpp"

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
SYMFLOW_LIBRARY_LINKAGE image_split load_image_split(const std::string& images_path, const std::string& labels_path,
                                                     std::size_t limit = all_examples);

// The four files of a directory in the MNIST layout, each plain or gzip-compressed.
SYMFLOW_LIBRARY_LINKAGE image_dataset load_mnist_format(const std::string& dir,
                                                        const image_dataset_options& options = {});

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

#if !SYMFLOW_LIBRARY_DECLARED_ONLY
#include "mnist_impl.hpp"
#endif
