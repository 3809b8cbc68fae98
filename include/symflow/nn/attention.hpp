#pragma once
// Multi-head self-attention as a layer object. q, k and v are three dense projections of the input,
// each split into Heads heads of Dim / Heads features; every head attends by scaled dot product
// (ops/attention.hpp), optionally causally, and the heads, joined again, go through an output
// projection. The heads become the batch of one batched matrix product: [n, t, Dim] is reshaped to
// [n, t, Heads, d], its axes swapped to [n, Heads, t, d] and flattened to [n * Heads, t, d].
//
//   nn::multi_head_attention<"attention", 128, 4> attention;
//   auto y = attention(x, causal);  // x [n, 64, 128] -> [n, 64, 128]
//
// Projections start Glorot-uniform, biases zero (as PyTorch's nn.MultiheadAttention's in-projection).
#include <cstddef>
#include <tuple>

#include "../core/shape.hpp"
#include "../core/source_site.hpp"
#include "../expr/fixed_string.hpp"
#include "../expr/scope.hpp"
#include "../ops/all.hpp"
#include "../ops/attention.hpp"
#include "../train/initializers.hpp"
#include "parameter.hpp"

namespace symflow::nn {

struct attention_options {
  any_initializer weights = glorot_uniform{};
  any_initializer bias = zeros;
};

template <fixed_string Name, std::size_t Dim, std::size_t Heads, class T = float>
struct multi_head_attention {
  static_assert(Heads >= 1 && Dim % Heads == 0, "symflow: multi_head_attention: Dim must be a multiple of Heads");
  static constexpr std::size_t head_dim = Dim / Heads;

  parameter<Name, "Wq", T, shape<Dim, Dim>> Wq;
  parameter<Name, "bq", T, shape<Dim>> bq;
  parameter<Name, "Wk", T, shape<Dim, Dim>> Wk;
  parameter<Name, "bk", T, shape<Dim>> bk;
  parameter<Name, "Wv", T, shape<Dim, Dim>> Wv;
  parameter<Name, "bv", T, shape<Dim>> bv;
  parameter<Name, "Wo", T, shape<Dim, Dim>> Wo;
  parameter<Name, "bo", T, shape<Dim>> bo;

  explicit multi_head_attention(attention_options o = {}, source_site where = source_site::current())
      : Wq(o.weights, where), bq(o.bias, where), Wk(o.weights, where), bk(o.bias, where),
        Wv(o.weights, where), bv(o.bias, where), Wo(std::move(o.weights), where), bo(std::move(o.bias), where) {}
  auto layers() const { return std::tie(Wq, bq, Wk, bk, Wv, bv, Wo, bo); }

  // x is [t, Dim] (one sequence) or [n, t, Dim]; in the latter, n or t may be unknown, not both.
  template <expression X>
  auto operator()(const X& x, source_site where = source_site::current()) const {
    return attend<false>(x, where);
  }
  template <expression X>
  auto operator()(const X& x, causal_mask_t, source_site where = source_site::current()) const {
    return attend<true>(x, where);
  }

 private:
  template <bool Causal, class X>
  auto attend(const X& x, source_site where) const {
    using S = shape_of<X>;
    static_assert((S::rank == 2 || S::rank == 3) && S::extents[S::rank - 1] == Dim,
                  "symflow: multi_head_attention: the input must be [t, Dim] or [n, t, Dim] with the layer's Dim");
    static_assert(S::rank == 2 || S::extents[0] != dyn || S::extents[1] != dyn,
                  "symflow: multi_head_attention: an input [n, t, Dim] needs n or t known at compile time");
    return scope(
        Name.value,
        [&] {
          const auto q = split_heads(matmul(x, Wq.var) + bq.var);
          const auto k = split_heads(matmul(x, Wk.var) + bk.var);
          const auto v = split_heads(matmul(x, Wv.var) + bv.var);
          if constexpr (Causal)
            return matmul(join_heads<S>(scaled_dot_product_attention(q, k, v, causal)), Wo.var) + bo.var;
          else
            return matmul(join_heads<S>(scaled_dot_product_attention(q, k, v)), Wo.var) + bo.var;
        },
        where);
  }
  static constexpr std::size_t times_heads(std::size_t n) { return n == dyn ? dyn : n * Heads; }

  // [n, t, Dim] -> [n * Heads, t, d]; [t, Dim] -> [Heads, t, d].
  template <class X>
  static auto split_heads(const X& x) {
    using S = shape_of<X>;
    if constexpr (S::rank == 3) {
      constexpr std::size_t n = S::extents[0], t = S::extents[1];
      return reshape<shape<times_heads(n), t, head_dim>>(permute<0, 2, 1, 3>(reshape<shape<n, t, Heads, head_dim>>(x)));
    } else {
      return permute<1, 0, 2>(reshape<shape<S::extents[0], Heads, head_dim>>(x));
    }
  }
  // The inverse, back to the input's shape S.
  template <class S, class H>
  static auto join_heads(const H& heads) {
    if constexpr (S::rank == 3) {
      constexpr std::size_t n = S::extents[0], t = S::extents[1];
      return reshape<shape<n, t, Dim>>(permute<0, 2, 1, 3>(reshape<shape<n, Heads, t, head_dim>>(heads)));
    } else {
      return reshape<shape<S::extents[0], Dim>>(permute<1, 0, 2>(heads));
    }
  }
};

}  // namespace symflow::nn
