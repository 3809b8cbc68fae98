#pragma once
// The definitions behind mnist.hpp. Included by it, or compiled once in the library unit under
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp).
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>

#include "../io/idx.hpp"
#include "../io/idx_impl.hpp"
#include "mnist.hpp"

namespace symflow {

// One split from an images file (u8, rank 3) and a labels file (u8, rank 1) of equal counts.
SYMFLOW_LIBRARY_LINKAGE image_split load_image_split(const std::string& images_path, const std::string& labels_path,
                                                     std::size_t limit) {
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

SYMFLOW_LIBRARY_LINKAGE image_dataset load_mnist_format(const std::string& dir, const image_dataset_options& options) {
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

}  // namespace symflow
