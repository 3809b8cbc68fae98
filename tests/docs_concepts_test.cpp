// The code of the concept pages (docs/tensors.md, docs/evaluation.md, docs/gradients.md), run and
// checked against independent references: hand-computed values, float64 loops and central
// differences. Each region between `// [docs:NAME]` and `// [docs:end]` is shown in a page exactly
// as written here (tests/docs_snippets.py checks that the page and this file agree).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <symflow/symflow.hpp>
#include <symflow/debug/check_gradient.hpp>
#include <symflow/debug/localise.hpp>  // check_numerics names the node that produced a NaN or infinity

using namespace symflow;

namespace {

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

// ---------------------------------------------------------------------------------------------
// docs/tensors.md

TEST(DocsTensors, BuildingAndIndexing) {
  // [docs:tensors-build]
  tensor<float, shape<2, 3>> a{{1, 2, 3}, {4, 5, 6}};        // static extents, row-major
  tensor<float, shape<dyn, 3>> b(extents_t<2>{4, 3}, 0.5f);  // 4 rows chosen at run time, all 0.5
  tensor<std::int32_t, shape<dyn>> labels{3, 7, 7};           // a dyn extent taken from the list
  tensor<double, shape<>> s(2.5);                             // rank 0: one value

  float corner = a(1, 2);                  // 6: index per axis
  std::size_t rows = b.extent(0);          // 4
  float total = 0;
  for (float v : a) total += v;            // begin()/end() walk the elements in memory order
  // [docs:end]
  EXPECT_EQ(corner, 6.0f);
  EXPECT_EQ(rows, 4u);
  EXPECT_EQ(total, 21.0f);
  EXPECT_EQ(labels.extent(0), 3u);
  EXPECT_EQ(labels(2), 7);
  EXPECT_EQ(s(), 2.5);
  EXPECT_EQ(b(3, 2), 0.5f);
}

TEST(DocsTensors, ExtentsAreCheckedWhenBuilt) {
  // [docs:tensors-checked]
  try {
    tensor<float, shape<dyn, 3>> wrong(extents_t<2>{4, 2});  // the static extent 3 is not 2
  } catch (const shape_error& e) {
    std::cout << e.what() << "\n";  // tensor: extents [4,2] do not fit the static shape [?,3]
  }
  // [docs:end]
  EXPECT_THROW((tensor<float, shape<dyn, 3>>(extents_t<2>{4, 2})), shape_error);
  try {
    tensor<float, shape<dyn, 3>> wrong(extents_t<2>{4, 2});
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit the static shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW((tensor<float, shape<2, 2>>{{1, 2}, {3}}), shape_error);  // ragged
}

TEST(DocsTensors, StridedViewsAreFedWithoutCopies) {
  // [docs:tensors-views]
  tensor<float, shape<3, 4>> m{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}};
  // Column 1 of m: 3 elements, 4 apart. A view points into m's memory; nothing is copied.
  tensor_view<const float, shape<3>> column(m.data() + 1, {3}, {4});

  auto x = placeholder<"x", float, shape<3>>();
  auto twice = eval(x * 2.0f, x = column);  // [2, 10, 18]: the evaluation reads through the strides
  // [docs:end]
  EXPECT_EQ(twice(0), 2.0f);
  EXPECT_EQ(twice(1), 10.0f);
  EXPECT_EQ(twice(2), 18.0f);
  EXPECT_FALSE(column.is_contiguous());
}

TEST(DocsTensors, EigenInterop) {
  // [docs:tensors-eigen]
  tensor<double, shape<2, 2>> t{{1, 2}, {3, 4}};
  auto as_matrix = as_eigen(t);                       // an Eigen::Map onto t's memory (row-major)
  double row_sum = as_matrix.row(1).sum();            // 7: any Eigen expression on it
  Eigen::MatrixXd m = Eigen::MatrixXd::Identity(2, 2);
  auto x = placeholder<"x", double, shape<dyn, dyn>>();
  auto sum_of_identity = eval(sum(x), x = view_of(m));  // 2: an Eigen matrix fed as a view
  // [docs:end]
  EXPECT_DOUBLE_EQ(row_sum, 7.0);
  EXPECT_DOUBLE_EQ(sum_of_identity(), 2.0);
  as_matrix(0, 1) = 5;  // writes through to t
  EXPECT_EQ(t(0, 1), 5.0);
}

TEST(DocsTensors, ViewOpsInExpressions) {
  // [docs:tensors-view-ops]
  auto x = placeholder<"x", float, shape<2, 3>>();
  auto xt = transpose(x);                 // f32[3,2]: strides swapped, no copy inside an expression
  auto rows = reshape<shape<3, dyn>>(x);  // f32[3,?]: the dyn extent is 2, from the element count
  auto tail = narrow<1>(x, 1, 3);         // f32[2,2]: columns 1 and 2
  tensor<float, shape<2, 3>> a{{1, 2, 3}, {4, 5, 6}};
  auto [t, r, n] = eval(xt, rows, tail, x = a);
  // t = [[1, 4], [2, 5], [3, 6]], r = [[1, 2], [3, 4], [5, 6]], n = [[2, 3], [5, 6]]
  // [docs:end]
  const float expect_t[3][2] = {{1, 4}, {2, 5}, {3, 6}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(t(i, j), expect_t[i][j]);
      EXPECT_EQ(r(i, j), float(2 * i + j + 1));
    }
  EXPECT_EQ(r.extent(1), 2u);
  EXPECT_EQ(n(0, 0), 2.0f);
  EXPECT_EQ(n(1, 1), 6.0f);
}

TEST(DocsTensors, DynExtentsAreCheckedBeforeAnyWork) {
  // [docs:tensors-dyn]
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto y = placeholder<"y", float, shape<dyn, 3>>();
  tensor<float, shape<dyn, 3>> two(extents_t<2>{2, 3}, 1.0f), four(extents_t<2>{4, 3}, 1.0f);
  try {
    eval(x + y, x = two, y = four);  // 2 rows against 4: neither is 1, so they do not broadcast
  } catch (const shape_error& e) {
    std::cout << e.what() << "\n";   // add 'add' (...): cannot broadcast operand shapes [2,3] and [4,3]
  }
  // [docs:end]
  try {
    eval(x + y, x = two, y = four);
    ADD_FAILURE() << "no shape_error";
  } catch (const shape_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("add 'add'"), std::string::npos) << message;
    EXPECT_NE(message.find("[2,3] and [4,3]"), std::string::npos) << message;
  }
  try {
    eval(maximum(x, y), x = two, y = four);  // a named function records the line that wrote it
    ADD_FAILURE() << "no shape_error";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("docs_concepts_test.cpp:" + std::to_string(__LINE__ - 3)), std::string::npos)
        << e.what();
  }
  tensor<float, shape<dyn, 3>> one(extents_t<2>{1, 3}, 2.0f);
  auto broadcast = eval(x + y, x = one, y = four);  // extent 1 stretches
  EXPECT_EQ(broadcast.extent(0), 4u);
  EXPECT_EQ(broadcast(3, 2), 3.0f);
}

// ---------------------------------------------------------------------------------------------
// docs/evaluation.md

TEST(DocsEvaluation, FeedsAndParams) {
  // [docs:evaluation-feeds]
  auto x = placeholder<"x", float, shape<dyn, 2>>();
  auto W = variable<"W", float, shape<2, 1>>();
  auto prediction = matmul(x, W);

  params p;
  p.set("W", tensor<float, shape<2, 1>>{{1}, {10}});
  tensor<float, shape<dyn, 2>> batch{{1, 2}, {3, 4}, {5, 6}};

  auto from_store = eval(prediction, x = batch, p);  // W from the store: [[21], [43], [65]]
  tensor<float, shape<2, 1>> other{{0}, {1}};
  auto from_feed = eval(prediction, x = batch, W = other);  // a variable may be fed too: [[2], [4], [6]]
  // [docs:end]
  EXPECT_EQ(from_store.extent(0), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(from_store(i, 0), batch(i, 0) * 1 + batch(i, 1) * 10);
    EXPECT_EQ(from_feed(i, 0), batch(i, 1));
  }
}

TEST(DocsEvaluation, MissingParameterIsAValueError) {
  auto x = placeholder<"x", float, shape<dyn, 2>>();
  auto W = variable<"W", float, shape<2, 1>>();
  tensor<float, shape<dyn, 2>> batch{{1, 2}};
  // [docs:evaluation-missing]
  params empty;
  try {
    eval(matmul(x, W), x = batch, empty);
  } catch (const value_error& e) {
    std::cout << e.what() << "\n";  // variable 'W' (file:line): variable 'W' has no value in the params store
  }
  // [docs:end]
  try {
    eval(matmul(x, W), x = batch, empty);
    ADD_FAILURE() << "no value_error";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("W"), std::string::npos) << e.what();
  }
  params wrong;
  wrong.set("W", tensor<double, shape<2, 1>>{});
  EXPECT_THROW(eval(matmul(x, W), x = batch, wrong), value_error);
}

TEST(DocsEvaluation, SeveralOutputsAndReuse) {
  auto x = placeholder<"x", float, shape<dyn>>();
  std::vector<double> values = random_values(1001, 7);  // odd length: the SIMD tail is exercised
  tensor<float, shape<dyn>> data(extents_t<1>{values.size()});
  for (std::size_t i = 0; i < values.size(); ++i) data(i) = float(values[i]);
  // [docs:evaluation-outputs]
  auto centred = x - mean(x);
  auto variance = mean(centred * centred);
  auto [c, v] = eval(centred, variance, x = data);  // mean(x) computed once, for both outputs

  tensor<float, shape<dyn>> c_out;
  tensor<float, shape<>> v_out;
  for (int step = 0; step < 3; ++step)
    eval_into(std::tie(c_out, v_out), centred, variance, x = data);  // reuses the outputs' memory
  // [docs:end]
  double m = 0;
  for (double d : values) m += double(float(d));
  m /= double(values.size());
  double var = 0;
  for (double d : values) var += (double(float(d)) - m) * (double(float(d)) - m);
  var /= double(values.size());
  EXPECT_NEAR(v(), var, 1e-5);
  EXPECT_NEAR(v_out(), var, 1e-5);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(c(i), double(float(values[i])) - m, 1e-5);
    EXPECT_EQ(c_out(i), c(i));
  }
}

TEST(DocsEvaluation, NonFiniteValuesPropagateLikeIEEE) {
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> special{-0.0f, std::numeric_limits<float>::infinity(), std::nanf(""), 4.0f, -1.0f};
  auto r = eval(sqrt(x), x = special);
  EXPECT_TRUE(std::signbit(r(0)));  // sqrt(-0) = -0
  EXPECT_EQ(r(0), 0.0f);
  EXPECT_TRUE(std::isinf(r(1)));
  EXPECT_TRUE(std::isnan(r(2)));
  EXPECT_EQ(r(3), 2.0f);
  EXPECT_TRUE(std::isnan(r(4)));
}

TEST(DocsEvaluation, CheckNumericsNamesTheNode) {
  // [docs:evaluation-numerics]
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> data{1.0f, 0.0f, 2.0f};
  set_check_numerics(true);
  try {
    eval(log(x) * 2.0f, x = data);  // log(0) = -inf
  } catch (const numerics_error& e) {
    std::cout << e.what() << "\n";  // the first node with a non-finite value: log, and where it was built
  }
  set_check_numerics(false);
  // [docs:end]
  set_check_numerics(true);
  try {
    eval(log(x) * 2.0f, x = data);
    ADD_FAILURE() << "no numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_NE(std::string(e.what()).find("log"), std::string::npos) << e.what();
  }
  set_check_numerics(false);
  auto quiet = eval(log(x) * 2.0f, x = data);
  EXPECT_TRUE(std::isinf(quiet(1)));
}

// ---------------------------------------------------------------------------------------------
// docs/gradients.md

TEST(DocsGradients, GradMatchesCentralDifferences) {
  // [docs:gradients-grad]
  auto x = placeholder<"x", double, shape<dyn, 3>>();
  auto W = variable<"W", double, shape<3, 2>>();
  auto b = variable<"b", double, shape<2>>();
  auto loss = mean(square(tanh(matmul(x, W) + b)));
  auto [dW, db] = grad(loss, W, b);  // expressions shaped like W and b
  // [docs:end]
  tensor<double, shape<dyn, 3>> data(extents_t<2>{5, 3});
  tensor<double, shape<3, 2>> w;
  tensor<double, shape<2>> bias;
  auto r = random_values(15 + 6 + 2, 11);
  std::size_t k = 0;
  for (auto& v : data) v = r[k++];
  for (auto& v : w) v = r[k++];
  for (auto& v : bias) v = r[k++];
  params p;
  p.set("W", w);
  p.set("b", bias);
  auto [gW, gb] = eval(dW, db, x = data, p);
  // Central differences of a float64 loop, independent of symflow's evaluation.
  auto reference_loss = [&](const tensor<double, shape<3, 2>>& ww, const tensor<double, shape<2>>& bb) {
    double total = 0;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j) {
        double z = bb(j);
        for (int c = 0; c < 3; ++c) z += data(i, c) * ww(c, j);
        total += std::tanh(z) * std::tanh(z);
      }
    return total / 10.0;
  };
  const double h = 1e-6;
  for (std::size_t i = 0; i < 6; ++i) {
    auto plus = w, minus = w;
    plus[i] += h;
    minus[i] -= h;
    EXPECT_NEAR(gW[i], (reference_loss(plus, bias) - reference_loss(minus, bias)) / (2 * h), 1e-8);
  }
  for (std::size_t j = 0; j < 2; ++j) {
    auto plus = bias, minus = bias;
    plus[j] += h;
    minus[j] -= h;
    EXPECT_NEAR(gb[j], (reference_loss(w, plus) - reference_loss(w, minus)) / (2 * h), 1e-8);
  }
}

TEST(DocsGradients, ForwardModeAndSecondOrder) {
  // [docs:gradients-forward]
  auto x = placeholder<"x", double, shape<dyn>>();
  auto v = placeholder<"v", double, shape<dyn>>();
  auto f = sum(x * x * x);                 // f(x) = Σ x³
  auto directional = jvp(f, x, v);         // ∇f · v = Σ 3x²v, without forming ∇f
  auto curvature = hvp(f, x, v);           // H v = 6 x v, a gradient differentiated again
  auto slope = d(x * x, x);                // elementwise: 2x
  tensor<double, shape<dyn>> at{1, -2, 0.5}, along{1, 1, 2};
  auto [j, h, s] = eval(directional, curvature, slope, x = at, v = along);
  // j = 3 + 12 + 1.5 = 16.5, h = [6, -12, 6], s = [2, -4, 1]
  // [docs:end]
  EXPECT_NEAR(j(), 16.5, 1e-12);
  const double expect_h[] = {6, -12, 6}, expect_s[] = {2, -4, 1};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(h(i), expect_h[i], 1e-12);
    EXPECT_NEAR(s(i), expect_s[i], 1e-12);
  }
}

TEST(DocsGradients, GradOfGrad) {
  // [docs:gradients-higher]
  auto w = variable<"w", double, shape<>>();
  auto f = sin(w) * w;                        // f = w sin w
  auto df = grad(f, w);                         // sin w + w cos w
  auto d2f = grad(df, w);                       // 2 cos w - w sin w
  params p;
  p.set("w", tensor<double, shape<>>(0.7));
  auto [first, second] = eval(df, d2f, p);
  // [docs:end]
  EXPECT_NEAR(first(), std::sin(0.7) + 0.7 * std::cos(0.7), 1e-12);
  EXPECT_NEAR(second(), 2 * std::cos(0.7) - 0.7 * std::sin(0.7), 1e-12);
}

TEST(DocsGradients, MaxTiesSplitTheGradient) {
  // [docs:gradients-ties]
  auto x = variable<"x", float, shape<4>>();
  auto dx = grad(max(x), x);
  tensor<float, shape<4>> tied{1, 3, 3, 2};
  auto g = eval(dx, x = tied);  // [0, 0.5, 0.5, 0]: the two maxima share the gradient
  auto dr = grad(sum(relu(x)), x);
  tensor<float, shape<4>> at_kink{-1, 0, -0.0f, 2};
  auto r = eval(dr, x = at_kink);  // [0, 0, 0, 1]: relu's derivative at 0 is 0, as in PyTorch
  // [docs:end]
  const float expect_g[] = {0, 0.5f, 0.5f, 0}, expect_r[] = {0, 0, 0, 1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(g(i), expect_g[i]);
    EXPECT_EQ(r(i), expect_r[i]);
  }
}

TEST(DocsGradients, CheckGradient) {
  // [docs:gradients-check]
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto loss = sum(softplus(matmul(x, W)));
  tensor<float, shape<dyn, 3>> data{{1, -2, 0.5f}, {0, 3, -1}};
  tensor<float, shape<3, 2>> w{{0.1f, -0.2f}, {0.3f, 0.4f}, {-0.5f, 0.6f}};
  gradient_check check = check_gradient(loss, W, x = data, W = w);
  // check.max_relative_error is below 1e-6: the derived rule and the differences agree;
  // check.worst_element, symbolic_at_worst and numeric_at_worst say where they agree least
  // [docs:end]
  EXPECT_LT(check.max_relative_error, 1e-6);
  ASSERT_EQ(check.symbolic.size(), 6u);
  // The symbolic side against a hand-written float64 gradient: d/dW[c][k] = sum_i x[i][c] sigmoid(z[i][k]).
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 2; ++k) {
      double expect = 0;
      for (int i = 0; i < 2; ++i) {
        double z = 0;
        for (int j = 0; j < 3; ++j) z += double(data(i, j)) * double(w(j, k));
        expect += double(data(i, c)) / (1 + std::exp(-z));
      }
      EXPECT_NEAR(check.symbolic[c * 2 + k], expect, 1e-9);
    }
}

TEST(DocsGradients, ValueAndGrad) {
  // [docs:gradients-value]
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W = variable<"W", float, shape<4, 3>>();
  auto loss = mean(softmax_cross_entropy(matmul(x, W), y));
  auto [L, dW] = value_and_grad(loss, W);
  params p;
  p.set("W", tensor<float, shape<4, 3>>{});  // zeros: every class equally likely
  tensor<float, shape<dyn, 4>> batch(extents_t<2>{2, 4}, 1.0f);
  tensor<std::int32_t, shape<dyn>> labels{0, 2};
  auto [loss_value, gW] = eval(L, dW, x = batch, y = labels, p);  // loss_value = log 3
  // [docs:end]
  EXPECT_NEAR(loss_value(), std::log(3.0), 1e-6);
  // d loss / dW[c][k] = mean over rows of x[c] (1/3 - [label == k]); x is all ones.
  for (int c = 0; c < 4; ++c) {
    EXPECT_NEAR(gW(c, 0), (1.0 / 3 - 0.5), 1e-6);
    EXPECT_NEAR(gW(c, 1), 1.0 / 3, 1e-6);
    EXPECT_NEAR(gW(c, 2), (1.0 / 3 - 0.5), 1e-6);
  }
}

}  // namespace
