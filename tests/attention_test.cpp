// scaled_dot_product_attention (ops/attention.hpp) against attention written out in float64 loops,
// on odd lengths, for [n, t, d] and [t, d] operands; causal masking (a NaN in a later key stays out
// of earlier queries, as with PyTorch's masked_fill); the gradients of q, k and v against central
// differences; the causal mask with lengths known only at run time (tril, ops/trilu.hpp, which is
// checked here against numpy's tril/triu written out). The layer built on it: nn_attention_test.cpp.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <limits>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>

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

// Lengths known only at run time: the mask is tril of an all-true tensor shaped like the scores,
// and gives the bits the constant mask of static lengths gives.
TEST(Attention, CausalMaskWithRunTimeLengths) {
  constexpr std::size_t n = 3, tq = 5, tk = 7, d = 4, dv = 3;
  auto q = placeholder<"q", float, shape<dyn, dyn, d>>();
  auto k = placeholder<"k", float, shape<dyn, dyn, d>>();
  auto v = placeholder<"v", float, shape<dyn, dyn, dv>>();
  const auto qv = random_tensor<float, shape<dyn, dyn, d>>({n, tq, d}, -2, 2, 21);
  const auto kv = random_tensor<float, shape<dyn, dyn, d>>({n, tk, d}, -2, 2, 22);
  const auto vv = random_tensor<float, shape<dyn, dyn, dv>>({n, tk, dv}, -2, 2, 23);
  const auto e = scaled_dot_product_attention(q, k, v, causal);
  const auto out = eval(e, q = qv, k = kv, v = vv);
  const auto Q = as_doubles(qv), K = as_doubles(kv), V = as_doubles(vv), O = as_doubles(out);
  for (std::size_t b = 0; b < n; ++b) {
    const auto want = reference_attention(&Q[b * tq * d], &K[b * tk * d], &V[b * tk * dv], tq, tk, d, dv, true);
    for (std::size_t i = 0; i < tq * dv; ++i) EXPECT_NEAR(O[b * tq * dv + i], want[i], 2e-6) << b << "," << i;
  }
  auto qs = placeholder<"q", float, shape<n, tq, d>>();
  auto ks = placeholder<"k", float, shape<n, tk, d>>();
  auto vs = placeholder<"v", float, shape<n, tk, dv>>();
  const auto fixed_lengths = eval(scaled_dot_product_attention(qs, ks, vs, causal), qs = qv, ks = kv, vs = vv);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out.data()[i], fixed_lengths.data()[i]) << i;
  // The graph value runs the same mask in the interpreter.
  runtime_feeds feeds;
  feeds.insert_or_assign("q", runtime_tensor(qv));
  feeds.insert_or_assign("k", runtime_tensor(kv));
  feeds.insert_or_assign("v", runtime_tensor(vv));
  const auto interpreted = interpreter(to_graph(e)).run(feeds)[0];
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(interpreted.data<float>()[i], out.data()[i], 1e-6) << i;
  // Gradients through the run-time mask against central differences (float64, one sequence).
  auto q2 = placeholder<"q2", double, shape<dyn, d>>();
  auto k2 = placeholder<"k2", double, shape<dyn, d>>();
  const auto w = constant(random_tensor<double, shape<4, d>>({4, d}, -1, 1, 24));
  const auto loss = sum(scaled_dot_product_attention(q2, k2, k2, causal) * w);
  const auto q2v = random_tensor<double, shape<dyn, d>>({4, d}, -1, 1, 25);
  const auto k2v = random_tensor<double, shape<dyn, d>>({4, d}, -1, 1, 26);
  const auto c = check_gradient(loss, k2, q2 = q2v, k2 = k2v);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
}

// numpy.tril / numpy.triu: element (i, j) of each matrix kept where j - i <= k (tril) or >= k (triu).
TEST(Trilu, KeepsTheTrianglesNumpyKeeps) {
  auto x = placeholder<"x", double, shape<dyn, dyn, dyn>>();
  auto xv = random_tensor<double, shape<dyn, dyn, dyn>>({2, 4, 6}, -3, 3, 31);
  xv(0, 3, 0) = std::numeric_limits<double>::quiet_NaN();
  xv(1, 0, 5) = std::numeric_limits<double>::infinity();
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(xv));
  for (const std::int64_t k : {-5, -1, 0, 1, 3, 6, 100}) {
    for (const bool upper : {false, true}) {
      SCOPED_TRACE(std::string(upper ? "triu" : "tril") + " k " + std::to_string(k));
      const auto e = upper ? std::function<tensor<double, shape<dyn, dyn, dyn>>()>([&] { return eval(triu(x, k), x = xv); })
                           : std::function<tensor<double, shape<dyn, dyn, dyn>>()>([&] { return eval(tril(x, k), x = xv); });
      const auto got = e();
      const auto interpreted =
          interpreter(upper ? to_graph(triu(x, k)) : to_graph(tril(x, k))).run(feeds)[0];
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 4; ++i)
          for (std::size_t j = 0; j < 6; ++j) {
            const std::int64_t diff = std::int64_t(j) - std::int64_t(i);
            const bool kept = upper ? diff >= k : diff <= k;
            const double want = kept ? xv(b, i, j) : 0.0;
            const double have = got(b, i, j), run = interpreted.data<double>()[(b * 4 + i) * 6 + j];
            if (std::isnan(want)) {
              EXPECT_TRUE(std::isnan(have) && std::isnan(run));
            } else {
              EXPECT_EQ(have, want) << b << "," << i << "," << j;
              EXPECT_EQ(run, want) << b << "," << i << "," << j;
              if (!kept) {
                EXPECT_FALSE(std::signbit(have));  // +0, as numpy's zeros
              }
            }
          }
    }
  }
  // Any dtype: a bool mask, and extreme k from a file cannot overflow.
  auto m = placeholder<"m", bool, shape<3, 3>>();
  const auto mv = tensor<bool, shape<3, 3>>({3, 3}, true);
  const auto lower = eval(tril(m), m = mv);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(lower(i, j), j <= i);
  const auto all = eval(tril(m, std::numeric_limits<std::int64_t>::max()), m = mv);
  const auto none = eval(triu(m, std::numeric_limits<std::int64_t>::max()), m = mv);
  const auto none2 = eval(tril(m, std::numeric_limits<std::int64_t>::min()), m = mv);
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_TRUE(all.data()[i]);
    EXPECT_FALSE(none.data()[i]);
    EXPECT_FALSE(none2.data()[i]);
  }
}

}  // namespace
