// Results that must not depend on the SIMD width: where exp underflows and overflows, and so where
// check_numerics finds a softmax's zeros. Kept small and in a translation unit of its own because the
// sanitizer job builds it a second time for AVX2 (x86-64-v3) while the main build uses the machine's
// own width (AVX-512 on some machines): the pair is what catches a width-dependent result.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

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
