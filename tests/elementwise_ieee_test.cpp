// IEEE 754 special values through elementwise ops (NaN at every position of a packet, signed zeros,
// infinities), integer division by zero and INT_MIN / -1, and float-to-int casts of NaN, checked
// against values computed here with <cmath>.
//
// Compile time matters (every distinct expression type instantiates the fused evaluator), so the
// checks go through a few typed helpers that take the expression as a lambda and loop over sizes
// and data at run time.
#include <cstring>

#include "elementwise_support.hpp"

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

// where over comparisons (and / or / not of them) runs on packets (a lane mask selects each lane's
// bits): the same bits as the scalar rule at every length and position, with NaN, infinities, -0
// and NaN payloads among the operands, on both branches.
namespace {
template <class T>
void check_selects_match_scalar() {
  const auto a = sf::placeholder<"a", T, shape<dyn>>();
  const auto b = sf::placeholder<"b", T, shape<dyn>>();
  std::mt19937_64 engine(17);
  std::uniform_int_distribution<int> pick(0, 9);
  std::normal_distribution<double> normal;
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(-0.0), T(0.0), T(1)};
  for (std::size_t n : {1u, 3u, 15u, 16u, 17u, 33u, 67u, 1000u, 40009u}) {
    dyn_tensor<T, 1> av(sf::extents_t<1>{n}, T(0)), bv(sf::extents_t<1>{n}, T(0));
    for (std::size_t i = 0; i < n; ++i) {
      av[i] = pick(engine) < 3 ? specials[std::size_t(pick(engine)) % 6] : T(normal(engine));
      bv[i] = pick(engine) < 3 ? specials[std::size_t(pick(engine)) % 6] : T(normal(engine));
    }
    const auto r1 = sf::eval(sf::where(a < b, a, b * T(2)), a = av, b = bv);
    const auto r2 = sf::eval(sf::where(sf::logical_and(a >= T(0), sf::logical_not(b > a)), a - b, T(0)), a = av, b = bv);
    const auto r3 = sf::eval(sf::where(sf::logical_or(sf::not_equal(a, b), a <= b), a, b), a = av, b = bv);
    const auto r4 = sf::eval(sf::where(sf::equal(a, T(0)), T(1), a), a = av, b = bv);
    for (std::size_t i = 0; i < n; ++i) {
      const T x = av[i], y = bv[i];
      const T want[4] = {x < y ? x : T(y * T(2)), (x >= T(0) && !(y > x)) ? T(x - y) : T(0), (x != y || x <= y) ? x : y,
                         x == T(0) ? T(1) : x};
      const T got[4] = {r1[i], r2[i], r3[i], r4[i]};
      for (int k = 0; k < 4; ++k)
        ASSERT_EQ(std::memcmp(&want[k], &got[k], sizeof(T)), 0)
            << "select " << k + 1 << ", n " << n << ", element " << i << ": a " << x << ", b " << y << ": " << got[k]
            << " vs " << want[k];
    }
  }
}
}  // namespace

TEST(ElementwiseIeee, SelectsOverComparisonsMatchTheScalarRuleBitForBit) {
  check_selects_match_scalar<float>();
  check_selects_match_scalar<double>();
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
