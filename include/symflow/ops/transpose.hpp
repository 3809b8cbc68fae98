#pragma once
#include "../expr/structural.hpp"

namespace symflow {
namespace ops {

// Reorders axes: result axis i is operand axis Perm[i]. A pure relabelling of strides: no copy.
template <std::size_t... Perm>
struct permute_op {
  static constexpr std::string_view name = "transpose";
  static constexpr bool contiguous_operand = false;
  static constexpr std::array<std::size_t, sizeof...(Perm)> perm{Perm...};
  // Attributes for the graph value (graph/).
  template <class V>
  static void visit_attributes(V&& v) {
    v("perm", perm);
  }

  template <class S>
  static constexpr bool shapes_ok = [] {
    if constexpr (S::rank != sizeof...(Perm)) {
      return false;
    } else {
      std::array<bool, sizeof...(Perm)> seen{};
      for (std::size_t p : perm) {
        if (p >= S::rank || seen[p]) return false;
        seen[p] = true;
      }
      return true;
    }
  }();
  template <class S>
  using result_shape = shape<S::extents[Perm]...>;

  template <std::size_t R>
  static extents_t<R> infer_extents(const auto&, const extents_t<R>& e) {
    return {e[Perm]...};
  }
  template <class G, class X>
  static auto gradient(const G& g, const X&) {
    return std::tuple{make_view(inverse(), std::source_location{}, g)};
  }
  static constexpr auto inverse() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      constexpr auto inv = [] {
        std::array<std::size_t, sizeof...(Perm)> out{};
        for (std::size_t i = 0; i < out.size(); ++i) out[perm[i]] = i;
        return out;
      }();
      return permute_op<inv[I]...>{};
    }(std::make_index_sequence<sizeof...(Perm)>{});
  }
  template <std::size_t R>
  static layout<R> apply(const layout<R>& in) {
    return {{in.extents[Perm]...}, {in.strides[Perm]...}, in.offset};
  }
};
}  // namespace ops

template <std::size_t... Perm, expression X>
auto permute(const X& x, std::source_location where = std::source_location::current()) {
  return make_view(ops::permute_op<Perm...>{}, where, x);
}

// Swaps the last two axes (a matrix transpose, batched for rank 3).
template <expression X>
auto transpose(const X& x, std::source_location where = std::source_location::current()) {
  static_assert(rank_of<X> == 2 || rank_of<X> == 3, "symflow: transpose takes a rank-2 or rank-3 operand");
  if constexpr (rank_of<X> == 2) return make_view(ops::permute_op<1, 0>{}, where, x);
  else return make_view(ops::permute_op<0, 2, 1>{}, where, x);
}
}  // namespace symflow
