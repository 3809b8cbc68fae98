#pragma once
// IDX files, the format of MNIST and Fashion-MNIST: a 4-byte magic 0x0000TTRR (two zero bytes, an
// element type code TT, the rank RR), RR big-endian u32 extents, then the elements in C order,
// big-endian. A file may be gzip-compressed (recognised by its 1f 8b magic, not by its name).
//
// Needs zlib: programs that include this header link it (CMake: find_package(ZLIB REQUIRED) and
// target_link_libraries(app PRIVATE ZLIB::ZLIB); Debian: zlib1g-dev). The library target itself
// stays free of the dependency, like the JSON graph format's nlohmann-json.
//
// Every failure throws data_error naming the file, what was expected and what was found. Sizes in
// the header are checked against a cap (idx_read_options::max_data_bytes, 2 GiB by default) and
// against the file before anything is allocated; a compressed file's size says little about its
// contents (a 6 MB .gz can inflate to 6 GB), so its data is inflated in chunks of at most 1 MiB,
// storage grows only with bytes actually decompressed, and inflating stops at the declared size:
// a stream that holds more (trailing bytes) or less (shortfall) is refused.
//
// The reader is defined in idx_impl.hpp, compiled once per program under
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp); only that unit needs zlib's header.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../core/separate_compilation.hpp"
#include "../core/shape.hpp"
#include "../core/tensor.hpp"

namespace symflow {

// A data file is missing, malformed or inconsistent with its companion files.
class data_error : public error {
 public:
  using error::error;
};

// The largest data section read_idx accepts unless told otherwise: 2 GiB, four times the largest
// IDX data set in common use (EMNIST ByClass training images, 547 MB).
inline constexpr std::uint64_t idx_default_max_data_bytes = std::uint64_t(1) << 31;

struct idx_read_options {
  std::uint64_t max_data_bytes = idx_default_max_data_bytes;  // refused above this, before allocating
};

// IDX element type codes: how a file stores its elements, not dtypes (to_tensor converts them).
enum class idx_type : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

// One row per IDX element type: its code, its name in messages and its C++ type (whose size is the
// element's size in the file).
template <class T>
struct idx_type_row {
  using element = T;
  idx_type type;
  std::string_view name;
};
inline constexpr std::tuple idx_type_table{
    idx_type_row<std::uint8_t>{idx_type::u8, "unsigned byte"},
    idx_type_row<std::int8_t>{idx_type::i8, "signed byte"},
    idx_type_row<std::int16_t>{idx_type::i16, "i16"},
    idx_type_row<std::int32_t>{idx_type::i32, "i32"},
    idx_type_row<float>{idx_type::f32, "f32"},
    idx_type_row<double>{idx_type::f64, "f64"},
};

namespace detail {
// Calls f(row) for each row of idx_type_table.
template <class F>
constexpr void for_each_idx_type_row(F&& f) {
  std::apply([&](const auto&... row) { (f(row), ...); }, idx_type_table);
}
}  // namespace detail

constexpr bool is_idx_type_code(std::uint8_t code) {
  bool found = false;
  detail::for_each_idx_type_row([&](const auto& row) { found = found || static_cast<std::uint8_t>(row.type) == code; });
  return found;
}

constexpr std::size_t idx_type_size(idx_type t) {
  std::size_t size = 0;
  detail::for_each_idx_type_row([&](const auto& row) {
    if (row.type == t) size = sizeof(typename std::remove_cvref_t<decltype(row)>::element);
  });
  return size;
}

constexpr std::string_view idx_type_name(idx_type t) {
  std::string_view name = "?";
  detail::for_each_idx_type_row([&](const auto& row) {
    if (row.type == t) name = row.name;
  });
  return name;
}

constexpr std::uint32_t idx_magic(idx_type type, std::uint8_t rank) {
  return (std::uint32_t(type) << 8) | rank;
}

// The contents of an IDX file: element type, extents and the elements, already in host byte order.
struct idx_array {
  std::string source;  // the file it came from, for messages
  idx_type type = idx_type::u8;
  std::vector<std::size_t> extents;
  std::vector<unsigned char> bytes;

  std::size_t size() const { return bytes.size() / idx_type_size(type); }

  // Calls f with each element, as its own C++ type, in storage order.
  template <class F>
  void for_each_element(F&& f) const {
    detail::for_each_idx_type_row([&](const auto& row) {
      if (row.type == type) each<typename std::remove_cvref_t<decltype(row)>::element>(f);
    });
  }

  // The elements converted to T (static_cast), as a tensor of the file's extents.
  template <class T, std::size_t Rank>
  tensor<T, dyn_shape<Rank>> to_tensor() const {
    if (extents.size() != Rank)
      throw data_error("idx: '" + source + "' has rank " + std::to_string(extents.size()) + " (shape " +
                       format_extents(extents) + "), expected rank " + std::to_string(Rank));
    extents_t<Rank> e{};
    std::copy(extents.begin(), extents.end(), e.begin());
    tensor<T, dyn_shape<Rank>> out(e, uninitialized);
    T* dst = out.data();
    for_each_element([&](auto v) { *dst++ = static_cast<T>(v); });
    return out;
  }

 private:
  template <class E, class F>
  void each(F& f) const {
    const std::size_t n = bytes.size() / sizeof(E);
    for (std::size_t i = 0; i < n; ++i) {
      E v;
      std::memcpy(&v, bytes.data() + i * sizeof(E), sizeof(E));
      f(v);
    }
  }
};

// Any IDX file: the element type and rank come from its header.
SYMFLOW_LIBRARY_LINKAGE idx_array read_idx(const std::string& path, const idx_read_options& options = {});

// An IDX file that must hold the given element type and rank (e.g. u8 rank 3 for images).
SYMFLOW_LIBRARY_LINKAGE idx_array read_idx(const std::string& path, idx_type type, std::uint8_t rank,
                                           const idx_read_options& options = {});

}  // namespace symflow

#if !SYMFLOW_LIBRARY_DECLARED_ONLY
#include "idx_impl.hpp"
#endif
