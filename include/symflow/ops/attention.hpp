#pragma once
// Scaled dot-product attention, softmax(q k^T / sqrt(d), masked) v, composed of primitive ops
// (matmul, transpose, where with a constant mask, and softmax's max, exp, sum and div): it fuses,
// differentiates and lowers to the graph value with no rules of its own. The scale and the mask join
// softmax's pass over the scores; the two products are Eigen GEMMs, batched over the leading axis.
//
//   auto out = scaled_dot_product_attention(q, k, v);          // q [n, tq, d], k [n, tk, d], v [n, tk, dv]
//   auto out = scaled_dot_product_attention(q, k, v, causal);  // query i sees keys 0..i
#include <cmath>
#include <cstddef>
#include <limits>

#include "../core/shape.hpp"
#include "../core/tensor.hpp"
#include "../expr/diagnostics.hpp"
#include "../expr/leaves.hpp"
#include "../expr/scope.hpp"
#include "add.hpp"
#include "matmul.hpp"
#include "mul.hpp"
#include "softmax.hpp"
#include "transpose.hpp"
#include "trilu.hpp"
#include "expand_as.hpp"
#include "where.hpp"

namespace symflow {

// The mask of attention in which query i sees keys 0..i only (PyTorch's is_causal, aligned at the
// top left when the query and key lengths differ).
struct causal_mask_t {};
inline constexpr causal_mask_t causal{};

namespace detail::attention {
template <class Q, class K, class V>
consteval diag::text shape_message() {
  using SQ = shape_of<Q>;
  using SK = shape_of<K>;
  using SV = shape_of<V>;
  diag::text t;
  t << "scaled_dot_product_attention: q ";
  diag::append_type<value_type_of<Q>, SQ>(t) << ", k ";
  diag::append_type<value_type_of<K>, SK>(t) << ", v ";
  diag::append_type<value_type_of<V>, SV>(t) << ": ";
  if constexpr (SQ::rank != SK::rank || SQ::rank != SV::rank || SQ::rank < 2 || SQ::rank > 3) {
    t << "q, k and v must all be [t, d] or all be [n, t, d]";
  } else if constexpr (SQ::extents[SQ::rank - 1] == dyn) {
    t << "the last extent of q (d, the scale is 1/sqrt(d)) must be known at compile time";
  } else {
    t << "the last extents of q and k (d) or the lengths of k and v differ";
  }
  return t;
}

template <class Q, class K, class V>
consteval bool shapes_fit() {
  using SQ = shape_of<Q>;
  using SK = shape_of<K>;
  using SV = shape_of<V>;
  constexpr std::size_t r = SQ::rank;
  if constexpr (r != SK::rank || r != SV::rank || r < 2 || r > 3) {
    return false;
  } else {
    const auto agree = [](std::size_t a, std::size_t b) { return a == b || a == dyn || b == dyn; };
    return SQ::extents[r - 1] != dyn && agree(SQ::extents[r - 1], SK::extents[r - 1]) &&
           agree(SK::extents[r - 2], SV::extents[r - 2]);
  }
}

// True where query i may see key j (j <= i).
template <std::size_t Queries, std::size_t Keys>
tensor<bool, shape<Queries, Keys>> causal_visibility() {
  tensor<bool, shape<Queries, Keys>> m({Queries, Keys}, false);
  for (std::size_t i = 0; i < Queries; ++i)
    for (std::size_t j = 0; j <= i && j < Keys; ++j) m(i, j) = true;
  return m;
}

template <bool Causal, class Q, class K, class V>
auto attend(const Q& q, const K& k, const V& v, source_site site) {
  using SQ = shape_of<Q>;
  using SK = shape_of<K>;
  using T = value_type_of<Q>;
  constexpr std::size_t r = SQ::rank;
  constexpr bool lengths_known = SQ::extents[r - 2] != dyn && SK::extents[r - 2] != dyn;
  if constexpr (!shapes_fit<Q, K, V>()) {
    constexpr auto message = shape_message<Q, K, V>();
    (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
    return invalid_operands_result<T, SQ::rank>{};
  } else {
    return scope(
        "attention",
        [&] {
          const T scale = T(1) / std::sqrt(T(SQ::extents[r - 1]));
          const auto scores = matmul(q, transpose(k)) * scale;  // [n, tq, tk]
          // A hidden score is replaced (not added to), so a NaN in a later key stays out of earlier
          // queries, and by the dtype's lowest finite value rather than -inf: exp gives exactly 0
          // after softmax subtracts the row maximum (each row sees key 0), and check_numerics has
          // no infinity to report.
          // The mask is a constant when both lengths are static; otherwise the lower triangle of an
          // all-true mask shaped like the scores, computed at run time (one byte per score).
          if constexpr (Causal && lengths_known)
            return matmul(softmax(where(constant(causal_visibility<SQ::extents[r - 2], SK::extents[r - 2]>()), scores,
                                        std::numeric_limits<T>::lowest())),
                          v);
          else if constexpr (Causal)
            return matmul(
                softmax(where(tril(expand_as(as_expression<bool>(true), scores)), scores, std::numeric_limits<T>::lowest())),
                v);
          else
            return matmul(softmax(scores), v);
        },
        site);
  }
}
}  // namespace detail::attention

template <expression Q, expression K, expression V>
auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, source_site where = source_site::current()) {
  return detail::attention::attend<false>(q, k, v, where);
}
template <expression Q, expression K, expression V>
auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, causal_mask_t,
                                  source_site where = source_site::current()) {
  return detail::attention::attend<true>(q, k, v, where);
}

}  // namespace symflow
