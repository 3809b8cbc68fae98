// Dropout: the mask against the documented splitmix64 rule and the expected value it keeps, and its
// gradient applying the same mask.
#include "cnn_support.hpp"

// --- dropout ---

namespace {
// The documented mask, written out again from the comment in dropout.hpp.
bool documented_keep(std::uint64_t seed, std::uint64_t i, double rate) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return std::ldexp(double(z >> 11), -53) >= rate;
}
}  // namespace

TEST(Dropout, MaskFollowsTheDocumentedRuleAndKeepsTheExpectedValue) {
  const auto x = placeholder<"x", float, shape<dyn, 1000>>();
  const tensor<float, shape<dyn, 1000>> ones({100, 1000}, 1.0f);
  const double rate = 0.3;
  const auto a = eval(dropout(x, rate, 42), x = ones);
  const auto again = eval(dropout(x, rate, 42), x = ones);
  const auto other = eval(dropout(x, rate, 43), x = ones);
  const float scale = float(1.0 / (1.0 - rate));
  std::size_t kept = 0, differ = 0;
  double total = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool keep = documented_keep(42, i, rate);
    ASSERT_EQ(a.data()[i], keep ? scale : 0.0f) << i;
    kept += keep;
    total += a.data()[i];
    differ += (other.data()[i] != 0) != keep;
  }
  EXPECT_EQ(std::vector<float>(a.begin(), a.end()), std::vector<float>(again.begin(), again.end()));
  // 1e5 Bernoulli(0.7) draws: standard deviation of the kept fraction 0.00145; 5 sigma.
  const double n = double(a.size());
  EXPECT_NEAR(double(kept) / n, 1 - rate, 5 * std::sqrt(rate * (1 - rate) / n));
  EXPECT_NEAR(total / n, 1.0, 5 * std::sqrt(rate / (1 - rate) / n));
  // Another seed: about 2 p (1-p) = 42% of the decisions differ.
  EXPECT_NEAR(double(differ) / n, 2 * rate * (1 - rate), 0.02);
  // Rate 0 is the identity; a rate outside [0, 1) is refused.
  const auto xv = random_tensor<float, shape<dyn, 1000>>({3, 1000}, -1, 1, 400);
  const auto same = eval(dropout(x, 0.0, 9), x = xv);
  EXPECT_EQ(std::vector<float>(same.begin(), same.end()), std::vector<float>(xv.begin(), xv.end()));
  EXPECT_THROW(dropout(x, 1.0, 1), value_error);
  EXPECT_THROW(dropout(x, -0.1, 1), value_error);
}

TEST(Dropout, GradientAppliesTheSameMask) {
  const auto x = placeholder<"x", float, shape<dyn, 64>>();
  const auto xv = random_tensor<float, shape<dyn, 64>>({8, 64}, -1, 1, 401);
  const auto cv = random_tensor<float, shape<dyn, 64>>({8, 64}, -1, 1, 402);
  const auto c = placeholder<"c", float, shape<dyn, 64>>();
  const auto y = dropout(x, 0.5, 2024);
  const auto [value, dx] = eval(y, grad(sum(y * c), x), x = xv, c = cv);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const bool keep = documented_keep(2024, i, 0.5);
    EXPECT_EQ(value.data()[i], keep ? xv.data()[i] * 2.0f : 0.0f) << i;
    EXPECT_EQ(dx.data()[i], keep ? cv.data()[i] * 2.0f : 0.0f) << i;
  }
  // Ops with different seeds stay distinct when the graph merges equal subexpressions.
  const auto two = eval(dropout(x, 0.5, 1) - dropout(x, 0.5, 2), x = xv);
  EXPECT_TRUE(std::any_of(two.begin(), two.end(), [](float v) { return v != 0; }));
}
