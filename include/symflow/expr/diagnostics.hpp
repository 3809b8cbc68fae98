#pragma once
#include <algorithm>
#include <cstddef>
#include <string_view>
#include <tuple>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "fixed_string.hpp"
#include "leaves.hpp"

// Compile-time errors whose FIRST line says what is wrong in words:
//
//   matmul.hpp:190:13: error: invalid application of 'sizeof' to incomplete type
//     'symflow::compile_error<symflow::fixed_string<67>{"matmul: f32[?,784] x f32[100,10]: inner
//     extents 784 and 100 differ"}>'
//
// C++20 has no static_assert with a computed message, but compilers print the template arguments
// of a type they cannot use. So a check renders its message into a fixed_string at compile time
// (op names, dtypes as f32/i32, shapes with dyn as ?) and names compile_error<message>, a class
// template that is declared and never defined. The check then returns a dummy value from an
// `if constexpr` branch, so nothing after it is instantiated with the bad operands and the output
// stays a few lines long. The message is ASCII: g++ prints other bytes as octal escapes.
namespace symflow {

// Never defined: naming it with sizeof is the error, and its argument is the message.
template <fixed_string Message>
struct compile_error;

// What a failed check returns instead of the node it could not build: a placeholder whose extents
// are all dyn, which later static checks accept, so the first error stays the only one. Evaluating
// it is not reported again (cpu::detail::named_leaf_evaluator).
inline constexpr fixed_string invalid_operands_name = "symflow: invalid operands (see the first error)";
template <class T, std::size_t Rank>
using invalid_operands_result = placeholder<invalid_operands_name, T, dyn_shape<Rank>>;

namespace diag {

// A message being rendered; `trim` turns it into a fixed_string of exactly its length.
struct text {
  static constexpr std::size_t capacity = 400;
  char data[capacity]{};
  std::size_t size = 0;

  constexpr text& operator<<(std::string_view s) {
    for (char c : s)
      if (size < capacity) data[size++] = c;
    return *this;
  }
  constexpr text& operator<<(char c) { return *this << std::string_view(&c, 1); }
  // An extent: dyn as '?'.
  constexpr text& extent(std::size_t n) {
    if (n == dyn) return *this << '?';
    char digits[20]{};
    std::size_t k = 0;
    do {
      digits[k++] = char('0' + n % 10);
      n /= 10;
    } while (n != 0);
    while (k > 0) *this << digits[--k];
    return *this;
  }
};

template <std::size_t N>
consteval fixed_string<N> trim(const text& t) {
  char out[N]{};
  for (std::size_t i = 0; i + 1 < N; ++i) out[i] = t.data[i];
  return fixed_string<N>(out);
}

// "f32", "i32", ...; a type that is no dtype prints as "?".
template <class T>
consteval std::string_view dtype_text() {
  if constexpr (is_supported_dtype_v<T>) return dtype_name(dtype_v<T>);
  else return "?";
}

// "[?,784]"
template <shape_spec S>
constexpr text& append_shape(text& t) {
  t << '[';
  for (std::size_t i = 0; i < S::rank; ++i) {
    if (i != 0) t << ',';
    t.extent(S::extents[i]);
  }
  return t << ']';
}

// "f32[?,784]"
template <class T, shape_spec S>
constexpr text& append_type(text& t) {
  t << dtype_text<T>();
  return append_shape<S>(t);
}

// "a, b and c"
template <class... Parts>
constexpr void append_list(text& t, const Parts&... parts) {
  std::size_t i = 0;
  constexpr std::size_t n = sizeof...(Parts);
  ((t << (i == 0 ? "" : i + 1 == n ? " and " : ", "), parts(t), ++i), ...);
}

// Elementwise dtypes: "add: operand dtypes i32 and f32 differ; convert with cast<T>(x)", or, when
// they agree but the op rejects them, "exp: operand dtype i32 is not accepted; ...".
template <class Op, class... Ts>
consteval text elementwise_dtype_message() {
  text t;
  t << Op::name << ": ";
  constexpr bool all_same = [] {
    std::string_view names[] = {dtype_text<Ts>()...};
    for (auto n : names)
      if (n != names[0]) return false;
    return true;
  }();
  if constexpr (all_same && sizeof...(Ts) > 0) {
    t << "operand dtype " << dtype_text<std::tuple_element_t<0, std::tuple<Ts...>>>()
      << " is not accepted by this op; convert with cast<T>(x)";
  } else {
    t << "operand dtypes ";
    append_list(t, [](text& u) { u << dtype_text<Ts>(); }...);
    t << " differ; convert with cast<T>(x)";
  }
  return t;
}

// Elementwise shapes: "add: f32[3,4] and f32[5] cannot be broadcast: extents 4 and 5 differ".
template <class Op, class... Operands>
consteval text broadcast_message() {
  text t;
  t << Op::name << ": ";
  append_list(t, [](text& u) {
    append_type<typename Operands::value_type, typename Operands::shape_type>(u);
  }...);
  t << " cannot be broadcast: extents ";
  // The first conflict, right-aligned, merging the operands left to right.
  constexpr std::size_t rank = std::max({std::size_t(0), Operands::shape_type::rank...});
  std::size_t merged[rank + 1]{};
  for (auto& m : merged) m = 1;
  bool found = false;
  auto merge = [&]<class S>() {
    for (std::size_t i = 0; i < S::rank && !found; ++i) {
      std::size_t& m = merged[rank - S::rank + i];
      const std::size_t e = S::extents[i];
      if (m == e || e == 1 || e == dyn) continue;
      if (m == 1 || m == dyn) {
        m = e;
        continue;
      }
      t.extent(m) << " and ";
      t.extent(e) << " differ";
      found = true;
    }
  };
  (merge.template operator()<typename Operands::shape_type>(), ...);
  if (!found) t << "differ";
  return t;
}

}  // namespace diag
}  // namespace symflow
