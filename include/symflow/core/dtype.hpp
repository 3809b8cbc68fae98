#pragma once
// The dtype table: everything symflow knows about an element type is one row below — its C++ type,
// its name, its size, and the codes other formats give it (NumPy .npy, safetensors, ONNX,
// TensorFlow/TensorBoard, generated C++ and CUDA source). Every other file asks the table: by dtype
// (dtype_info_of, dtype_name, dtype_size), the reverse (find_dtype, dtype_from_name, dtype_by_*),
// or for the C++ type (visit_dtype at run time, dtype_type_t and dtype_v at compile time). No other
// file switches on a dtype (tests/dtype_table_check.cmake fails the build's tests if one does).
//
// Compute dtypes and storage dtypes. The first rows (f32, f64, i32, i64, bool) are the dtypes ops
// compute in: kernels, SIMD functions and derivative rules are instantiated for them alone. The
// rows after them are storage dtypes (f16, bf16 and the small or unsigned integers): tensors, files
// and graph values hold them, and an op on them computes in the row's `compute` dtype — the
// interpreter widens the operands and narrows the result (runtime/storage_lowering.hpp), as
// PyTorch computes half-precision CPU ops in float. Only `cast` and views take them directly.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "eigen.hpp"  // Eigen::half and Eigen::bfloat16: the f16 and bf16 rows' C++ types

#include "error.hpp"
#include "excerpt.hpp"

namespace symflow {

// The element types, in the order of the table's rows. An enumerator's value is also the dtype's
// code in .sfg files (io/binary.hpp): new ones go at the end.
enum class dtype : std::uint8_t { f32, f64, i32, i64, boolean, f16, bf16, i8, u8, i16, u16, u32, u64 };

// Rows [0, compute_dtype_count) are the compute dtypes; the rest are storage dtypes.
inline constexpr std::size_t compute_dtype_count = 5;

// One row's facts, apart from the C++ type (dtype_row<T> adds it).
struct dtype_info {
  dtype type;
  std::string_view name;         // symflow's spelling: messages, graph JSON and .sfg "dtype", op attributes
  std::size_t size;              // bytes per element, in memory and in every file format symflow writes
  std::string_view npy_descr;    // NumPy .npy header 'descr' (little-endian; '|' for single bytes)
  std::string_view safetensors;  // safetensors header "dtype"
  std::int32_t onnx;             // ONNX TensorProto.DataType (onnx.proto)
  std::int32_t tensorflow;       // TensorFlow DataType (types.proto), as TensorBoard's GraphDef carries it
  std::string_view cpp;          // C++ spelling in generated host source (<cstdint> names)
  std::string_view cuda;         // C++ spelling in generated NVRTC source (LP64, no <cstdint>)
  dtype compute;                 // the dtype ops on it compute in: itself for a compute dtype
};

template <class T>
struct dtype_row : dtype_info {
  using type = T;
};

// THE TABLE, one row per dtype, in the order of `enum class dtype`.
// Adding a storage dtype is one new row here (plus its enumerator above, last): names, sizes, file
// codes, lookups, visit_dtype and the widening to its compute dtype all follow from the rows.
inline constexpr std::tuple dtype_table{
    //                       dtype         name    size npy    safetensors onnx tf  cpp                cuda                  compute
    dtype_row<float>          {{dtype::f32,     "f32",  4, "<f4", "F32",      1,  1,  "float",           "float",              dtype::f32}},
    dtype_row<double>         {{dtype::f64,     "f64",  8, "<f8", "F64",      11, 2,  "double",          "double",             dtype::f64}},
    dtype_row<std::int32_t>   {{dtype::i32,     "i32",  4, "<i4", "I32",      6,  3,  "std::int32_t",    "int",                dtype::i32}},
    dtype_row<std::int64_t>   {{dtype::i64,     "i64",  8, "<i8", "I64",      7,  9,  "std::int64_t",    "long long",          dtype::i64}},
    dtype_row<bool>           {{dtype::boolean, "bool", 1, "|b1", "BOOL",     9,  10, "bool",            "bool",               dtype::boolean}},
    // Storage dtypes. bf16 has no NumPy dtype (""): .npy files cannot hold it.
    dtype_row<Eigen::half>    {{dtype::f16,     "f16",  2, "<f2", "F16",      10, 19, "Eigen::half",     "__half",             dtype::f32}},
    dtype_row<Eigen::bfloat16>{{dtype::bf16,    "bf16", 2, "",    "BF16",     16, 14, "Eigen::bfloat16", "__nv_bfloat16",      dtype::f32}},
    dtype_row<std::int8_t>    {{dtype::i8,      "i8",   1, "|i1", "I8",       3,  6,  "std::int8_t",     "signed char",        dtype::i32}},
    dtype_row<std::uint8_t>   {{dtype::u8,      "u8",   1, "|u1", "U8",       2,  4,  "std::uint8_t",    "unsigned char",      dtype::i32}},
    dtype_row<std::int16_t>   {{dtype::i16,     "i16",  2, "<i2", "I16",      5,  5,  "std::int16_t",    "short",              dtype::i32}},
    dtype_row<std::uint16_t>  {{dtype::u16,     "u16",  2, "<u2", "U16",      4,  17, "std::uint16_t",   "unsigned short",     dtype::i32}},
    dtype_row<std::uint32_t>  {{dtype::u32,     "u32",  4, "<u4", "U32",      12, 22, "std::uint32_t",   "unsigned int",       dtype::i64}},
    // u64 computes in i64: +, -, * and comparisons for equality agree modulo 2^64; values from 2^63
    // up read as negative in ordering, division and conversion to float.
    dtype_row<std::uint64_t>  {{dtype::u64,     "u64",  8, "<u8", "U64",      13, 23, "std::uint64_t",   "unsigned long long", dtype::i64}},
};

inline constexpr std::size_t dtype_count = std::tuple_size_v<std::remove_const_t<decltype(dtype_table)>>;

// Row I's type, and the C++ type of a dtype known at compile time (dtype_type_t<dtype::f32> is float).
template <std::size_t I>
using dtype_row_t = std::tuple_element_t<I, std::remove_const_t<decltype(dtype_table)>>;
template <dtype D>
using dtype_type_t = typename dtype_row_t<static_cast<std::size_t>(D)>::type;

namespace detail {
template <std::size_t... I>
constexpr std::array<dtype_info, sizeof...(I)> dtype_infos_of(std::index_sequence<I...>) {
  return {static_cast<const dtype_info&>(std::get<I>(dtype_table))...};
}
template <class T, std::size_t... I>
consteval std::size_t dtype_row_index(std::index_sequence<I...>) {
  std::size_t row = sizeof...(I);
  ((std::is_same_v<T, typename dtype_row_t<I>::type> ? void(row = I) : void()), ...);
  return row;
}
template <std::size_t... I>
consteval bool dtype_sizes_match_types(std::index_sequence<I...>) {
  return ((sizeof(typename dtype_row_t<I>::type) == std::get<I>(dtype_table).size) && ...);
}
}  // namespace detail

// The rows without their C++ types, indexed by dtype: iterate these to try every dtype.
inline constexpr std::array<dtype_info, dtype_count> dtype_infos =
    detail::dtype_infos_of(std::make_index_sequence<dtype_count>{});

namespace detail {
// Every row in enum order, every name and code used once (no NumPy descr: ""), the compute rows
// first, each computing in itself, every storage row in a compute row.
consteval bool dtype_table_is_consistent() {
  for (std::size_t i = 0; i < dtype_count; ++i) {
    if (static_cast<std::size_t>(dtype_infos[i].type) != i) return false;
    const auto compute = static_cast<std::size_t>(dtype_infos[i].compute);
    if (i < compute_dtype_count ? compute != i : compute >= compute_dtype_count) return false;
    for (std::size_t j = 0; j < i; ++j) {
      const dtype_info &a = dtype_infos[i], &b = dtype_infos[j];
      if (a.name == b.name || (!a.npy_descr.empty() && a.npy_descr == b.npy_descr) || a.safetensors == b.safetensors || a.onnx == b.onnx ||
          a.tensorflow == b.tensorflow || a.cpp == b.cpp || a.cuda == b.cuda)
        return false;
    }
  }
  return true;
}
}  // namespace detail
static_assert(detail::dtype_table_is_consistent(),
              "symflow: the dtype table lists its rows in the order of enum dtype, each name and code once");
static_assert(detail::dtype_sizes_match_types(std::make_index_sequence<dtype_count>{}),
              "symflow: a dtype row's size differs from sizeof its C++ type");

template <class T>
inline constexpr bool is_supported_dtype_v =
    detail::dtype_row_index<T>(std::make_index_sequence<dtype_count>{}) < dtype_count;

// Ops compute in T (a compute row's type).
template <class T>
inline constexpr bool is_compute_dtype_v =
    detail::dtype_row_index<T>(std::make_index_sequence<dtype_count>{}) < compute_dtype_count;

template <class T>
consteval dtype dtype_of() {
  static_assert(is_supported_dtype_v<T>,
                "symflow: tensor element types are float, double, int32_t, int64_t, bool and the storage "
                "types Eigen::half, Eigen::bfloat16, int8_t, uint8_t, int16_t, uint16_t, uint32_t, uint64_t");
  return dtype_infos[detail::dtype_row_index<T>(std::make_index_sequence<dtype_count>{})].type;
}

template <class T>
inline constexpr dtype dtype_v = dtype_of<T>();

template <class T>
inline constexpr bool is_floating_dtype_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

// The C++ type ops on T compute in (float for Eigen::half, std::int32_t for std::int8_t, T itself
// for a compute type).
template <class T>
using compute_type_t = typename dtype_row_t<static_cast<std::size_t>(dtype_infos[static_cast<std::size_t>(dtype_v<T>)].compute)>::type;

// ---- By dtype ----

// The row of d; nullptr for a value that is no enumerator (a cast from a corrupt byte).
constexpr const dtype_info* find_dtype_info(dtype d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  return i < dtype_count ? &dtype_infos[i] : nullptr;
}

// The row of d; value_error naming the code for a value that is no enumerator.
constexpr const dtype_info& dtype_info_of(dtype d) {
  if (const dtype_info* row = find_dtype_info(d)) return *row;
  throw value_error("unknown dtype code " + std::to_string(static_cast<unsigned>(d)));
}

// "f32", ...; "?" for a value that is no enumerator (these two never throw: messages use them).
constexpr std::string_view dtype_name(dtype d) noexcept {
  const dtype_info* row = find_dtype_info(d);
  return row ? row->name : "?";
}
// Whether ops compute in d itself (false for a storage dtype and for a value that is no enumerator).
constexpr bool is_compute_dtype(dtype d) noexcept { return static_cast<std::size_t>(d) < compute_dtype_count; }
// The dtype ops on d compute in (d itself for a compute dtype); d for a value that is no enumerator.
constexpr dtype compute_dtype(dtype d) noexcept {
  const dtype_info* row = find_dtype_info(d);
  return row ? row->compute : d;
}
// Whether d holds floating-point values (f32, f64, f16, bf16).
constexpr bool is_floating_dtype(dtype d) noexcept {
  return compute_dtype(d) == dtype::f32 || compute_dtype(d) == dtype::f64;
}
// Bytes per element; 0 for a value that is no enumerator.
constexpr std::size_t dtype_size(dtype d) noexcept {
  const dtype_info* row = find_dtype_info(d);
  return row ? row->size : 0;
}

// ---- The reverse: by name or code ----

// The dtype whose row holds `value` in `column` (find_dtype(&dtype_info::safetensors, "F32")),
// nullopt when no row does.
template <class V>
constexpr std::optional<dtype> find_dtype(V dtype_info::*column, const std::type_identity_t<V>& value) noexcept {
  if constexpr (std::is_same_v<V, std::string_view>)
    if (value.empty()) return std::nullopt;  // an empty cell is no code (bf16 has no NumPy descr)
  for (const dtype_info& row : dtype_infos)
    if (row.*column == value) return row.type;
  return std::nullopt;
}

// "f32" -> dtype::f32; nullopt for an unknown name.
constexpr std::optional<dtype> dtype_from_name(std::string_view name) noexcept {
  return find_dtype(&dtype_info::name, name);
}

namespace detail {
[[noreturn]] inline void unknown_dtype(std::string_view what, std::string_view value) {
  throw value_error("unknown " + std::string(what) + " '" + excerpt(value) + "'");
}
[[noreturn]] inline void unknown_dtype(std::string_view what, std::int32_t value) {
  throw value_error("unknown " + std::string(what) + " " + std::to_string(value));
}
template <class V>
dtype dtype_by(V dtype_info::*column, const std::type_identity_t<V>& value, std::string_view what) {
  if (const auto d = find_dtype(column, value)) return *d;
  unknown_dtype(what, value);
}
}  // namespace detail

// The same lookups, throwing value_error naming the value when no row holds it.
inline dtype dtype_by_name(std::string_view name) { return detail::dtype_by(&dtype_info::name, name, "dtype name"); }
inline dtype dtype_by_npy_descr(std::string_view descr) {
  return detail::dtype_by(&dtype_info::npy_descr, descr, "NumPy descr");
}
inline dtype dtype_by_safetensors(std::string_view code) {
  return detail::dtype_by(&dtype_info::safetensors, code, "safetensors dtype");
}
inline dtype dtype_by_onnx(std::int32_t code) { return detail::dtype_by(&dtype_info::onnx, code, "ONNX data type"); }
inline dtype dtype_by_tensorflow(std::int32_t code) {
  return detail::dtype_by(&dtype_info::tensorflow, code, "TensorFlow DataType");
}

// ---- To the C++ type ----

namespace detail {
template <std::size_t I, std::size_t Rows = dtype_count, class F>
decltype(auto) visit_dtype_from(dtype d, F& f) {
  using T = typename dtype_row_t<I>::type;
  if constexpr (I + 1 < Rows) {
    if (d != dtype_infos[I].type) return visit_dtype_from<I + 1, Rows>(d, f);
  } else {
    if (d != dtype_infos[I].type) throw value_error("unknown dtype code " + std::to_string(static_cast<unsigned>(d)));
  }
  return f(T{});
}
}  // namespace detail

// Calls f(T{}) with the C++ type of d and returns what it returns (the same type for every row);
// value_error naming the code for a value that is no enumerator.
template <class F>
decltype(auto) visit_dtype(dtype d, F&& f) {
  return detail::visit_dtype_from<0>(d, f);
}

// As visit_dtype, for code that computes: instantiates f for the compute dtypes only, and throws
// value_error naming a storage dtype d (the caller widens such values first: compute_dtype(d)).
template <class F>
decltype(auto) visit_compute_dtype(dtype d, F&& f) {
  if (!is_compute_dtype(d) && find_dtype_info(d))
    throw value_error(std::string(dtype_name(d)) + " is a storage dtype: ops compute on it in " +
                      std::string(dtype_name(compute_dtype(d))) + " (cast it first)");
  return detail::visit_dtype_from<0, compute_dtype_count>(d, f);
}

}  // namespace symflow
