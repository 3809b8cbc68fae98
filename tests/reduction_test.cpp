// sum / mean / max / min checked against a float64 (int64 for integers) reference computed here, on
// random inputs (fixed seeds): all axes, single axes, several axes, negative axes, keepdims, ranks
// 1..4, fused operands, large inputs on the threaded path, integer dtypes, empty and rank-0 inputs.
//
// Compile time: every (op, operand, axes, keepdims) combination is its own evaluator type, so the
// checks go through one typed helper that runs many shapes per instantiation; the large-input
// tests reuse the same expression types with other extents.
#include <gtest/gtest.h>

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

#include "random_tensor_support.hpp"

namespace sf = symflow;
using sf::axes;
using sf::dyn;
using sf::shape;

namespace {

template <class T, std::size_t R>
using dyn_tensor = sf::tensor<T, sf::dyn_shape<R>>;

std::mt19937 rng(unsigned salt) { return std::mt19937(0x5eed1000u + salt); }

using test_random::random_tensor;

// Elementwise |got - want| <= allowed (NaN matches NaN, infinities must match exactly).
template <class T, class S>
::testing::AssertionResult all_within(const sf::tensor<T, S>& got, const std::vector<double>& want,
                                      const std::vector<double>& allowed) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  std::size_t bad = 0;
  std::ostringstream first;
  first.precision(17);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = want[i];
    const bool ok = g == w || std::fabs(g - w) <= allowed[i] || (std::isnan(g) && std::isnan(w));
    if (!ok && bad++ < 5)
      first << "\n  [" << i << "] got " << g << " want " << w << " (|err| " << std::fabs(g - w) << ", allowed "
            << allowed[i] << ")";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.size() << " elements differ:" << first.str();
}

template <class T, class S>
::testing::AssertionResult all_within(const sf::tensor<T, S>& got, const std::vector<double>& want, double rtol) {
  std::vector<double> allowed;
  for (double w : want) allowed.push_back(rtol * std::fabs(w));
  return all_within(got, want, allowed);
}

// The float64 reference of every reduction of `in` over the axes marked in `mask`; outputs in
// row-major order of the kept axes (the same order with or without keepdims).
struct reference {
  std::size_t count = 1;               // elements combined into each output
  std::vector<std::size_t> kept;       // extents of the kept axes
  std::vector<double> sum, sumabs, max, min;
  std::vector<long long> isum;         // exact integer sums
};

template <class T, std::size_t R>
reference reduce_reference(const dyn_tensor<T, R>& in, const std::array<bool, R>& mask) {
  reference r;
  std::array<std::size_t, R> out_stride{};
  std::size_t out_size = 1;
  for (std::size_t i = R; i-- > 0;) {
    if (mask[i]) {
      r.count *= in.extent(i);
    } else {
      out_stride[i] = out_size;
      out_size *= in.extent(i);
    }
  }
  for (std::size_t i = 0; i < R; ++i)
    if (!mask[i]) r.kept.push_back(in.extent(i));
  r.sum.assign(out_size, 0.0);
  r.sumabs.assign(out_size, 0.0);
  r.isum.assign(out_size, 0);
  r.max.assign(out_size, -std::numeric_limits<double>::infinity());
  r.min.assign(out_size, std::numeric_limits<double>::infinity());
  std::array<std::size_t, R> idx{};
  for (std::size_t flat = 0; flat < in.size(); ++flat) {
    std::size_t rest = flat, o = 0;
    for (std::size_t i = R; i-- > 0;) {
      idx[i] = rest % in.extent(i);
      rest /= in.extent(i);
      if (!mask[i]) o += idx[i] * out_stride[i];
    }
    const double v = static_cast<double>(in[flat]);
    r.sum[o] += v;
    r.sumabs[o] += std::fabs(v);
    if constexpr (std::is_integral_v<T>) r.isum[o] += static_cast<long long>(in[flat]);
    r.max[o] = std::max(r.max[o], v);
    r.min[o] = std::min(r.min[o], v);
  }
  return r;
}

enum kinds : unsigned { SUM = 1, MEAN = 2, MAX = 4, MIN = 8, ALL_KINDS = 15 };

struct options {
  double lo = -1, hi = 1;
  bool integral = false;    // floats holding integers: sums must be exact
  double fixed_rtol = 0;    // > 0: bound sums by fixed_rtol * sum|x| instead of the worst-case bound
  unsigned seed = 1;
};

template <bool Keep, class F, class X, int... A>
auto reduce(F f, const X& x, sf::axes_t<A...> ax) {
  if constexpr (Keep) return f(x, ax, sf::keepdims);
  else return f(x, ax);
}

template <std::size_t R, int... A>
constexpr std::array<bool, R> mask_of() {
  std::array<bool, R> m{};
  if constexpr (sizeof...(A) == 0) m.fill(true);
  else ((m[std::size_t(A < 0 ? A + int(R) : A)] = true), ...);
  return m;
}

// Checks the reductions selected by Kinds over axes A... (with or without keepdims) of a dtype-T
// rank-R operand, for each of the given runtime extents.
template <class T, bool Keep, unsigned Kinds, std::size_t R, int... A>
void check_reduce(std::initializer_list<sf::extents_t<R>> shapes, sf::axes_t<A...> ax, options opt = {}) {
  const auto x = sf::placeholder<"x", T, sf::dyn_shape<R>>();
  constexpr auto mask = mask_of<R, A...>();
  constexpr std::size_t reduced = sizeof...(A) == 0 ? R : sizeof...(A);  // (axes given are distinct)
  // float: unit roundoff 2^-24; double 2^-53.
  constexpr double u = std::is_same_v<T, float> ? 0x1p-24 : 0x1p-53;
  for (const auto& ext : shapes) {
    auto g = rng(opt.seed + unsigned(sf::element_count<R>(ext)));
    const auto in = random_tensor<T, R>(ext, opt.lo, opt.hi, g, opt.integral);
    const reference ref = reduce_reference<T, R>(in, mask);
    std::vector<std::size_t> want_ext;
    for (std::size_t i = 0; i < R; ++i)
      if (!mask[i]) want_ext.push_back(ext[i]);
      else if (Keep) want_ext.push_back(1);
    const std::string where = std::string(sf::dtype_name(sf::dtype_v<T>)) + sf::format_extents(ext) +
                              (Keep ? " keepdims" : "") + " axes [" + ((std::to_string(A) + " ") + ... + "") + "]";
    auto check = [&](const char* name, const auto& out, const std::vector<double>& want, const std::vector<double>& allowed) {
      static_assert(std::remove_cvref_t<decltype(out)>::rank == (Keep ? R : R - reduced));
      EXPECT_EQ(std::vector<std::size_t>(out.extents().begin(), out.extents().end()), want_ext) << name << " " << where;
      EXPECT_TRUE(all_within(out, want, allowed)) << name << " " << where;
    };
    const std::size_t n = ref.sum.size();
    const double count = double(ref.count);
    if constexpr ((Kinds & SUM) != 0) {
      std::vector<double> want = ref.sum, allowed(n, 0.0);
      if constexpr (std::is_integral_v<T>) {
        for (std::size_t i = 0; i < n; ++i) want[i] = double(ref.isum[i]);
      } else if (!opt.integral) {
        // Worst-case bound of any summation order: (count - 1) roundings of partial sums each at
        // most 1 ulp of sum|x| (plus 2 for the fold of thread partials); or the fixed bound asked.
        for (std::size_t i = 0; i < n; ++i)
          allowed[i] = (opt.fixed_rtol > 0 ? opt.fixed_rtol : (count + 2) * u) * ref.sumabs[i];
      }
      check("sum", sf::eval(reduce<Keep>(sf::sum, x, ax), x = in), want, allowed);
    }
    if constexpr ((Kinds & MEAN) != 0) {
      std::vector<double> want(n), allowed(n, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>) {
          // Integer mean: the integer sum divided by the count in T, truncating toward zero.
          want[i] = ref.count ? double(ref.isum[i] / static_cast<long long>(ref.count)) : 0.0;
        } else {
          want[i] = ref.sum[i] / count;  // NaN for an empty reduction (0/0)
          const double sum_err = opt.integral ? 0 : (opt.fixed_rtol > 0 ? opt.fixed_rtol : (count + 2) * u) * ref.sumabs[i];
          allowed[i] = sum_err / count + u * std::fabs(want[i]) * 2;  // plus the division's rounding
        }
      }
      check("mean", sf::eval(reduce<Keep>(sf::mean, x, ax), x = in), want, allowed);
    }
    // max and min return one of the inputs: exact. An empty reduction gives the identity (-inf /
    // +inf for floats, lowest / max for integers).
    if constexpr ((Kinds & MAX) != 0) {
      std::vector<double> want = ref.max;
      if constexpr (std::is_integral_v<T>)
        for (auto& w : want)
          if (std::isinf(w)) w = double(std::numeric_limits<T>::lowest());
      check("max", sf::eval(reduce<Keep>(sf::max, x, ax), x = in), want, std::vector<double>(n, 0.0));
    }
    if constexpr ((Kinds & MIN) != 0) {
      std::vector<double> want = ref.min;
      if constexpr (std::is_integral_v<T>)
        for (auto& w : want)
          if (std::isinf(w)) w = double(std::numeric_limits<T>::max());
      check("min", sf::eval(reduce<Keep>(sf::min, x, ax), x = in), want, std::vector<double>(n, 0.0));
    }
  }
}

using e1 = sf::extents_t<1>;
using e2 = sf::extents_t<2>;
using e3 = sf::extents_t<3>;
using e4 = sf::extents_t<4>;

// Static result shapes (no evaluation, no cost).
using x4 = sf::placeholder<"x", float, shape<5, 7, dyn, 3>>;
static_assert(std::is_same_v<sf::shape_of<decltype(sf::sum(x4{}))>, shape<>>);
static_assert(std::is_same_v<sf::shape_of<decltype(sf::sum(x4{}, sf::keepdims))>, shape<1, 1, 1, 1>>);
static_assert(std::is_same_v<sf::shape_of<decltype(sf::max(x4{}, axes<1>))>, shape<5, dyn, 3>>);
static_assert(std::is_same_v<sf::shape_of<decltype(sf::mean(x4{}, axes<-1, 0>, sf::keepdims))>, shape<1, 7, dyn, 1>>);
static_assert(std::is_same_v<sf::shape_of<decltype(sf::min(x4{}, axes<2, 0>))>, shape<7, 3>>);
static_assert(std::is_same_v<sf::value_type_of<decltype(sf::sum(sf::placeholder<"i", std::int32_t, shape<4>>{}))>, std::int32_t>);

}  // namespace

// ---------------------------------------------------------------------------------------------
// Axes patterns by rank. Shapes are not multiples of the packet width; several include extent-1
// axes (which the fused loop drops) and one-element inputs.

TEST(Reduction, Rank1) {
  check_reduce<float, false, ALL_KINDS>({e1{1}, e1{15}, e1{16}, e1{17}, e1{1000}, e1{4099}}, axes<>, {-3, 3});
  check_reduce<float, true, SUM>({e1{1}, e1{1000}}, axes<-1>, {-3, 3});
}

TEST(Reduction, Rank2) {
  const auto shapes = {e2{13, 45}, e2{1, 1}, e2{64, 1}, e2{1, 64}, e2{3, 257}};
  check_reduce<float, false, ALL_KINDS>(shapes, axes<0>, {-3, 3});
  check_reduce<float, true, ALL_KINDS>(shapes, axes<1>, {-3, 3});
  check_reduce<float, true, MEAN>(shapes, axes<-2, -1>, {-3, 3});
}

TEST(Reduction, Rank3) {
  const auto shapes = {e3{5, 7, 37}, e3{2, 1, 3}, e3{1, 9, 1}, e3{4, 33, 2}};
  check_reduce<float, true, MAX>(shapes, axes<>, {-3, 3});
  check_reduce<float, false, SUM | MIN>(shapes, axes<1>, {-3, 3});
  check_reduce<float, false, MEAN | MAX>(shapes, axes<0, 2>, {-3, 3});
  check_reduce<float, false, ALL_KINDS>(shapes, axes<-1>, {-3, 3});
}

TEST(Reduction, Rank4) {
  const auto shapes = {e4{3, 4, 5, 19}, e4{2, 3, 1, 17}, e4{1, 1, 1, 1}, e4{2, 2, 2, 2}};
  check_reduce<float, false, SUM>(shapes, axes<>, {-3, 3});
  check_reduce<float, true, SUM | MAX>(shapes, axes<1, 3>, {-3, 3});
  check_reduce<float, false, MEAN | MIN>(shapes, axes<0, 2, 3>, {-3, 3});
  check_reduce<float, false, SUM | MAX>(shapes, axes<-3>, {-3, 3});
  check_reduce<float, true, MIN | MEAN>(shapes, axes<-4, -1>, {-3, 3});
}

TEST(Reduction, AxesOrderDoesNotMatter) {
  // axes<2, 0> names the same reduction as axes<0, 2> (the same type, so the same result).
  const auto x = sf::placeholder<"x", float, sf::dyn_shape<3>>();
  static_assert(std::is_same_v<decltype(sf::mean(x, axes<2, 0>)), decltype(sf::mean(x, axes<0, 2>))>);
  static_assert(std::is_same_v<decltype(sf::mean(x, axes<-1, 0>)), decltype(sf::mean(x, axes<0, 2>))>);
  check_reduce<float, false, MEAN>({e3{3, 5, 7}}, axes<2, 0>, {-3, 3});
}

TEST(Reduction, Double) {
  check_reduce<double, false, ALL_KINDS>({e2{13, 45}, e2{2, 1000}, e2{1, 1}}, axes<1>, {-3, 3});
}

TEST(Reduction, Integers) {
  // Scalar path; sums exact; integer mean truncates toward zero (C++ division in the dtype).
  check_reduce<std::int32_t, false, ALL_KINDS>({e2{13, 45}, e2{1, 7}, e2{300, 3}}, axes<0>, {-1000, 1000});
  check_reduce<std::int32_t, false, SUM | MAX | MIN>({e2{13, 45}, e2{1, 1}}, axes<>, {-1000, 1000});
  // int64 sums beyond the int32 range.
  check_reduce<std::int64_t, false, SUM | MEAN>({e3{3, 4, 259}, e3{2, 2, 1}}, axes<-1>, {-1e12, 1e12});
}

// ---------------------------------------------------------------------------------------------
// Large inputs: threaded path (2^15-element threshold), per-thread partials, blocked float sums.

TEST(ReductionLarge, FloatSumAccuracyOverAMillionElements) {
  // Positive values (no cancellation): within 1e-5 of the float64 sum, as the blocked summation
  // promises (a naive sequential float sum of 2^20 values drifts further).
  const std::size_t n = (std::size_t(1) << 20) + 3;
  check_reduce<float, false, ALL_KINDS>({e1{n}}, axes<>, {0, 1, false, 1e-5, 11});
  // Mixed signs: the same bound relative to sum|x|.
  check_reduce<float, false, SUM>({e1{n}}, axes<>, {-1, 1, false, 1e-5, 12});
  // Integer-valued floats: every partial sum is an integer below 2^24, so any summation order is
  // exact: a lost or doubled element (a thread-split bug) shows as an exact mismatch.
  check_reduce<float, false, ALL_KINDS>({e1{n}}, axes<>, {0, 8, true, 0, 13});
}

TEST(ReductionLarge, AxisReductionsSplitAcrossThreads) {
  // Outer-axis sums (one accumulator row per output) with more outputs than the small partial
  // buffer holds, inner-axis sums with keepdims, and (integer-valued, so exact in any order) a long
  // outer reduction into few outputs. (The accuracy of long outer reductions of real values is
  // ReductionLarge.OuterAxisFloatSumAccuracy below.)
  check_reduce<float, false, ALL_KINDS>({e2{1025, 1024}, e2{4099, 16}}, axes<0>, {0, 1, false, 1e-5, 21});
  check_reduce<float, true, ALL_KINDS>({e2{1025, 1024}, e2{17, 70001}}, axes<1>, {0, 1, false, 1e-5, 22});
  check_reduce<float, false, ALL_KINDS>({e2{1025, 1024}, e2{65539, 16}}, axes<0>, {0, 8, true, 0, 23});
  check_reduce<double, false, ALL_KINDS>({e2{517, 1031}}, axes<1>, {-1, 1, false, 0, 24});
}

TEST(ReductionLarge, OuterAxisFloatSumAccuracy) {
  // Column sums of a tall matrix (batch statistics): the same 1e-5 promise as a full sum, on one
  // thread so the outcome does not depend on how many cores split the rows.
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
#endif
  check_reduce<float, false, SUM | MEAN>({e2{std::size_t(1) << 20, 16}, e2{65539, 16}}, axes<0>, {0, 1, false, 1e-5, 25});
  // The same sums through the inner-axis path of a transposed view meet it.
  check_reduce<float, true, SUM>({e2{16, std::size_t(1) << 20}}, axes<1>, {0, 1, false, 1e-5, 26});
#if defined(_OPENMP)
  omp_set_num_threads(saved);
#endif
}

TEST(ReductionLarge, Integers) {
  const std::size_t n = (std::size_t(1) << 20) + 3;
  check_reduce<std::int32_t, false, SUM | MAX | MIN>({e2{1, n}, e2{1024, 1025}}, axes<>, {-1000, 1000, false, 0, 31});
  check_reduce<std::int32_t, false, ALL_KINDS>({e2{70001, 3}}, axes<0>, {-1000, 1000, false, 0, 32});
}

// ---------------------------------------------------------------------------------------------
// Empty and rank-0 operands.

TEST(ReductionEdge, EmptyOperands) {
  // Reducing an empty axis gives the identity: sum 0, max -inf, min +inf; mean 0/0 = NaN.
  check_reduce<float, false, ALL_KINDS>({e2{0, 5}, e2{3, 0}}, axes<0>);
  check_reduce<float, true, ALL_KINDS>({e2{0, 5}, e2{3, 0}}, axes<1>);
  check_reduce<float, false, ALL_KINDS>({e1{0}}, axes<>);
  check_reduce<std::int32_t, false, SUM | MAX | MIN>({e2{0, 4}}, axes<>);
}

TEST(ReductionEdge, RankZeroOperand) {
  const auto s = sf::placeholder<"s", float, shape<>>();
  const sf::tensor<float, shape<>> sv(-2.25f);
  const auto out = sf::eval(sf::sum(s) * 2.0f + sf::max(s), s = sv);
  static_assert(decltype(out)::rank == 0);
  EXPECT_EQ(out[0], -6.75f);
}

// ---------------------------------------------------------------------------------------------
// Fused operands: the elementwise work runs inside the reduction loop; reductions inside
// elementwise expressions are materialised first.

namespace {
template <class T, std::size_t R>
std::vector<double> doubles(const dyn_tensor<T, R>& t) {
  return std::vector<double>(t.begin(), t.end());
}
}  // namespace

TEST(ReductionFused, SumOfExpTimesB) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  const auto e = sf::sum(sf::exp(a) * b, axes<1>);
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{17, 300}, {1, 1}, {40, 1000}, {3, 70001}}) {
    auto g = rng(unsigned(rows + cols));
    const auto av = random_tensor<float, 2>({rows, cols}, -2, 2, g);
    const auto bv = random_tensor<float, 2>({rows, cols}, -1, 1, g);
    const auto out = sf::eval(e, a = av, b = bv);
    std::vector<double> want(rows, 0.0), allowed(rows, 0.0);
    for (std::size_t i = 0; i < rows; ++i) {
      double abs_sum = 0;
      for (std::size_t j = 0; j < cols; ++j) {
        const double t = std::exp(double(av[i * cols + j])) * bv[i * cols + j];
        want[i] += t;
        abs_sum += std::fabs(t);
      }
      // each term carries a few ulps (exp kernel, product) on top of the summation bound
      allowed[i] = (std::min<double>(cols, 4096) + 8) * 0x1p-24 * abs_sum;
    }
    EXPECT_TRUE(all_within(out, want, allowed)) << rows << "x" << cols;
  }
}

TEST(ReductionFused, MeanSquaredDeviationKeepdims) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const auto e = sf::mean(sf::square(x - 1.5f), axes<-1>, sf::keepdims);
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<dyn, dyn, 1>>);
  auto g = rng(41);
  const auto xv = random_tensor<float, 3>({4, 6, 301}, 0, 3, g);
  const auto out = sf::eval(e, x = xv);
  ASSERT_EQ(out.extents(), (sf::extents_t<3>{4, 6, 1}));
  std::vector<double> want(24, 0.0);
  for (std::size_t r = 0; r < 24; ++r) {
    for (std::size_t j = 0; j < 301; ++j) want[r] += std::pow(double(xv[r * 301 + j]) - 1.5, 2);
    want[r] /= 301;
  }
  // positive terms: relative bound (n + a few) * 2^-24
  EXPECT_TRUE(all_within(out, want, (301 + 4) * 0x1p-24));
}

TEST(ReductionFused, MaxAbsAndMinOfWhere) {
  const auto x = sf::placeholder<"x", float, shape<dyn>>();
  const auto m = sf::placeholder<"m", bool, shape<dyn>>();
  auto g = rng(42);
  const auto xv = random_tensor<float, 1>({70001}, -5, 4, g);
  dyn_tensor<bool, 1> mv({70001}, false);
  std::bernoulli_distribution coin(0.3);
  for (auto& v : mv) v = coin(g);
  const auto out = sf::eval(sf::max(sf::abs(x)) - sf::min(sf::where(m, x, 10.0f)), x = xv, m = mv);
  double mx = 0, mn = 10;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    mx = std::max(mx, std::fabs(double(xv[i])));
    if (mv[i]) mn = std::min(mn, double(xv[i]));
  }
  EXPECT_EQ(out[0], static_cast<float>(mx - mn));
}

TEST(ReductionFused, BroadcastOperand) {
  // sum over axis 0 of a [3,1] + [1,40] broadcast: the operand never exists in memory.
  const auto a = sf::placeholder<"a", float, shape<dyn, 1>>();
  const auto b = sf::placeholder<"b", float, shape<1, dyn>>();
  const auto e = sf::sum(a * b + a, axes<0>);
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<dyn>>);
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{3, 40}, {1000, 3}, {300, 300}}) {
    auto g = rng(unsigned(rows * 7 + cols));
    const auto av = random_tensor<float, 2>({rows, 1}, 1, 2, g);
    const auto bv = random_tensor<float, 2>({1, cols}, 1, 2, g);
    const auto out = sf::eval(e, a = av, b = bv);
    ASSERT_EQ(out.extents(), (sf::extents_t<1>{cols}));
    std::vector<double> want(cols, 0.0);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) want[j] += double(av[i]) * bv[j] + av[i];
    EXPECT_TRUE(all_within(out, want, (double(rows) + 4) * 0x1p-24)) << rows << "x" << cols;
  }
}

TEST(ReductionFused, CenteringByMeanKeepdims) {
  // x - mean(x, axes<1>, keepdims): an inner reduction materialised and broadcast back.
  const auto x = sf::placeholder<"x", double, shape<dyn, dyn>>();
  auto g = rng(43);
  const auto xv = random_tensor<double, 2>({37, 129}, -4, 4, g);
  const auto out = sf::eval(x - sf::mean(x, axes<1>, sf::keepdims), x = xv);
  std::vector<double> want(xv.size()), allowed(xv.size());
  for (std::size_t i = 0; i < 37; ++i) {
    double m = 0, abs_sum = 0;
    for (std::size_t j = 0; j < 129; ++j) m += xv[i * 129 + j], abs_sum += std::fabs(xv[i * 129 + j]);
    m /= 129;
    for (std::size_t j = 0; j < 129; ++j) {
      want[i * 129 + j] = xv[i * 129 + j] - m;
      allowed[i * 129 + j] = 140 * 0x1p-53 * abs_sum / 129 + 0x1p-53 * std::fabs(xv[i * 129 + j]);
    }
  }
  EXPECT_TRUE(all_within(out, want, allowed));
  // Each row now sums to ~0.
  const auto row_sums = sf::eval(sf::sum(x - sf::mean(x, axes<1>, sf::keepdims), axes<1>), x = xv);
  for (double s : row_sums) EXPECT_NEAR(s, 0.0, 1e-12);
}

TEST(ReductionFused, NestedReductionAndTransposedOperand) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const auto y = sf::placeholder<"y", float, shape<dyn, dyn>>();
  auto g = rng(44);
  const auto xv = random_tensor<float, 3>({6, 5, 21}, -3, 3, g);
  const auto yv = random_tensor<float, 2>({19, 53}, -3, 3, g);
  // sum over axis 0 of the row maxima.
  const auto nested = sf::eval(sf::sum(sf::max(x, axes<2>), axes<0>), x = xv);
  ASSERT_EQ(nested.extents(), (sf::extents_t<1>{5}));
  std::vector<double> want(5, 0.0), allowed(5);
  for (std::size_t j = 0; j < 5; ++j) {
    double abs_sum = 0;
    for (std::size_t i = 0; i < 6; ++i) {
      double m = -1e300;
      for (std::size_t k = 0; k < 21; ++k) m = std::max(m, double(xv[(i * 5 + j) * 21 + k]));
      want[j] += m;
      abs_sum += std::fabs(m);
    }
    allowed[j] = 8 * 0x1p-24 * abs_sum;
  }
  EXPECT_TRUE(all_within(nested, want, allowed));
  // Row sums of a transposed view are the column sums of the operand (strided reads).
  const auto cols = sf::eval(sf::sum(sf::transpose(y), axes<1>), y = yv);
  ASSERT_EQ(cols.extents(), (sf::extents_t<1>{53}));
  std::vector<double> cwant(53, 0.0), callowed(53, 0.0);
  for (std::size_t i = 0; i < 19; ++i)
    for (std::size_t j = 0; j < 53; ++j) cwant[j] += yv[i * 53 + j], callowed[j] += std::fabs(yv[i * 53 + j]);
  for (auto& a : callowed) a *= 21 * 0x1p-24;
  EXPECT_TRUE(all_within(cols, cwant, callowed));
}

TEST(ReductionFused, SumOfCastIntegers) {
  const auto i = sf::placeholder<"i", std::int32_t, shape<dyn, dyn>>();
  auto g = rng(45);
  const auto iv = random_tensor<std::int32_t, 2>({70, 1001}, -50, 50, g);
  const auto out = sf::eval(sf::sum(sf::cast<float>(i) * 0.5f, axes<-1>), i = iv);
  // Half-integers with partial sums far below 2^23: exact in float.
  for (std::size_t r = 0; r < 70; ++r) {
    long long s = 0;
    for (std::size_t c = 0; c < 1001; ++c) s += iv[r * 1001 + c];
    EXPECT_EQ(out[r], 0.5f * float(s)) << r;
  }
}
