// The interpreter gives the values the ops define for special inputs, as typed evaluation does:
// integer division by zero, INT_MIN / -1, out-of-range casts, NaN in max/min reductions.
#include <cstring>
#include <limits>

#include <symflow/runtime/interpreter.hpp>

#include "graph_support.hpp"

using namespace symflow;
using namespace symflow::testing;

// Integer division by zero, INT_MIN / -1 and out-of-range float->int casts (issue 14) give the
// values the ops define (0, INT_MIN, saturation; ops/div.hpp, ops/cast.hpp) in the interpreter as in
// typed evaluation, with no signal; and NaN propagates through maximum/relu wherever it falls.
namespace {
template <class T>
std::vector<T> values_of(const runtime_tensor& t) {
  std::vector<T> v(t.byte_size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.bytes(), t.byte_size());
  return v;
}
template <class T, class E, class... B>
void expect_interpreter_equals_typed(const E& e, const B&... bindings) {
  const auto typed = eval(e, bindings...);
  runtime_feeds feeds;
  auto feed = [&](const auto& binding) {
    const auto& v = binding.value;
    using V = std::remove_cvref_t<decltype(*v.data())>;
    runtime_tensor t(dtype_v<V>, runtime_extents(v.extents().begin(), v.extents().end()));
    if (t.byte_size()) std::memcpy(t.bytes(), v.data(), t.byte_size());
    feeds.insert_or_assign(std::string(std::remove_cvref_t<decltype(binding)>::name.view()), std::move(t));
  };
  (feed(bindings), ...);
  const auto out = run_graph(to_graph(e), feeds);
  ASSERT_EQ(out.size(), 1u);
  const auto got = values_of<T>(out[0]);
  ASSERT_EQ(got.size(), typed.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::memcmp(&got[i], &typed[i], sizeof(T)), 0) << to_string(e) << " at " << i;
}
}  // namespace

TEST(GraphInterpreterSpecialValues, IntegerDivisionCastsAndNanAgreeWithTypedEvaluation) {
  auto a = placeholder<"a", std::int32_t, shape<dyn>>();
  auto b = placeholder<"b", std::int32_t, shape<dyn>>();
  auto f = placeholder<"f", float, shape<dyn>>();
  using L = std::numeric_limits<std::int32_t>;
  tensor<std::int32_t, shape<dyn>> av(extents_t<1>{40}, 7), bv(extents_t<1>{40}, 0);
  for (std::size_t i = 0; i < 40; i += 4) {
    av[i] = L::min();
    bv[i] = -1;
  }
  expect_interpreter_equals_typed<std::int32_t>(a / b, a = av, b = bv);
  expect_interpreter_equals_typed<std::int32_t>(-a + b * a, a = av, b = bv);
  const auto q = eval(a / b, a = av, b = bv);
  EXPECT_EQ(q[0], L::min());
  EXPECT_EQ(q[1], 0);

  tensor<float, shape<dyn>> fv(extents_t<1>{37}, 1.5f);
  fv[0] = std::numeric_limits<float>::quiet_NaN();
  fv[1] = 3e9f;
  fv[2] = -std::numeric_limits<float>::infinity();
  fv[36] = std::numeric_limits<float>::quiet_NaN();
  fv[20] = std::numeric_limits<float>::quiet_NaN();
  expect_interpreter_equals_typed<std::int32_t>(cast<std::int32_t>(f), f = fv);
  expect_interpreter_equals_typed<float>(maximum(f, 0.5f) + relu(f) - minimum(2.0f, f), f = fv);
  const auto c = eval(cast<std::int32_t>(f), f = fv);
  EXPECT_EQ(c[0], 0);
  EXPECT_EQ(c[1], L::max());
  EXPECT_EQ(c[2], L::min());
  const auto m = eval(maximum(f, 0.5f), f = fv);
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[20]) && std::isnan(m[36]));
}

// max/min reductions propagate NaN wherever it is (packet body, scalar tail, either side of a
// combine) and take -0 < +0, in typed evaluation and the interpreter alike (ops/max.hpp, min.hpp).
TEST(GraphInterpreterSpecialValues, MaxMinReductionsPropagateNanAtEveryPosition) {
  auto x = placeholder<"x", float, shape<dyn>>();
  for (std::size_t n : {1u, 15u, 17u, 37u, 100u}) {
    for (std::size_t pos = 0; pos < n; ++pos) {
      tensor<float, shape<dyn>> xv(extents_t<1>{n}, 0.25f);
      xv[pos] = std::numeric_limits<float>::quiet_NaN();
      const auto mx = eval(max(x), x = xv);
      const auto mn = eval(min(x), x = xv);
      EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mn[0])) << "NaN at " << pos << " of " << n;
      if (pos % 7 == 0) {
        expect_interpreter_equals_typed<float>(max(x), x = xv);
        expect_interpreter_equals_typed<float>(min(x), x = xv);
      }
    }
    tensor<float, shape<dyn>> zeros(extents_t<1>{n}, -0.0f);
    zeros[n / 2] = 0.0f;
    EXPECT_FALSE(std::signbit(eval(max(x), x = zeros)[0])) << n;
    EXPECT_TRUE(std::signbit(eval(min(x), x = zeros)[0]) || n == 1) << n;
  }
}
