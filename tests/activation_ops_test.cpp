// Activation ops (ops/prelu.hpp, elu.hpp, selu.hpp, clip.hpp) and composites (ops/activations.hpp)
// against their ONNX definitions written out here in long double, on random values with NaN, ±Inf,
// ±0, denormals and extremes at odd lengths; in typed evaluation and through graph handles
// (runtime/builder.hpp) run by the interpreter, which must agree bit for bit; the composites'
// gradients against central finite differences in float64.
// The op laws (tests/ops/) check the listed ops' other laws.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <symflow/debug/check_gradient.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;
using ld = long double;

constexpr std::size_t rows = 3, cols = 29;  // odd: whole packets and a scalar tail at any width

template <class T>
tensor<T, shape<dyn, cols>> sample(unsigned seed, double lo = -6, double hi = 6) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  tensor<T, shape<dyn, cols>> t({rows, cols}, uninitialized);
  using L = std::numeric_limits<T>;
  const T specials[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0),     -T(0),       L::denorm_min(),
                        -L::denorm_min(), L::min(),    -L::min(),      L::max(), -L::max(),   T(-1e-4),
                        T(1e-4),        T(-30),        T(-100),        T(-800),  T(1),        T(-1)};
  std::size_t k = seed;
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = (i + seed) % 4 == 0 ? specials[k++ % std::size(specials)] : T(d(rng));
  return t;
}

// got within `ulps` units of T's epsilon relative to |want| (or of denorm_min near zero) of want
// rounded to T (0: correctly rounded),
// NaN where want is NaN, the same infinity, and the sign of an exact zero when `zero_sign`.
// `scale` replaces |want| in the tolerance where the formula's own rounding is relative to larger
// intermediate terms (a * x + b near 0).
template <class T>
::testing::AssertionResult close(T got, ld want, double ulps, bool zero_sign = true, ld scale = -1) {
  if (std::isnan(want)) {
    if (std::isnan(got)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << ", want NaN";
  }
  const ld rounded = ld(T(want));
  if (std::isinf(rounded) || std::isinf(got)) {
    if (ld(got) == rounded) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << ", want " << double(want);
  }
  if (want == 0 && zero_sign && std::signbit(got) != std::signbit(want))
    return ::testing::AssertionFailure() << "got " << got << ", want a zero of sign " << std::signbit(want);
  if (scale < 0) scale = std::fabs(want);
  const ld tol = ulps * std::max<ld>(scale * std::numeric_limits<T>::epsilon(), std::numeric_limits<T>::denorm_min());
  if (std::fabs(ld(got) - rounded) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << double(want) << " (tolerance " << double(tol) << ")";
}

ld prelu_ref(ld x, ld s) { return x < 0 ? s * x : x; }
ld elu_ref(ld x, ld a) { return x < 0 ? a * std::expm1(x) : x; }
constexpr ld selu_alpha = 1.6732632423543772848170429916717L, selu_scale = 1.0507009873554804934193349852946L;
ld selu_ref(ld x) { return x > 0 ? selu_scale * x : selu_scale * selu_alpha * std::expm1(x); }
ld clip_ref(ld x, ld lo, ld hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return std::numeric_limits<ld>::quiet_NaN();
  const ld r = x < lo ? lo : x;
  return hi < r ? hi : r;
}
ld hard_sigmoid_ref(ld x, ld a, ld b) {
  if (std::isnan(x)) return x;
  return std::max<ld>(0, std::min<ld>(1, a * x + b));
}
ld gelu_tanh_ref(ld x) {
  return 0.5L * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x)));
}

// The graph form: the same function on graph handles, run by the interpreter.
template <class T, class Build>
std::vector<T> run_on_handles(const tensor<T, shape<dyn, cols>>& x, Build build) {
  graph_builder b;
  auto h = b.input("x", dtype_v<T>, {-1, std::int64_t(cols)});
  const graph g = b.build({build(h)});
  runtime_tensor t(dtype_v<T>, runtime_extents{rows, cols});
  std::memcpy(t.bytes(), x.data(), t.byte_size());
  runtime_feeds feeds;
  feeds.insert_or_assign("x", std::move(t));
  const auto out = run_graph(g, feeds);
  std::vector<T> v(out.at(0).byte_size() / sizeof(T));
  std::memcpy(v.data(), out.at(0).bytes(), out.at(0).byte_size());
  return v;
}

// f on an expression and on a graph handle against ref elementwise; typed and graph bit for bit.
// Tolerance relative to max(|want|, |x| (|x| + 1)): the composites' a * x + b cancels.
struct relative_to_terms {};
template <class T, class F, class Ref, class Scale = std::nullptr_t>
void expect_matches(const char* what, F f, Ref ref, double ulps, bool zero_sign = true, Scale = {}, unsigned seed = 3) {
  SCOPED_TRACE(std::string(what) + (sizeof(T) == 4 ? " f32" : " f64"));
  const auto xv = sample<T>(seed);
  auto x = placeholder<"x", T, shape<dyn, cols>>();
  const auto typed = eval(f(x), x = xv);
  const auto graph = run_on_handles<T>(xv, f);
  ASSERT_EQ(graph.size(), typed.size());
  for (std::size_t i = 0; i < typed.size(); ++i) {
    const ld xi = xv.data()[i], want = ref(xi);
    const ld scale = std::is_same_v<Scale, relative_to_terms> ? std::max(std::fabs(want), std::fabs(xi) * (std::fabs(xi) + 1)) : -1;
    EXPECT_TRUE(close<T>(typed.data()[i], want, ulps, zero_sign, scale)) << "x = " << xv.data()[i];
    EXPECT_EQ(std::memcmp(&graph[i], &typed.data()[i], sizeof(T)), 0) << "x = " << xv.data()[i];
  }
}

template <class T>
void check_unary_forms() {
  expect_matches<T>("leaky_relu", [](const auto& x) { return leaky_relu(x); }, [](ld x) { return prelu_ref(x, ld(T(0.01))); }, 0);
  expect_matches<T>("leaky_relu 0.2", [](const auto& x) { return leaky_relu(x, 0.2); }, [](ld x) { return prelu_ref(x, ld(T(0.2))); }, 0);
  expect_matches<T>("prelu -0.5", [](const auto& x) { return prelu(x, -0.5); }, [](ld x) { return prelu_ref(x, -0.5L); }, 0);
  expect_matches<T>("elu", [](const auto& x) { return elu(x); }, [](ld x) { return elu_ref(x, 1); }, 3);
  expect_matches<T>("elu 0.3", [](const auto& x) { return elu(x, 0.3); }, [](ld x) { return elu_ref(x, ld(T(0.3))); }, 3);
  expect_matches<T>("selu", [](const auto& x) { return selu(x); }, [](ld x) { return selu_ref(x); }, 4);
  expect_matches<T>("clip", [](const auto& x) { return clip(x, -1.5, 2.5); }, [](ld x) { return clip_ref(x, -1.5L, 2.5L); }, 0);
  expect_matches<T>("clip lo > hi", [](const auto& x) { return clip(x, 3.0, 1.0); }, [](ld x) { return clip_ref(x, 3, 1); }, 0);
  expect_matches<T>("clip to ±0", [](const auto& x) { return clip(x, -0.0, 0.0); }, [](ld x) { return clip_ref(x, -0.0L, 0.0L); }, 0);
  expect_matches<T>("hard_sigmoid", [](const auto& x) { return hard_sigmoid(x); },
                    [](ld x) { return hard_sigmoid_ref(x, ld(T(0.2)), 0.5L); }, 4, false, relative_to_terms{});
  expect_matches<T>("hard_sigmoid 1/6", [](const auto& x) { return hard_sigmoid(x, 1.0 / 6, 0.5); },
                    [](ld x) { return hard_sigmoid_ref(x, ld(T(1.0 / 6)), 0.5L); }, 4, false, relative_to_terms{});
  // x * clip(x/6 + 1/2, 0, 1): two roundings after the product x / 6 (within an ulp each).
  expect_matches<T>("hard_swish", [](const auto& x) { return hard_swish(x); },
                    [](ld x) { return std::isinf(x) && x < 0 ? std::numeric_limits<ld>::quiet_NaN() : x * hard_sigmoid_ref(x, ld(T(1.0 / 6)), 0.5L); }, 6, false, relative_to_terms{});
}

TEST(ActivationOps, MatchTheirOnnxDefinitionsTypedAndInGraphs) {
  check_unary_forms<float>();
  check_unary_forms<double>();
}

// gelu_tanh cancels (1 + tanh) for negative x in the working precision, as PyTorch's does: compared
// with an absolute bound there.
TEST(ActivationOps, GeluTanhIsPyTorchsApproximation) {
  auto check = [](auto zero) {
    using T = decltype(zero);
    const auto xv = sample<T>(5, -12, 12);
    auto x = placeholder<"x", T, shape<dyn, cols>>();
    const auto y = eval(gelu_tanh(x), x = xv);
    const auto graph = run_on_handles<T>(xv, [](const auto& h) { return gelu_tanh(h); });
    for (std::size_t i = 0; i < y.size(); ++i) {
      const T xi = xv.data()[i];
      const ld want = gelu_tanh_ref(xi);
      EXPECT_EQ(std::memcmp(&graph[i], &y.data()[i], sizeof(T)), 0) << xi;
      if (std::isnan(want) || std::isinf(want) || std::fabs(xi) > 1e10) {
        if (std::isfinite(xi)) continue;  // x^3 overflows: inf - inf inside, as in PyTorch
        EXPECT_EQ(std::isnan(y.data()[i]), std::isnan(want)) << xi;
        continue;
      }
      const ld tol = 8 * std::numeric_limits<T>::epsilon() * (std::fabs(ld(xi)) + std::fabs(want)) + std::numeric_limits<T>::denorm_min();
      EXPECT_LE(std::fabs(ld(y.data()[i]) - want), tol) << "x = " << xi;
    }
  };
  check(0.0f);
  check(0.0);
}

// Tensor slopes and bounds broadcast: one slope per column, bounds per column and per row.
TEST(ActivationOps, TensorParametersBroadcast) {
  auto x = placeholder<"x", float, shape<dyn, cols>>();
  auto s = placeholder<"s", float, shape<cols>>();
  auto lo = placeholder<"lo", float, shape<cols>>();
  auto hi = placeholder<"hi", float, shape<dyn, 1>>();
  const auto xv = sample<float>(7);
  tensor<float, shape<cols>> sv({cols}, uninitialized), lov({cols}, uninitialized);
  tensor<float, shape<dyn, 1>> hiv({rows, 1}, uninitialized);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-2, 2);
  for (auto& v : sv) v = d(rng);
  for (auto& v : lov) v = d(rng);
  for (auto& v : hiv) v = d(rng);
  sv[3] = std::numeric_limits<float>::quiet_NaN();
  lov[5] = std::numeric_limits<float>::quiet_NaN();
  const auto [p, e, c] = eval(prelu(x, s), elu(x, s), clip(x, lo, hi), x = xv, s = sv, lo = lov, hi = hiv);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) {
      const ld xi = xv(r, j);
      EXPECT_TRUE(close<float>(p(r, j), prelu_ref(xi, sv[j]), 0)) << r << "," << j;
      EXPECT_TRUE(close<float>(e(r, j), elu_ref(xi, sv[j]), 3)) << r << "," << j;
      EXPECT_TRUE(close<float>(c(r, j), clip_ref(xi, lov[j], hiv(r, 0)), 0)) << r << "," << j;
    }
}

TEST(ActivationOps, ClipKeepsIntegersExact) {
  auto x = placeholder<"x", std::int32_t, shape<dyn>>();
  tensor<std::int32_t, shape<dyn>> xv({11}, uninitialized);
  const std::int32_t values[] = {std::numeric_limits<std::int32_t>::min(), -7, -6, -5, -1, 0, 1, 5, 6, 7,
                                 std::numeric_limits<std::int32_t>::max()};
  std::copy(std::begin(values), std::end(values), xv.begin());
  const auto y = eval(clip(x, -5, 6), x = xv);
  for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(y[i], std::clamp(values[i], -5, 6)) << values[i];
  const auto z = eval(clip(x, 6, -5), x = xv);  // lo > hi: hi everywhere
  for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(z[i], -5);
}

// The composites' gradients against central differences in float64 (the listed ops' gradients, of
// every operand, slopes and bounds included, are the op laws', tests/ops/).
TEST(ActivationOps, CompositeGradientsMatchFiniteDifferences) {
  auto x = placeholder<"x", double, shape<dyn, cols>>();
  auto w = placeholder<"w", double, shape<dyn, cols>>();
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> mag(0.3, 2), u(-1, 1);
  tensor<double, shape<dyn, cols>> xv({rows, cols}, uninitialized), wv({rows, cols}, uninitialized);
  for (auto& v : xv) v = (rng() & 1 ? 1 : -1) * mag(rng);  // a kink within the step is improbably close
  for (auto& v : wv) v = u(rng);
  auto check = [&](const auto& loss, const char* what) {
    const auto c = check_gradient(loss, x, x = xv, w = wv);
    EXPECT_LT(c.max_relative_error, 1e-6) << what << ": symbolic " << c.symbolic_at_worst << " against numeric "
                                          << c.numeric_at_worst << " at element " << c.worst_element;
  };
  check(sum(hard_sigmoid(x, 0.4, 0.3) * w), "hard_sigmoid");
  check(sum(hard_swish(x * 2.0) * w), "hard_swish");
  check(sum(gelu_tanh(x) * w), "gelu_tanh");
}

}  // namespace
