// nn::multi_head_attention (nn/attention.hpp): its output against per-head attention of the three
// projections, joined and projected, written out in float64 loops (causal and not), and the
// gradients of its parameters against central differences.
#include <cmath>
#include <limits>
#include <vector>

#include <symflow/nn/all.hpp>

#include "attention_reference.hpp"
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;

namespace {

// The layer: per-head attention of the three projections, joined and projected, in float64 loops.
TEST(NnAttention, MultiHeadLayerMatchesItsDefinition) {
  constexpr std::size_t n = 2, t = 5, dim = 6, heads = 3, hd = dim / heads;
  auto x = placeholder<"x", double, shape<dyn, t, dim>>();
  nn::multi_head_attention<"mha", dim, heads, double> layer({.bias = normal_init{0, 0.1}});
  const params p = nn::parameters(layer).initial_values(21);
  const auto xv = random_tensor<double, shape<dyn, t, dim>>({n, t, dim}, -1, 1, 14);
  const auto got = eval(layer(x, causal), x = xv, p);
  const auto got_full = eval(layer(x), x = xv, p);
  const auto weights = [&](const auto& var) {
    return as_doubles(p.view<double, typename std::decay_t<decltype(var)>::shape_type>(std::string(var.name.view())));
  };
  const auto Wq = weights(layer.q.W.var), Wk = weights(layer.k.W.var), Wv = weights(layer.v.W.var), Wo = weights(layer.o.W.var);
  const auto bq = weights(layer.q.b.var), bk = weights(layer.k.b.var), bv = weights(layer.v.b.var), bo = weights(layer.o.b.var);
  const auto project = [&](const std::vector<double>& W, const std::vector<double>& b, const double* row, std::size_t head,
                           std::vector<double>& into) {  // one head's d features of row W + b
    for (std::size_t c = 0; c < hd; ++c) {
      double s = b[head * hd + c];
      for (std::size_t i = 0; i < dim; ++i) s += row[i] * W[i * dim + head * hd + c];
      into.push_back(s);
    }
  };
  for (const bool is_causal : {true, false})
    for (std::size_t b = 0; b < n; ++b) {
      std::vector<double> joined(t * dim);
      for (std::size_t h = 0; h < heads; ++h) {
        std::vector<double> Q, K, V;
        for (std::size_t i = 0; i < t; ++i) {
          project(Wq, bq, &xv(b, i, 0), h, Q);
          project(Wk, bk, &xv(b, i, 0), h, K);
          project(Wv, bv, &xv(b, i, 0), h, V);
        }
        const auto o = reference_attention(Q.data(), K.data(), V.data(), t, t, hd, hd, is_causal);
        for (std::size_t i = 0; i < t; ++i)
          for (std::size_t c = 0; c < hd; ++c) joined[i * dim + h * hd + c] = o[i * hd + c];
      }
      for (std::size_t i = 0; i < t; ++i)
        for (std::size_t j = 0; j < dim; ++j) {
          double s = bo[j];
          for (std::size_t c = 0; c < dim; ++c) s += joined[i * dim + c] * Wo[c * dim + j];
          EXPECT_NEAR((is_causal ? got : got_full)(b, i, j), s, 1e-13) << is_causal << " " << b << "," << i << "," << j;
        }
    }
}

TEST(NnAttention, MultiHeadLayerGradientsMatchFiniteDifferences) {
  constexpr std::size_t t = 4, dim = 4, heads = 2;
  auto x = placeholder<"x", double, shape<dyn, t, dim>>();
  auto w = placeholder<"w", double, shape<dyn, t, dim>>();
  nn::multi_head_attention<"mha", dim, heads, double> layer;
  params p = nn::parameters(layer).initial_values(22);
  const auto xv = random_tensor<double, shape<dyn, t, dim>>({3, t, dim}, -1, 1, 15);
  const auto wv = random_tensor<double, shape<dyn, t, dim>>({3, t, dim}, -1, 1, 16);
  const auto loss = sum(layer(x, causal) * w);
  // One symbolic gradient for every parameter checked.
  const auto [dWq, dbk, dWv, dWo, dbo] = grad(loss, layer.q.W.var, layer.k.b.var, layer.v.W.var, layer.o.W.var, layer.o.b.var);
  const auto [gWq, gbk, gWv, gWo, gbo] = eval(dWq, dbk, dWv, dWo, dbo, x = xv, w = wv, p);
  const auto check = [&](const auto& parameter, const auto& g) {
    using V = std::decay_t<decltype(parameter.var)>;
    auto stored = p.view<double, typename V::shape_type>(std::string(V::name.view()));
    for (std::size_t i = 0; i < stored.size(); ++i) {
      double* slot = stored.data() + i;
      const double saved = *slot, step = 1e-6;
      *slot = saved + step;
      const double up = eval(loss, x = xv, w = wv, p)[0];
      *slot = saved - step;
      const double down = eval(loss, x = xv, w = wv, p)[0];
      *slot = saved;
      EXPECT_NEAR(g.data()[i], (up - down) / (2 * step), 1e-7) << V::name.view() << "[" << i << "]";
    }
  };
  check(layer.q.W, gWq);
  check(layer.k.b, gbk);
  check(layer.v.W, gWv);
  check(layer.o.W, gWo);
  check(layer.o.b, gbo);
}

}  // namespace
