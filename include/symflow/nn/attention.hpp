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
// The projections are nn::dense layers: Glorot-uniform weights and zero biases by default (as
// PyTorch's nn.MultiheadAttention's in-projection), or the dense_options given.
#include <cstddef>
#include <tuple>

#include "../core/shape.hpp"
#include "../core/source_site.hpp"
#include "../expr/fixed_string.hpp"
#include "../expr/scope.hpp"
#include "../ops/all.hpp"
#include "../ops/attention.hpp"
#include "layers.hpp"

namespace symflow::nn {

template <fixed_string Name, std::size_t Dim, std::size_t Heads, class T = float>
struct multi_head_attention {
  static_assert(Heads >= 1 && Dim % Heads == 0, "symflow: multi_head_attention: Dim must be a multiple of Heads");
  static constexpr std::size_t head_dim = Dim / Heads;

  // The projections are dense layers named "<Name>/q", "<Name>/k", "<Name>/v" and "<Name>/o".
  dense<scoped_name<Name, "q">, Dim, Dim, T> q;
  dense<scoped_name<Name, "k">, Dim, Dim, T> k;
  dense<scoped_name<Name, "v">, Dim, Dim, T> v;
  dense<scoped_name<Name, "o">, Dim, Dim, T> o;

  explicit multi_head_attention(const dense_options& options = {}, source_site where = source_site::current())
      : q(options, where), k(options, where), v(options, where), o(options, where) {}
  auto layers() const { return std::tie(q, k, v, o); }

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
    // The projections name their nodes after themselves ("<Name>/q/..."); the heads' work goes
    // under Name.
    const auto qx = q(x, where), kx = k(x, where), vx = v(x, where);
    const auto heads = scope(
        Name.value,
        [&] {
          if constexpr (Causal)
            return join_heads<S>(scaled_dot_product_attention(split_heads(qx), split_heads(kx), split_heads(vx), causal));
          else
            return join_heads<S>(scaled_dot_product_attention(split_heads(qx), split_heads(kx), split_heads(vx)));
        },
        where);
    return o(heads, where);
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
