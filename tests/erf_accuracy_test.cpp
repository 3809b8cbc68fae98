// erf's f32 SIMD form (ops/erf.hpp) against long double erfl: every float on a dense grid of
// [-5, 5] and on a geometric grid down to the subnormals, within 6 ulps (0.9 on average); special
// values; the same bits in a SIMD body, a scalar tail and the graph interpreter; f64 is std::erf.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

// |got - exact| in units of the float spacing at the exact value rounded to float.
double ulps(float got, long double exact) {
  const float r = float(exact);
  const float up = std::nextafter(std::abs(r), std::numeric_limits<float>::infinity());
  const double spacing = double(up) - double(std::abs(r));
  return double(std::abs((long double)got - exact)) / spacing;
}

TEST(ErfAccuracy, FloatWithinSixUlps) {
  std::vector<float> xs;
  for (int i = -2'000'000; i <= 2'000'000; ++i) xs.push_back(5.0f * float(i) / 2'000'000.0f);
  for (float v = 1e-44f; v < 1e-2f; v = std::max(v * 1.01f, std::nextafter(v, 1.f))) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  tensor<float, shape<dyn>> t(extents_t<1>{xs.size()}, 0.f);
  std::copy(xs.begin(), xs.end(), t.data());
  const auto x = placeholder<"x", float, shape<dyn>>();
  const auto y = eval(erf(x), x = t);
  double worst = 0, total = 0;
  float worst_at = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double e = ulps(y[i], erfl((long double)xs[i]));
    total += e;
    if (e > worst) {
      worst = e;
      worst_at = xs[i];
    }
    ASSERT_LE(std::abs(y[i]), 1.0f) << xs[i];
  }
  EXPECT_LE(worst, 6.0) << "at x = " << worst_at;
  EXPECT_LE(total / double(xs.size()), 1.0);
}

TEST(ErfAccuracy, SpecialValuesAndSameBitsEverywhere) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // 37 elements: a SIMD body and a scalar tail at any packet width.
  std::vector<float> xs = {0.f, -0.f, inf, -inf, nan, 3.9192059f, -3.9192059f, 3.9192057f, 1e-45f, -1e-45f,
                           0.5f, -1.f, 1e-20f, 2.f, 100.f, -7.5f, 0.25f, -0.125f, 1.5f, 2.5f};
  while (xs.size() < 37) xs.push_back(-0.01f * float(xs.size()));
  tensor<float, shape<dyn>> t(extents_t<1>{xs.size()}, 0.f);
  std::copy(xs.begin(), xs.end(), t.data());
  const auto x = placeholder<"x", float, shape<dyn>>();
  const auto y = eval(erf(x), x = t);
  EXPECT_EQ(y[0], 0.f);
  EXPECT_FALSE(std::signbit(y[0]));
  EXPECT_EQ(y[1], 0.f);
  EXPECT_TRUE(std::signbit(y[1]));
  EXPECT_EQ(y[2], 1.f);
  EXPECT_EQ(y[3], -1.f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 1.f);  // the smallest float whose erf rounds to 1
  EXPECT_EQ(y[6], -1.f);
  EXPECT_EQ(y[14], 1.f);
  EXPECT_EQ(y[15], -1.f);
  // Each element alone (a scalar evaluation) and through the interpreter: the same bits.
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(t));
  const auto interpreted = interpreter(to_graph(erf(x))).run(feeds)[0];
  for (std::size_t i = 0; i < xs.size(); ++i) {
    tensor<float, shape<dyn>> one(extents_t<1>{1}, xs[i]);
    const float alone = eval(erf(x), x = one)[0];
    const float via = interpreted.data<float>()[i];
    EXPECT_TRUE((std::isnan(alone) && std::isnan(y[i])) || std::bit_cast<std::uint32_t>(alone) == std::bit_cast<std::uint32_t>(y[i]))
        << "x = " << xs[i] << ": alone " << alone << ", in the array " << y[i];
    EXPECT_TRUE((std::isnan(via) && std::isnan(y[i])) || std::bit_cast<std::uint32_t>(via) == std::bit_cast<std::uint32_t>(y[i]))
        << "x = " << xs[i] << ": interpreter " << via << ", compiled " << y[i];
  }
}

TEST(ErfAccuracy, DoubleIsStdErf) {
  const auto x = placeholder<"x", double, shape<dyn>>();
  tensor<double, shape<dyn>> t(extents_t<1>{1001}, 0.0);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = -6.0 + 12.0 * double(i) / 1000.0;
  const auto y = eval(erf(x), x = t);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(y[i], std::erf(t[i])) << t[i];
}

}  // namespace
