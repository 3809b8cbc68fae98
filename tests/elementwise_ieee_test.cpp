// IEEE 754 special values through elementwise ops (NaN at every position of a packet, signed zeros,
// infinities), integer division by zero and INT_MIN / -1, and float-to-int casts of NaN, checked
// against values computed here with <cmath>.
//
// Compile time matters (every distinct expression type instantiates the fused evaluator), so the
// checks go through a few typed helpers that take the expression as a lambda and loop over sizes
// and data at run time.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <symflow/symflow.hpp>

namespace sf = symflow;
using sf::dyn;
using sf::shape;

namespace {

template <class T, std::size_t R>
using dyn_tensor = sf::tensor<T, sf::dyn_shape<R>>;

// |got - want| <= rtol * |want| + atol, elementwise.
struct tolerance {
  double rtol = 0, atol = 0;
};
// Integer, bool and exactly rounded results must match exactly.
constexpr tolerance exact{0, 0};

// float32: a correctly rounded result lies within 0.5 ulp (2^-24 ~ 6e-8 relative) of the float64
// reference evaluated on the same (exactly representable) float inputs. The SIMD kernels (Eigen's
// packet math) are specified to a few ulps, so 2e-6 relative (~16 ulp of headroom, still far below
// any real bug) bounds them. The small absolute part only matters where a result crosses zero (sin,
// cos, log near 1): there the float argument itself carries ~1 ulp of the input's magnitude, which
// no float implementation can resolve relative to a tiny result. It is set per op below, 0 elsewhere.
constexpr tolerance f32{2e-6, 0};
// float64: the same reasoning at 2^-53; Eigen's double kernels are within a few ulps, std:: ones
// within 1 ulp. 2e-15 is ~9 ulp. (Measured: every op here stays within ~2 ulp in both dtypes.)
constexpr tolerance f64{2e-15, 0};

template <class T>
constexpr tolerance default_tolerance() {
  if constexpr (std::is_same_v<T, float>) return f32;
  else if constexpr (std::is_same_v<T, double>) return f64;
  else return exact;
}
// Where the float64 result crosses zero: atol of a few ulps of the operand magnitude.
template <class T>
constexpr tolerance zero_crossing_tolerance(double magnitude) {
  tolerance t = default_tolerance<T>();
  t.atol = 4 * magnitude * std::numeric_limits<T>::epsilon();
  return t;
}

std::mt19937 rng(unsigned salt) { return std::mt19937(0x5eed0000u + salt); }

// Uniform random values in [lo, hi] of dtype T (bool: a fair coin).
template <class T, std::size_t R>
dyn_tensor<T, R> random_tensor(const sf::extents_t<R>& e, double lo, double hi, std::mt19937& g) {
  dyn_tensor<T, R> t(e, sf::uninitialized);
  if constexpr (std::is_same_v<T, bool>) {
    std::bernoulli_distribution d(0.5);
    for (auto& v : t) v = d(g);
  } else if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& v : t) v = static_cast<T>(d(g));
  } else {
    std::uniform_int_distribution<long long> d(static_cast<long long>(lo), static_cast<long long>(hi));
    for (auto& v : t) v = static_cast<T>(d(g));
  }
  return t;
}

// Values in +-[lo, hi] with a random sign (keeps divisors and log arguments away from 0).
template <class T>
dyn_tensor<T, 1> signed_away_from_zero(std::size_t n, double lo, double hi, std::mt19937& g) {
  auto t = random_tensor<T, 1>({n}, lo, hi, g);
  if constexpr (!std::is_same_v<T, bool>) {
    std::bernoulli_distribution s(0.5);
    for (auto& v : t)
      if (s(g)) v = static_cast<T>(-v);
  }
  return t;
}

// Compares every element; on failure reports how many differ, the first few and the worst one.
template <class T, class S>
::testing::AssertionResult all_close(const sf::tensor<T, S>& got, const std::vector<double>& want, tolerance tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  std::ostringstream first;
  first.precision(17);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = want[i];
    const double err = std::fabs(g - w), allowed = tol.rtol * std::fabs(w) + tol.atol;
    const bool ok = (g == w) || err <= allowed || (std::isnan(g) && std::isnan(w));
    if (!ok) {
      if (bad < 5) first << "\n  [" << i << "] got " << g << " want " << w << " (|err| " << err << ")";
      const double ratio = allowed > 0 ? err / allowed : std::numeric_limits<double>::infinity();
      if (bad == 0 || ratio > worst_ratio) worst_ratio = ratio, worst = i;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.size() << " elements differ (rtol "
                                       << tol.rtol << ", atol " << tol.atol << "); worst at [" << worst
                                       << "] is " << worst_ratio << "x the tolerance:" << first.str();
}

template <class T, class S>
std::vector<double> as_doubles(const sf::tensor<T, S>& t) {
  return std::vector<double>(t.begin(), t.end());
}

// Odd sizes around the packet width (16 floats / 8 doubles with AVX-512, fewer otherwise), one
// that fills several packets with a tail, and one above the 2^15-element threading threshold.
const std::vector<std::size_t> sizes = {1, 7, 15, 16, 17, 33, 1000, 70001};

// f(x) for x of dtype T in [lo, hi] (or +-[lo, hi] when signed_domain), at every size.
template <class T, class Build, class Ref>
void check_unary(const char* what, Build build, Ref ref, double lo, double hi,
                 tolerance tol = default_tolerance<T>(), bool signed_domain = false) {
  const auto x = sf::placeholder<"x", T, shape<dyn>>();
  const auto e = build(x);
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<dyn>>);
  for (std::size_t n : sizes) {
    auto g = rng(unsigned(n) * 31 + 7);
    const auto in = signed_domain ? signed_away_from_zero<T>(n, lo, hi, g) : random_tensor<T, 1>({n}, lo, hi, g);
    const auto out = sf::eval(e, x = in);
    using R = sf::value_type_of<decltype(e)>;
    static_assert(std::is_same_v<typename decltype(out)::value_type, R>);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = ref(static_cast<double>(in[i]));
    EXPECT_TRUE(all_close(out, want, tol)) << what << " on " << sf::dtype_name(sf::dtype_v<T>) << "[" << n << "]";
  }
}

// f(a, b) for same-shape operands of dtype T; b is drawn from +-[b_lo, b_hi] when b_signed.
template <class T, class Build, class Ref>
void check_binary(const char* what, Build build, Ref ref, double a_lo, double a_hi, double b_lo, double b_hi,
                  tolerance tol = default_tolerance<T>(), bool b_signed = false) {
  const auto a = sf::placeholder<"a", T, shape<dyn>>();
  const auto b = sf::placeholder<"b", T, shape<dyn>>();
  const auto e = build(a, b);
  for (std::size_t n : sizes) {
    auto g = rng(unsigned(n) * 17 + 3);
    const auto av = random_tensor<T, 1>({n}, a_lo, a_hi, g);
    const auto bv = b_signed ? signed_away_from_zero<T>(n, b_lo, b_hi, g) : random_tensor<T, 1>({n}, b_lo, b_hi, g);
    const auto out = sf::eval(e, a = av, b = bv);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = ref(static_cast<double>(av[i]), static_cast<double>(bv[i]));
    EXPECT_TRUE(all_close(out, want, tol)) << what << " on " << sf::dtype_name(sf::dtype_v<T>) << "[" << n << "]";
  }
}

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }
double softplus_ref(double v) { return std::log1p(std::exp(v)); }  // no overflow for |v| <= 20
double sign_ref(double v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Arithmetic: + - * / between tensors and with scalars on either side.


// ---------------------------------------------------------------------------------------------
// Special values through the typed evaluator (issue 14): the same answer wherever an element falls,
// in a SIMD packet or in the scalar tail (tests/op_ieee_law_test.cpp checks every op's functions;
// these check the evaluator's loops end to end).

namespace {
template <class T>
void check_nan_at_every_position() {
  const auto a = sf::placeholder<"a", T, shape<dyn>>();
  const auto b = sf::placeholder<"b", T, shape<dyn>>();
  constexpr std::size_t n = 37;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t pos = 0; pos < n; ++pos) {
    dyn_tensor<T, 1> av(sf::extents_t<1>{n}, T(0.5)), bv(sf::extents_t<1>{n}, T(-1));
    av[pos] = nan;
    const auto mx = sf::eval(sf::maximum(a, b), a = av, b = bv);
    const auto mn = sf::eval(sf::minimum(b, a), a = av, b = bv);
    const auto r = sf::eval(sf::relu(a), a = av);
    const auto s = sf::eval(sf::sign(a), a = av);
    for (std::size_t i = 0; i < n; ++i) {
      if (i == pos) {
        EXPECT_TRUE(std::isnan(mx[i]) && std::isnan(mn[i]) && std::isnan(r[i]) && std::isnan(s[i]))
            << "NaN at " << i << " of " << n << ": maximum " << mx[i] << ", minimum " << mn[i] << ", relu " << r[i]
            << ", sign " << s[i];
      } else {
        EXPECT_EQ(mx[i], T(0.5));
        EXPECT_EQ(mn[i], T(-1));
        EXPECT_EQ(r[i], T(0.5));
        EXPECT_EQ(s[i], T(1));
      }
    }
  }
}
}  // namespace

TEST(ElementwiseIeee, NanPropagatesThroughMaximumMinimumReluSignAtEveryPosition) {
  check_nan_at_every_position<float>();
  check_nan_at_every_position<double>();
}

TEST(ElementwiseIeee, SignedZerosAndInfinities) {
  const auto a = sf::placeholder<"a", float, shape<dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn>>();
  constexpr std::size_t n = 37;
  const float inf = std::numeric_limits<float>::infinity();
  dyn_tensor<float, 1> av(sf::extents_t<1>{n}, -0.0f), bv(sf::extents_t<1>{n}, 0.0f);
  av[3] = inf;
  bv[n - 1] = -inf;
  const auto mx = sf::eval(sf::maximum(a, b), a = av, b = bv);
  const auto mx2 = sf::eval(sf::maximum(b, a), a = av, b = bv);
  const auto mn = sf::eval(sf::minimum(a, b), a = av, b = bv);
  const auto ab = sf::eval(sf::abs(a), a = av);
  const auto ng = sf::eval(-b, b = bv);
  const auto sq = sf::eval(sf::sqrt(a), a = av);
  const auto rl = sf::eval(sf::relu(a), a = av);
  const auto sg = sf::eval(sf::sign(a), a = av);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 3) {
      EXPECT_EQ(mx[i], inf);
      EXPECT_EQ(sq[i], inf) << "sqrt(inf) at " << i;
      continue;
    }
    // maximum(-0, +0) = +0 and minimum(-0, +0) = -0 in either order (IEEE 754-2019).
    if (i != n - 1) {
      EXPECT_FALSE(std::signbit(mx[i])) << i;
      EXPECT_FALSE(std::signbit(mx2[i])) << i;
    }
    EXPECT_TRUE(std::signbit(mn[i])) << i;
    EXPECT_FALSE(std::signbit(ab[i])) << "abs(-0) at " << i;
    EXPECT_TRUE(std::signbit(sq[i])) << "sqrt(-0) at " << i;
    EXPECT_FALSE(std::signbit(rl[i])) << "relu(-0) at " << i;
    EXPECT_TRUE(std::signbit(sg[i]) && sg[i] == 0) << "sign(-0) at " << i;
    if (i != n - 1) {
      EXPECT_TRUE(std::signbit(ng[i])) << "-(+0) at " << i;
    }
  }
  EXPECT_EQ(ng[n - 1], inf);
}

namespace {
template <class T>
void check_integer_division() {
  using L = std::numeric_limits<T>;
  const auto a = sf::placeholder<"a", T, shape<dyn>>();
  const auto b = sf::placeholder<"b", T, shape<dyn>>();
  // Division by zero is 0, INT_MIN / -1 wraps to INT_MIN; the rest truncates toward zero. Repeated
  // past a packet's width so that any vectorised integer loop is covered too.
  const std::vector<std::array<T, 3>> cases{{T(7), T(0), T(0)},        {T(-7), T(0), T(0)},   {T(0), T(0), T(0)},
                                            {L::min(), T(-1), L::min()}, {L::min(), T(1), L::min()},
                                            {L::max(), T(-1), T(-L::max())}, {T(-7), T(2), T(-3)}, {T(7), T(-1), T(-7)}};
  const std::size_t n = cases.size() * 9;
  dyn_tensor<T, 1> av(sf::extents_t<1>{n}, T(0)), bv(sf::extents_t<1>{n}, T(0));
  for (std::size_t i = 0; i < n; ++i) {
    av[i] = cases[i % cases.size()][0];
    bv[i] = cases[i % cases.size()][1];
  }
  const auto q = sf::eval(a / b, a = av, b = bv);
  const auto q2 = sf::eval((a + T(0)) / b * T(1), a = av, b = bv);  // inside a fused chain
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(q[i], cases[i % cases.size()][2]) << +av[i] << " / " << +bv[i];
    EXPECT_EQ(q2[i], cases[i % cases.size()][2]) << +av[i] << " / " << +bv[i];
  }
  // Overflowing sums, products and negations wrap (two's complement) instead of being undefined.
  dyn_tensor<T, 1> m(sf::extents_t<1>{3}, L::min());
  m[1] = L::max();
  m[2] = T(-1);
  const auto neg = sf::eval(-a, a = m);
  const auto ab = sf::eval(sf::abs(a), a = m);
  const auto sum = sf::eval(a + a, a = m);
  EXPECT_EQ(neg[0], L::min());
  EXPECT_EQ(ab[0], L::min());
  EXPECT_EQ(sum[1], T(-2));
  EXPECT_EQ(neg[2], T(1));
}
}  // namespace

TEST(ElementwiseIntegers, DivisionByZeroAndMinByMinusOneAreDefinedNotSignals) {
  check_integer_division<std::int32_t>();
  check_integer_division<std::int64_t>();
}

namespace {
template <class From, class To>
void check_saturating_cast() {
  using L = std::numeric_limits<To>;
  const auto x = sf::placeholder<"x", From, shape<dyn>>();
  const From inf = std::numeric_limits<From>::infinity();
  const std::vector<std::pair<From, To>> cases{
      {std::numeric_limits<From>::quiet_NaN(), To(0)}, {inf, L::max()}, {-inf, L::min()}, {From(1e30), L::max()},
      {From(-1e30), L::min()}, {From(-2.75), To(-2)}, {From(2.75), To(2)}, {From(-0.0), To(0)},
      {From(L::min()), L::min()}, {-From(L::min()), L::max()}};
  const std::size_t n = cases.size() * 5;
  dyn_tensor<From, 1> in(sf::extents_t<1>{n}, From(0));
  for (std::size_t i = 0; i < n; ++i) in[i] = cases[i % cases.size()].first;
  const auto out = sf::eval(sf::cast<To>(x), x = in);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], cases[i % cases.size()].second) << "cast of " << in[i];
}
}  // namespace

TEST(ElementwiseCast, FloatToIntSaturatesNanToZero) {
  check_saturating_cast<float, std::int32_t>();
  check_saturating_cast<float, std::int64_t>();
  check_saturating_cast<double, std::int32_t>();
  check_saturating_cast<double, std::int64_t>();
  // double values just inside int32's range still convert exactly.
  const auto x = sf::placeholder<"x", double, shape<dyn>>();
  dyn_tensor<double, 1> in(sf::extents_t<1>{2}, 2147483647.75);
  in[1] = -2147483648.75;
  const auto out = sf::eval(sf::cast<std::int32_t>(x), x = in);
  EXPECT_EQ(out[0], 2147483647);
  EXPECT_EQ(out[1], std::numeric_limits<std::int32_t>::min());
}
