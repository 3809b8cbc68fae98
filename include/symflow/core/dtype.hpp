#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace symflow {

enum class dtype : std::uint8_t { f32, f64, i32, i64, boolean };

template <class T>
inline constexpr bool is_supported_dtype_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>;

template <class T>
consteval dtype dtype_of() {
  static_assert(is_supported_dtype_v<T>,
                "symflow: tensor element types are float, double, int32_t, int64_t and bool");
  if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return dtype::i64;
  else return dtype::boolean;
}

template <class T>
inline constexpr dtype dtype_v = dtype_of<T>();

constexpr std::string_view dtype_name(dtype d) {
  switch (d) {
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
    case dtype::boolean: return "bool";
  }
  return "?";
}

constexpr std::size_t dtype_size(dtype d) {
  switch (d) {
    case dtype::f32: case dtype::i32: return 4;
    case dtype::f64: case dtype::i64: return 8;
    case dtype::boolean: return 1;
  }
  return 0;
}

template <class T>
inline constexpr bool is_floating_dtype_v = std::is_floating_point_v<T>;

}  // namespace symflow
