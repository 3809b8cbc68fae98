#pragma once
// Two elementwise ops in one tile loop: second(first(a, b), c) or second(c, first(a, b)), the first
// op's result kept in a register instead of a tile buffer. A fused pass (fused_pass.hpp) runs a
// member this way when one later member of the pass is the only reader of its value and it is not
// stored: a tile loop of a cheap op is bound by its store (one packet store per packet of result),
// so a chained pair does the work of two steps with one store and one load less per packet.
//
// Which ops chain is the ops' own declaration: a binary elementwise op whose packet form is one
// instruction declares `static constexpr bool chains = true;` (add, sub, mul). The kernels are the
// product of that list with itself, for both positions of the intermediate, in f32 and f64.
//
// Same bits as the two steps: the intermediate is rounded to the dtype, and an empty asm statement
// that the compiler cannot see through keeps it from being contracted with the second op into a
// fused multiply-add whatever -ffp-contract a program uses. Where that statement cannot be written
// (compilers other than GCC and Clang on x86), no pair chains and the pass runs the two steps.
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/dtype.hpp"
#include "../core/separate_compilation.hpp"
#include "../ir/op_registry.hpp"
#include "../ops/packet_math.hpp"

namespace symflow {

// One elementwise op over n elements: in[k] points at operand k's n values, out at the result's.
using tile_function = void (*)(const void* const* in, void* out, std::size_t n);

namespace runtime_detail {

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
inline constexpr bool chaining_available = true;
// The value as rounded, opaque to the optimiser ("+v": any SSE/AVX register, scalar or packet).
template <class T>
inline void keep_rounded(T& v) {
  asm("" : "+v"(v));
}
#else
inline constexpr bool chaining_available = false;
template <class T>
inline void keep_rounded(T&) {}
#endif

template <class Op>
concept chaining_op = requires {
  { Op::chains } -> std::convertible_to<bool>;
} && Op::chains;

template <class Registered>
struct chaining_filter;
template <class... Entry>
struct chaining_filter<std::tuple<Entry...>> {
  using type = decltype(std::tuple_cat(
      std::declval<std::conditional_t<Entry::kind == node_kind::elementwise && chaining_op<typename Entry::type>,
                                      std::tuple<typename Entry::type>, std::tuple<>>>()...));
};
// The registered ops that chain, in the registry's order.
using chaining_ops = typename chaining_filter<registered_ops>::type;
inline constexpr std::size_t chaining_count = std::tuple_size_v<chaining_ops>;

// Op's place in chaining_ops, or -1 (an op that does not chain, or an op instance with attributes).
template <class Op>
consteval int chain_index() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    int at = -1;
    ((std::is_same_v<Op, std::tuple_element_t<I, chaining_ops>> ? (at = int(I)) : 0), ...);
    return at;
  }(std::make_index_sequence<chaining_count>{});
}

// in[0], in[1]: the first op's operands; in[2]: the second op's other operand.
template <class First, class Second, int Position, class R>
void chained_tile_kernel(const void* const* in, void* out, std::size_t n) {
  const R* a = static_cast<const R*>(in[0]);
  const R* b = static_cast<const R*>(in[1]);
  const R* c = static_cast<const R*>(in[2]);
  R* o = static_cast<R*>(out);
  std::size_t i = 0;
  if constexpr (simd::vectorized<R>) {
    using P = simd::packet_t<R>;
    constexpr std::size_t width = simd::packet_size<R>;
#pragma GCC unroll 4
    for (; i + width <= n; i += width) {
      P t = First::packet(simd::pm::ploadu<P>(a + i), simd::pm::ploadu<P>(b + i));
      keep_rounded(t);
      const P other = simd::pm::ploadu<P>(c + i);
      simd::pm::pstoreu(o + i, Position == 0 ? Second::packet(t, other) : Second::packet(other, t));
    }
  }
  for (; i < n; ++i) {
    R t = static_cast<R>(First::apply(a[i], b[i]));
    keep_rounded(t);
    o[i] = static_cast<R>(Position == 0 ? Second::apply(t, c[i]) : Second::apply(c[i], t));
  }
}

template <class R, std::size_t I>
constexpr tile_function chained_entry() {
  constexpr std::size_t first = I / (2 * chaining_count), second = I / 2 % chaining_count;
  return &chained_tile_kernel<std::tuple_element_t<first, chaining_ops>, std::tuple_element_t<second, chaining_ops>,
                              int(I % 2), R>;
}

template <class R>
tile_function chained_of(int first, int second, int position) {
  static constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<tile_function, sizeof...(I)>{chained_entry<R, I>()...};
  }(std::make_index_sequence<2 * chaining_count * chaining_count>{});
  return table[(std::size_t(first) * chaining_count + std::size_t(second)) * 2 + std::size_t(position)];
}
}  // namespace runtime_detail

// The kernel computing second(first(a, b), c) (position 0) or second(c, first(a, b)) (position 1)
// over f32 or f64 operands of one dtype, for ops given by their elementwise_kernel::chain, or nullptr
// where they do not chain. Compiled with the op table (core/separate_compilation.hpp).
#if SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY
tile_function chained_tile_function(dtype type, int first, int second, int position);
#else
SYMFLOW_LIBRARY_LINKAGE tile_function chained_tile_function(dtype type, int first, int second, int position) {
  using namespace runtime_detail;
  if constexpr (!chaining_available || chaining_count == 0) {
    return nullptr;
  } else {
    if (first < 0 || second < 0 || std::size_t(first) >= chaining_count || std::size_t(second) >= chaining_count ||
        (position != 0 && position != 1))
      return nullptr;
    if (type == dtype::f32) return chained_of<float>(first, second, position);
    if (type == dtype::f64) return chained_of<double>(first, second, position);
    return nullptr;
  }
}
#endif

}  // namespace symflow
