// Ties in max/min: a reduction's adjoint is split evenly among the elements equal to the extremum
// (-0 and +0 tie; a NaN extremum gives its slice NaN), and maximum/minimum give g/2 to each operand
// at a tie (none where an operand is NaN), as JAX and PyTorch's amax/amin/maximum/minimum do.
// Checked for the path walk, the reverse sweep, forward mode and the runtime graph gradient against
// a float64 reference computed here element by element (hvp through max/min: hvp_test).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

// Rows: distinct values; a tie of two at the maximum; all five equal; -0 and +0 at the maximum;
// a NaN; a tie of two at the minimum and of three at the maximum.
tensor<double, shape<6, 5>> tied_values() {
  tensor<double, shape<6, 5>> t({6, 5}, 0.0);
  const double rows[6][5] = {{0.3, -1.2, 2.5, 0.9, -0.4},  {0.7, 0.7, -0.5, 0.1, 0.7 - 1.0},
                             {1.5, 1.5, 1.5, 1.5, 1.5},    {-0.0, 0.0, -1.0, -2.0, -0.5},
                             {0.2, nan_v, 0.4, -0.1, 0.0}, {-3.0, 2.0, -3.0, 2.0, 2.0}};
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 5; ++j) t.data()[i * 5 + j] = rows[i][j];
  return t;
}

tensor<double, shape<6, 1>> row_weights() {
  tensor<double, shape<6, 1>> c({6, 1}, 0.0);
  for (std::size_t i = 0; i < 6; ++i) c.data()[i] = 0.5 + 0.25 * double(i);
  return c;
}

// d/dx of sum(c * extremum(x, rows)): c_i / k_i at the k_i elements equal to the extremum, 0
// elsewhere; NaN across a row whose extremum is NaN.
std::vector<double> reference_row_gradient(const tensor<double, shape<6, 5>>& x, const tensor<double, shape<6, 1>>& c,
                                           bool is_max) {
  std::vector<double> out(30, 0.0);
  for (std::size_t i = 0; i < 6; ++i) {
    const double* row = x.data() + i * 5;
    bool has_nan = false;
    double e = row[0];
    for (std::size_t j = 0; j < 5; ++j) {
      has_nan = has_nan || std::isnan(row[j]);
      e = is_max ? std::max(e, row[j]) : std::min(e, row[j]);
    }
    double ties = 0;
    for (std::size_t j = 0; j < 5; ++j) ties += row[j] == e ? 1 : 0;
    for (std::size_t j = 0; j < 5; ++j)
      out[i * 5 + j] = has_nan ? nan_v : (row[j] == e ? c.data()[i] / ties : 0.0);
  }
  return out;
}

template <class T>
void expect_same(const T* got, const std::vector<double>& want, const char* what) {
  const double tolerance = 4 * std::numeric_limits<T>::epsilon();
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(double(got[k]))) << what << " element " << k << ": " << got[k];
    } else {
      EXPECT_NEAR(double(got[k]), want[k], tolerance) << what << " element " << k;
    }
  }
}

template <class Loss, class X, class C>
void check_all_routes(const Loss& loss, const X& x, const C& c, bool is_max) {
  const auto xv = tied_values();
  const auto cv = row_weights();
  const auto want = reference_row_gradient(xv, cv, is_max);
  expect_same(eval(grad_by_paths(loss, x), x = xv, c = cv).data(), want, "path walk");
  expect_same(eval(grad_sweep(loss, x), x = xv, c = cv).data(), want, "reverse sweep");

  graph dg = differentiate(to_graph(loss), {"x"});
  runtime_feeds rf;
  rf["x"] = runtime_tensor(xv);
  rf["c"] = runtime_tensor(cv);
  const auto out = interpreter(dg).run(rf);
  ASSERT_EQ(out.size(), 2u);
  expect_same(out[1].data<double>(), want, "runtime gradient");
}

}  // namespace

TEST(ReductionTies, MaxSplitsTheAdjointEvenlyAmongTies) {
  auto x = placeholder<"x", double, shape<6, 5>>();
  auto c = placeholder<"c", double, shape<6, 1>>();
  check_all_routes(sum(max(x, axes<1>, keepdims) * c), x, c, true);
  check_all_routes(sum(max(x, axes<-1>) * sum(c, axes<1>)), x, c, true);  // reduced axis dropped
}

TEST(ReductionTies, MinSplitsTheAdjointEvenlyAmongTies) {
  auto x = placeholder<"x", double, shape<6, 5>>();
  auto c = placeholder<"c", double, shape<6, 1>>();
  check_all_routes(sum(min(x, axes<1>, keepdims) * c), x, c, false);
}

TEST(ReductionTies, FullReductionAndColumns) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  tensor<float, shape<dyn, 3>> xv({5, 3}, 0.f);
  // Column 0: max 4 three times; column 1: distinct; column 2: -0 and +0 tie at the maximum.
  const float v[5][3] = {{4, 1, -0.f}, {4, 2, 0.f}, {1, 3, -1}, {4, -7, -2}, {0, 0, -3}};
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 3; ++j) xv.data()[i * 3 + j] = v[i][j];
  const std::vector<double> columns{1. / 3, 0, 0.5,  1. / 3, 0, 0.5, 0, 1, 0, 1. / 3, 0, 0, 0, 0, 0};
  expect_same(eval(grad_by_paths(sum(max(x, axes<0>)), x), x = xv).data(), columns, "columns, path walk");
  expect_same(eval(grad_sweep(sum(max(x, axes<0>)), x), x = xv).data(), columns, "columns, sweep");
  // The whole tensor: 4 occurs three times.
  std::vector<double> whole(15, 0.0);
  whole[0] = whole[3] = whole[9] = 1. / 3;
  expect_same(eval(grad(max(x), x), x = xv).data(), whole, "whole tensor");
  graph dg = differentiate(to_graph(max(x)), {"x"});
  runtime_feeds rf;
  rf["x"] = runtime_tensor(xv);
  expect_same(interpreter(dg).run(rf).at(1).data<float>(), whole, "whole tensor, runtime");
}

TEST(ReductionTies, ForwardModeTakesTheMeanOverTies) {
  auto x = placeholder<"x", double, shape<6, 5>>();
  auto t = placeholder<"t", double, shape<6, 5>>();
  const auto xv = tied_values();
  tensor<double, shape<6, 5>> tv({6, 5}, 0.0);
  for (std::size_t k = 0; k < 30; ++k) tv.data()[k] = 0.1 * double(k) - 1.0;
  const auto got = eval(jvp(max(x, axes<1>), x, t), x = xv, t = tv);
  for (std::size_t i = 0; i < 6; ++i) {
    double e = -std::numeric_limits<double>::infinity(), sum_t = 0, ties = 0;
    bool has_nan = false;
    for (std::size_t j = 0; j < 5; ++j) {
      has_nan = has_nan || std::isnan(xv.data()[i * 5 + j]);
      e = std::max(e, xv.data()[i * 5 + j]);
    }
    for (std::size_t j = 0; j < 5; ++j)
      if (xv.data()[i * 5 + j] == e) sum_t += tv.data()[i * 5 + j], ties += 1;
    if (has_nan) EXPECT_TRUE(std::isnan(got.data()[i])) << "row " << i;
    else EXPECT_NEAR(got.data()[i], sum_t / ties, 1e-15) << "row " << i;
  }
}

TEST(ReductionTies, MaximumAndMinimumSplitAtTies) {
  auto a = placeholder<"a", double, shape<dyn>>();
  auto b = placeholder<"b", double, shape<dyn>>();
  tensor<double, shape<dyn>> av({7}, 0.0), bv({7}, 0.0);
  const double as[7] = {1, 2, 3, -0.0, nan_v, 5, -1};
  const double bs[7] = {1, 1, 4, 0.0, 1, nan_v, -1};
  for (std::size_t i = 0; i < 7; ++i) av.data()[i] = as[i], bv.data()[i] = bs[i];
  // d/da, d/db of sum(maximum(a, b)): 1 to the larger, 1/2 each at a tie (-0 == +0), 0 with a NaN.
  const std::vector<double> max_a{0.5, 1, 0, 0.5, 0, 0, 0.5}, max_b{0.5, 0, 1, 0.5, 0, 0, 0.5};
  const std::vector<double> min_a{0.5, 0, 1, 0.5, 0, 0, 0.5}, min_b{0.5, 1, 0, 0.5, 0, 0, 0.5};
  const auto [da, db] = grad_by_paths(sum(maximum(a, b)), a, b);
  const auto [ga, gb] = eval(da, db, a = av, b = bv);
  expect_same(ga.data(), max_a, "maximum, a");
  expect_same(gb.data(), max_b, "maximum, b");
  const auto [ea, eb] = grad_sweep(sum(minimum(a, b)), a, b);
  const auto [ha, hb] = eval(ea, eb, a = av, b = bv);
  expect_same(ha.data(), min_a, "minimum, a");
  expect_same(hb.data(), min_b, "minimum, b");
  graph dg = differentiate(to_graph(sum(maximum(a, b))), {"a", "b"});
  runtime_feeds rf;
  rf["a"] = runtime_tensor(av);
  rf["b"] = runtime_tensor(bv);
  const auto out = interpreter(dg).run(rf);
  expect_same(out.at(1).data<double>(), max_a, "maximum, a, runtime");
  expect_same(out.at(2).data<double>(), max_b, "maximum, b, runtime");
}
