// Results that must not depend on the SIMD width: where exp underflows and overflows, and so where
// check_numerics finds a softmax's zeros. Kept small and in a translation unit of its own because the
// sanitizer job builds it a second time for AVX2 (x86-64-v3) while the main build uses the machine's
// own width (AVX-512 on some machines): the pair is what catches a width-dependent result.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#include <symflow/debug/localise.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

// exp must underflow as std::exp does (denormals, then exactly 0) and overflow to +Inf at the same
// place, in SIMD packets and scalar tails and for every packet width: Eigen's float pexp clamps its
// argument with SSE/AVX2 packets (exp(-138) and exp(-inf) were 2.9e-39), so on AVX2 machines a
// softmax never underflowed in the fused loops while the interpreter's re-run disagreed. The
// sanitizer job builds this test for AVX2 (x86-64-v3), the main build for the machine's own width.
TEST(CheckNumerics, ExpUnderflowsAndOverflowsAsStdExpAtEveryPosition) {
  auto x = placeholder<"x", float, shape<dyn>>();
  auto xd = placeholder<"xd", double, shape<dyn>>();
  const float specials[] = {-INFINITY, -1000.f, -138.f, -104.f, -103.5f, -100.f, -90.f, -88.5f, -87.5f, 88.5f, 88.8f, 89.f, 1000.f, INFINITY};
  const double specials_d[] = {-INFINITY, -2000.0, -745.5, -745.0, -720.0, -708.5, 709.5, 710.0, 1000.0, INFINITY};
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(37)}) {
    for (std::size_t at = 0; at < n; ++at) {
      for (float v : specials) {
        tensor<float, shape<dyn>> t(extents_t<1>{n}, 0.5f);
        t[at] = v;
        const auto got = eval(exp(x), x = t);
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[at]), std::bit_cast<std::uint32_t>(std::exp(v)))
            << "exp(" << v << ") at " << at << " of " << n << ": " << got[at];
      }
      for (double v : specials_d) {
        tensor<double, shape<dyn>> t(extents_t<1>{n}, 0.5);
        t[at] = v;
        const auto got = eval(exp(xd), xd = t);
        ASSERT_EQ(std::bit_cast<std::uint64_t>(got[at]), std::bit_cast<std::uint64_t>(std::exp(v)))
            << "exp(" << v << ") at " << at << " of " << n << ": " << got[at];
      }
    }
  }
}

// docs/debugging.md's walkthrough in small: logits spread wider than 104 make softmax underflow to 0,
// and check_numerics names the log, in the compiled evaluation and in the interpreter's re-run alike.
TEST(CheckNumerics, SoftmaxUnderflowIsNamedAtTheLogOnEverySimdWidth) {
  check_numerics_scope on;
  auto z = placeholder<"z", float, shape<dyn, 3>>();
  tensor<float, shape<dyn, 3>> logits(extents_t<2>{37, 3}, 0.0f);
  for (std::size_t i = 0; i < 37; ++i) logits(i, 0) = 70.0f, logits(i, 1) = -68.0f, logits(i, 2) = float(i);
  try {
    (void)eval(-mean(sum(log(scope("model", [&] { return softmax(z); })), axes<1>)), z = logits);
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_EQ(e.op(), "log") << e.what();
    EXPECT_EQ(e.health().negative_infinity, 37u) << e.what();
  }
}

// softplus and sigmoid reach exp past its normal range (softplus through exp(-|x|), sigmoid through
// exp(-x)): they must take exp's fallback there too. softplus called Eigen's pexp directly, and for x
// below about -88 (and -Inf) gave 0 with AVX-512 and 2.9e-39 with AVX2; sigmoid's pexp(-x) overflowed
// from -88.38 on with AVX-512 and from -88.72 with AVX2. The reference is the documented rule in
// std:: math: softplus(x) = log1p(exp(x)) = exp(x) there, sigmoid(x) = 1 / (1 + exp(-x)), or exp(x)
// where exp(-x) overflows; both also within two denormals of the long double value.
template <class T>
T softplus_reference(T v) {
  return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v)));
}
template <class T>
T sigmoid_reference(T v) {
  const T e = std::exp(-v);
  return std::isinf(e) ? std::exp(v) : T(1) / (T(1) + e);
}

template <class T>
void expect_bits_everywhere(const char* name, const auto& f, T (*reference)(T), long double (*exact)(long double),
                            std::initializer_list<T> specials) {
  using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  auto x = placeholder<"x", T, shape<dyn>>();
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(37)}) {
    for (std::size_t at = 0; at < n; ++at) {
      for (T v : specials) {
        tensor<T, shape<dyn>> t(extents_t<1>{n}, T(0.5));
        t[at] = v;
        const auto got = eval(f(x), x = t);
        ASSERT_EQ(std::bit_cast<bits>(got[at]), std::bit_cast<bits>(reference(v)))
            << name << "(" << v << ") at " << at << " of " << n << ": " << got[at] << ", want " << reference(v);
        ASSERT_LE(std::fabs(static_cast<long double>(got[at]) - exact(v)),
                  2 * static_cast<long double>(std::numeric_limits<T>::denorm_min()))
            << name << "(" << v << ")";
      }
    }
  }
}

TEST(CheckNumerics, SoftplusAndSigmoidUnderflowLikeExpAtEveryPosition) {
  auto softplus_exact = [](long double v) { return std::isinf(v) ? 0.0L : std::log1p(std::exp(v)); };
  auto sigmoid_exact = [](long double v) { return std::isinf(v) ? 0.0L : 1.0L / (1.0L + std::exp(-v)); };
  const auto sp = [](const auto& x) { return softplus(x); };
  const auto sg = [](const auto& x) { return sigmoid(x); };
  expect_bits_everywhere<float>("softplus", sp, softplus_reference<float>, softplus_exact,
                                {-INFINITY, -1000.f, -138.f, -104.f, -103.5f, -100.f, -90.f, -88.8f, -88.5f, -87.5f});
  // (sigmoid from -88 on, and from -709 on in f64, reads exp in its normal range: Eigen's bits.)
  expect_bits_everywhere<float>("sigmoid", sg, sigmoid_reference<float>, sigmoid_exact,
                                {-INFINITY, -1000.f, -138.f, -104.f, -103.5f, -100.f, -90.f, -88.8f, -88.5f, -88.1f});
  expect_bits_everywhere<double>("softplus", sp, softplus_reference<double>, softplus_exact,
                                 {-INFINITY, -2000.0, -745.5, -745.0, -730.0, -720.0, -709.9, -708.5});
  expect_bits_everywhere<double>("sigmoid", sg, sigmoid_reference<double>, sigmoid_exact,
                                 {-INFINITY, -2000.0, -745.5, -745.0, -730.0, -720.0, -709.9, -709.5});
}

// log's own AVX-512 form (mask registers instead of Eigen's vector masks) must give the bits of
// Eigen's float log, which every other width uses: every 251st float bit pattern (all signs,
// exponents and NaN payloads; NaN bits too), and the specials, through eval (SIMD body and scalar tail alike).
TEST(CheckNumerics, LogGivesEigensBitsOnEveryWidth) {
  using P = simd::packet_t<float>;
  std::vector<float> values;
  for (std::uint64_t b = 0; b < (std::uint64_t(1) << 32); b += 251) values.push_back(std::bit_cast<float>(std::uint32_t(b)));
  for (float v : {0.f, -0.f, 1.f, 0.5f, 0.70710677f, 0.70710683f, std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    values.push_back(v);
  values.push_back(2.f);  // an odd count: the last elements run in the scalar tail
  const std::size_t n = values.size();
  tensor<float, shape<dyn>> in({n}, 0.f);
  std::copy(values.begin(), values.end(), in.data());
  const auto x = placeholder<"x", float, shape<dyn>>();
  const auto got = eval(log(x), x = in);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Eigen's float log on a packet holding the value; denormals are scaled into the normal range
    // first (log's doc), as here.
    const float v = values[i];
    const bool denormal = v > 0 && v < std::numeric_limits<float>::min();
    const P p = simd::pm::pset1<P>(denormal ? v * 0x1p24f : v);
    float want = simd::pm::pfirst(Eigen::internal::plog_float(p));
    if (denormal) want -= 16.635532333438687f;
    if (std::bit_cast<std::uint32_t>(got.data()[i]) != std::bit_cast<std::uint32_t>(want) && ++bad <= 5)
      ADD_FAILURE() << "log(" << v << ") = " << got.data()[i] << ", Eigen " << want;
  }
  EXPECT_EQ(bad, 0u);
}
