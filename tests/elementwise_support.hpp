#pragma once
// Shared by the elementwise op tests (elementwise*_test.cpp): float64 references and the typed\n// helpers that evaluate an expression over several sizes and data sets.
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

#include "random_tensor_support.hpp"

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

using test_random::random_tensor;

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

inline double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }
inline double softplus_ref(double v) { return std::log1p(std::exp(v)); }  // no overflow for |v| <= 20
inline double sign_ref(double v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Arithmetic: + - * / between tensors and with scalars on either side.
