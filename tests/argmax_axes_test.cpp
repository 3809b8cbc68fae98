// argmax / argmin (ops/argmax.hpp) against NumPy's rules written out here (the first index of the
// extreme; NaN is the extreme; -0 == +0 ties), at every axis of a rank-3 operand with odd extents,
// negative axes, keepdims and select_last_index, in typed evaluation and through graph handles; and
// negative axes elsewhere: concat, narrow, slice and softmax on types and handles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;

constexpr std::size_t d0 = 5, d1 = 7, d2 = 3;
using cube = shape<dyn, d1, d2>;

// Few distinct values, so that ties are common; NaN and ±0 among them.
tensor<float, cube> tied_values(unsigned seed) {
  std::mt19937 rng(seed);
  const float pool[] = {1, 2, 2, 3, -1, 0, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  tensor<float, cube> t({d0, d1, d2}, uninitialized);
  for (auto& v : t) v = pool[rng() % (seed % 2 ? std::size(pool) : 7)];  // odd seeds: with NaN and Inf
  return t;
}

// The index NumPy's argmax/argmin picks along `axis` at the other coordinates (i, j): a plain scan.
std::int64_t reference(const tensor<float, cube>& x, std::size_t axis, std::size_t i, std::size_t j, bool largest,
                       bool last) {
  const std::size_t n = axis == 0 ? d0 : axis == 1 ? d1 : d2;
  auto at = [&](std::size_t k) {
    return axis == 0 ? x(k, i, j) : axis == 1 ? x(i, k, j) : x(i, j, k);
  };
  std::vector<std::int64_t> nan_at, best_at;
  float best = at(0);
  for (std::size_t k = 0; k < n; ++k) {
    const float v = at(k);
    if (std::isnan(v)) nan_at.push_back(std::int64_t(k));
    else if (std::isnan(best) || (largest ? v > best : v < best)) best = v;
  }
  if (!nan_at.empty()) return last ? nan_at.back() : nan_at.front();
  for (std::size_t k = 0; k < n; ++k)
    if (at(k) == best) best_at.push_back(std::int64_t(k));
  return last ? best_at.back() : best_at.front();
}

template <class Result>
void expect_reference(const Result& got, const tensor<float, cube>& x, std::size_t axis, bool largest, bool last,
                      bool keep) {
  const std::size_t a = axis == 0 ? d1 : d0, b = axis == 2 ? d1 : d2;
  ASSERT_EQ(got.size(), a * b);
  ASSERT_EQ(got.extents().size(), keep ? 3u : 2u);
  for (std::size_t i = 0; i < a; ++i)
    for (std::size_t j = 0; j < b; ++j)
      EXPECT_EQ(got.data()[i * b + j], reference(x, axis, i, j, largest, last))
          << (largest ? "argmax" : "argmin") << " axis " << axis << " at " << i << "," << j;
}

std::vector<std::int64_t> run_handles(const tensor<float, cube>& xv, std::int64_t axis, bool largest, bool keep, bool last) {
  graph_builder b;
  auto h = b.input("x", dtype::f32, {-1, std::int64_t(d1), std::int64_t(d2)});
  const graph g = b.build({largest ? argmax(h, axis, keep, last) : argmin(h, axis, keep, last)});
  runtime_tensor t(dtype::f32, runtime_extents{d0, d1, d2});
  std::memcpy(t.bytes(), xv.data(), t.byte_size());
  runtime_feeds feeds;
  feeds.insert_or_assign("x", std::move(t));
  const auto out = run_graph(g, feeds);
  EXPECT_EQ(out.at(0).type(), dtype::i64);
  std::vector<std::int64_t> v(out.at(0).byte_size() / sizeof(std::int64_t));
  std::memcpy(v.data(), out.at(0).bytes(), out.at(0).byte_size());
  return v;
}

TEST(ArgExtremum, FirstIndexOfTheExtremeNanFirstAtEveryAxis) {
  auto x = placeholder<"x", float, cube>();
  for (unsigned seed : {1u, 2u, 3u, 4u}) {
    const auto xv = tied_values(seed);
    const auto [a0, a1, a2, m0, m1, m2] =
        eval(argmax<0>(x), argmax<-2>(x), argmax<-1>(x, keepdims), argmin<-3>(x), argmin<1>(x, keepdims), argmin<2>(x),
             x = xv);
    expect_reference(a0, xv, 0, true, false, false);
    expect_reference(a1, xv, 1, true, false, false);
    expect_reference(a2, xv, 2, true, false, true);
    expect_reference(m0, xv, 0, false, false, false);
    expect_reference(m1, xv, 1, false, false, true);
    expect_reference(m2, xv, 2, false, false, false);
    // Graph handles, select_last_index included: the interpreter against the same reference.
    for (std::int64_t axis : {0, 1, 2, -1})
      for (bool largest : {true, false})
        for (bool last : {false, true}) {
          const auto got = run_handles(xv, axis, largest, false, last);
          const std::size_t ax = std::size_t(axis < 0 ? axis + 3 : axis);
          tensor<std::int64_t, shape<dyn, dyn>> as_tensor({ax == 0 ? d1 : d0, ax == 2 ? d1 : d2}, uninitialized);
          std::copy(got.begin(), got.end(), as_tensor.begin());
          expect_reference(as_tensor, xv, ax, largest, last, false);
        }
  }
}

TEST(ArgExtremum, IntegersAndTheGraphFormsAgreeWithTypedEvaluation) {
  auto x = placeholder<"x", std::int32_t, shape<dyn>>();
  tensor<std::int32_t, shape<dyn>> xv({9}, uninitialized);
  const std::int32_t v[] = {3, -7, std::numeric_limits<std::int32_t>::max(), 0, -7,
                            std::numeric_limits<std::int32_t>::max(), 5, std::numeric_limits<std::int32_t>::min(), 1};
  std::copy(std::begin(v), std::end(v), xv.begin());
  const auto [hi, lo] = eval(argmax<0>(x), argmin<0>(x), x = xv);
  EXPECT_EQ(hi.data()[0], 2);
  EXPECT_EQ(lo.data()[0], 7);
  const graph g = to_graph(argmax<0>(x, keepdims));
  EXPECT_EQ(graph_type_string(g.type_of(g.outputs[0])), "i64[1]");
}

TEST(ArgExtremum, AnEmptyAxisIsAShapeErrorNamingTheOp) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  tensor<float, shape<dyn, 4>> empty({0, 4}, uninitialized);
  EXPECT_THROW((void)eval(argmax<0>(x), x = empty), shape_error);
  try {
    (void)eval(argmin<0>(x), x = empty);
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("argmin"), std::string::npos) << e.what();
  }
  // Reducing the other axis of an empty operand gives an empty result, no error.
  EXPECT_EQ(eval(argmax<1>(x), x = empty).size(), 0u);
}

TEST(NegativeAxes, CountFromTheLastOnTypesAndHandles) {
  auto x = placeholder<"x", float, cube>();
  auto y = placeholder<"y", float, cube>();
  tensor<float, cube> xv({d0, d1, d2}, uninitialized), yv({d0, d1, d2}, uninitialized);
  std::mt19937 rng(3);
  std::normal_distribution<float> n;
  for (auto& v : xv) v = n(rng);
  for (auto& v : yv) v = n(rng);
  const auto [c_neg, c_pos, s_neg, s_pos, n_neg, n_pos] =
      eval(concat<-1>(x, y), concat<2>(x, y), softmax(x, axes<-3>), softmax(x, axes<0>), narrow<-2>(x, 1, 4),
           narrow<1>(x, 1, 4), x = xv, y = yv);
  EXPECT_EQ(c_neg.extents(), c_pos.extents());
  EXPECT_EQ(std::memcmp(c_neg.data(), c_pos.data(), c_pos.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(s_neg.data(), s_pos.data(), s_pos.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(n_neg.data(), n_pos.data(), n_pos.size() * sizeof(float)), 0);

  graph_builder b;
  auto hx = b.input("x", dtype::f32, {-1, std::int64_t(d1), std::int64_t(d2)});
  auto hy = b.input("y", dtype::f32, {-1, std::int64_t(d1), std::int64_t(d2)});
  const graph g = b.build({concat({hx, hy}, -1), softmax(hx, -3), slice(hx, -2, 1, 4)});
  runtime_feeds feeds;
  for (auto [name, value] : {std::pair{"x", &xv}, std::pair{"y", &yv}}) {
    runtime_tensor t(dtype::f32, runtime_extents{d0, d1, d2});
    std::memcpy(t.bytes(), value->data(), t.byte_size());
    feeds.insert_or_assign(name, std::move(t));
  }
  const auto out = run_graph(g, feeds);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::memcmp(out[0].bytes(), c_pos.data(), out[0].byte_size()), 0);
  ASSERT_EQ(out[1].byte_size(), s_pos.size() * sizeof(float));
  for (std::size_t i = 0; i < s_pos.size(); ++i)  // the interpreter sums in double: within a few ulps
    EXPECT_NEAR(reinterpret_cast<const float*>(out[1].bytes())[i], s_pos.data()[i], 1e-6f) << i;
  EXPECT_EQ(std::memcmp(out[2].bytes(), n_pos.data(), out[2].byte_size()), 0);
}

}  // namespace
