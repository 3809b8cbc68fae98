// Forward over reverse: jvp of a gradient made by the reverse sweep (stored adjoints, references,
// sums of terms) against central differences of that gradient.
#include "second_order_support.hpp"

using namespace symflow;
using namespace second_order;

TEST(JvpOfSweep, MatchesDifferencesOfTheGradient) {
  // jvp of a gradient made by the reverse sweep (its stored adjoints, references and sums).
  auto x = placeholder<"x", double, S>();
  auto w = variable<"w", double, S>();
  auto v = placeholder<"v", double, S>();
  auto u = tanh(x * w);
  auto loss = sum(u * u * w);
  const auto g = grad_sweep(loss, w);
  expect_matches_differences(jvp(g, w, v), g, x, w, v);
}
