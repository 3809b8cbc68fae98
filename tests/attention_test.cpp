// scaled_dot_product_attention (ops/attention.hpp) against attention written out in float64 loops,
// on odd lengths, for [n, t, d] and [t, d] operands; causal masking (a NaN in a later key stays out
// of earlier queries, as with PyTorch's masked_fill); the gradients of q, k and v against central
// differences. The layer built on it: nn_attention_test.cpp.
#include <cmath>
#include <limits>
#include <vector>

#include "attention_reference.hpp"
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;

namespace {

template <bool Causal>
void expect_sdpa_matches_reference() {
  constexpr std::size_t n = 3, tq = 5, tk = 7, d = 4, dv = 3;
  auto q = placeholder<"q", float, shape<n, tq, d>>();
  auto k = placeholder<"k", float, shape<dyn, tk, d>>();
  auto v = placeholder<"v", float, shape<n, tk, dv>>();
  const auto qv = random_tensor<float, shape<n, tq, d>>({n, tq, d}, -2, 2, 1);
  auto kv = random_tensor<float, shape<dyn, tk, d>>({n, tk, d}, -2, 2, 2);
  const auto vv = random_tensor<float, shape<n, tk, dv>>({n, tk, dv}, -2, 2, 3);
  kv(1, 2, 3) = -0.0f;
  const auto out = [&] {
    if constexpr (Causal) return eval(scaled_dot_product_attention(q, k, v, causal), q = qv, k = kv, v = vv);
    else return eval(scaled_dot_product_attention(q, k, v), q = qv, k = kv, v = vv);
  }();
  static_assert(std::is_same_v<typename decltype(out)::shape_type, shape<n, tq, dv>>);
  const auto Q = as_doubles(qv), K = as_doubles(kv), V = as_doubles(vv), O = as_doubles(out);
  for (std::size_t b = 0; b < n; ++b) {
    const auto want = reference_attention(&Q[b * tq * d], &K[b * tk * d], &V[b * tk * dv], tq, tk, d, dv, Causal);
    for (std::size_t i = 0; i < tq * dv; ++i) EXPECT_NEAR(O[b * tq * dv + i], want[i], 2e-6) << b << "," << i;
  }
}

TEST(Attention, ScaledDotProductMatchesItsDefinition) { expect_sdpa_matches_reference<false>(); }
TEST(Attention, CausalQueryISeesKeysUpToI) { expect_sdpa_matches_reference<true>(); }

TEST(Attention, OneSequenceOfRankTwo) {
  constexpr std::size_t t = 6, d = 3;
  auto q = placeholder<"q", double, shape<t, d>>();
  auto k = placeholder<"k", double, shape<t, d>>();
  auto v = placeholder<"v", double, shape<t, d>>();
  const auto qv = random_tensor<double, shape<t, d>>({t, d}, -1, 1, 4);
  const auto kv = random_tensor<double, shape<t, d>>({t, d}, -1, 1, 5);
  const auto vv = random_tensor<double, shape<t, d>>({t, d}, -1, 1, 6);
  const auto out = eval(scaled_dot_product_attention(q, k, v, causal), q = qv, k = kv, v = vv);
  const auto want = reference_attention(qv.data(), kv.data(), vv.data(), t, t, d, d, true);
  for (std::size_t i = 0; i < t * d; ++i) EXPECT_NEAR(out.data()[i], want[i], 1e-14);
  // The first query sees only the first key: its output is v's first row, exactly.
  for (std::size_t c = 0; c < d; ++c) EXPECT_EQ(out(0, c), vv(0, c));
}

TEST(Attention, CausalMaskKeepsANaNInALaterKeyOutOfEarlierQueries) {
  constexpr std::size_t t = 6, d = 2;
  auto q = placeholder<"q", float, shape<1, t, d>>();
  auto k = placeholder<"k", float, shape<1, t, d>>();
  auto v = placeholder<"v", float, shape<1, t, d>>();
  const auto qv = random_tensor<float, shape<1, t, d>>({1, t, d}, -1, 1, 7);
  auto kv = random_tensor<float, shape<1, t, d>>({1, t, d}, -1, 1, 8);
  const auto vv = random_tensor<float, shape<1, t, d>>({1, t, d}, -1, 1, 9);
  const auto clean = eval(scaled_dot_product_attention(q, k, v, causal), q = qv, k = kv, v = vv);
  kv(0, 3, 1) = std::numeric_limits<float>::quiet_NaN();
  const auto poisoned = eval(scaled_dot_product_attention(q, k, v, causal), q = qv, k = kv, v = vv);
  for (std::size_t i = 0; i < t; ++i)
    for (std::size_t c = 0; c < d; ++c) {
      if (i < 3) EXPECT_EQ(poisoned(0, i, c), clean(0, i, c)) << i;
      else EXPECT_TRUE(std::isnan(poisoned(0, i, c))) << i;
    }
}

// One symbolic gradient for all three inputs (float64) against central differences of each element.
TEST(Attention, GradientsOfQueriesKeysAndValuesMatchFiniteDifferences) {
  constexpr std::size_t n = 2, t = 5, d = 3;
  auto q = variable<"q", double, shape<n, t, d>>();
  auto k = variable<"k", double, shape<n, t, d>>();
  auto v = variable<"v", double, shape<n, t, d>>();
  auto w = placeholder<"w", double, shape<n, t, d>>();
  const auto loss = sum(scaled_dot_product_attention(q, k, v, causal) * w);
  auto qv = random_tensor<double, shape<n, t, d>>({n, t, d}, -1, 1, 10);
  auto kv = random_tensor<double, shape<n, t, d>>({n, t, d}, -1, 1, 11);
  auto vv = random_tensor<double, shape<n, t, d>>({n, t, d}, -1, 1, 12);
  const auto wv = random_tensor<double, shape<n, t, d>>({n, t, d}, -1, 1, 13);
  const auto [dq, dk, dv] = grad(loss, q, k, v);
  const auto [gq, gk, gv] = eval(dq, dk, dv, q = qv, k = kv, v = vv, w = wv);
  const auto check = [&](auto& values, const auto& symbolic, const char* which) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      double& slot = values.data()[i];
      const double saved = slot, step = 1e-6;
      slot = saved + step;
      const double up = eval(loss, q = qv, k = kv, v = vv, w = wv)[0];
      slot = saved - step;
      const double down = eval(loss, q = qv, k = kv, v = vv, w = wv)[0];
      slot = saved;
      EXPECT_NEAR(symbolic.data()[i], (up - down) / (2 * step), 1e-8) << which << "[" << i << "]";
    }
  };
  check(qv, gq, "q");
  check(kv, gk, "k");
  check(vv, gv, "v");
}

}  // namespace
