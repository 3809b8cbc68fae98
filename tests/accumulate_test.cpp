// eval_accumulating (eval/cpu/accumulate.hpp): target += alpha * expression beside ordinary outputs
// in one evaluation, against float64 references computed from the values before any target
// changed: a matrix product added inside its GEMM, an elementwise value added from scratch, an
// operand that lies in a target (read from a copy), ordinary outputs that read a target, extents
// that do not fit, a kernel that cannot add into memory.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <symflow/eval/cpu/accumulate.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;

template <class S>
tensor<double, S> random_values(std::array<std::size_t, S::rank> e, unsigned seed) {
  tensor<double, S> t(e, uninitialized);
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, 1);
  for (auto& v : t) v = n(rng);
  return t;
}

constexpr std::size_t rows = 29, inner = 13, columns = 7;

TEST(EvalAccumulating, ProductsAndElementwiseValuesAddIntoTheirTargets) {
  const auto x = placeholder<"x", double, shape<dyn, inner>>();
  const auto g = placeholder<"g", double, shape<dyn, columns>>();
  const auto w = variable<"w", double, shape<inner, columns>>();
  const auto b = variable<"b", double, shape<columns>>();
  const auto xv = random_values<shape<dyn, inner>>({rows, inner}, 1);
  auto gv = random_values<shape<dyn, columns>>({rows, columns}, 2);
  gv.data()[3] = std::numeric_limits<double>::infinity();  // column 3 of x^T g: +-inf or NaN
  params store;
  store.set("w", random_values<shape<inner, columns>>({inner, columns}, 3));
  store.set("b", random_values<shape<columns>>({columns}, 4));
  const auto w0 = store.view<double, shape<inner, columns>>("w");
  const std::vector<double> w_before(w0.data(), w0.data() + w0.size());
  const auto b0 = store.view<double, shape<columns>>("b");
  const std::vector<double> b_before(b0.data(), b0.data() + b0.size());

  // An ordinary output reading w (evaluated before w changes), x^T g added into w in its GEMM, and
  // the column sums of g (a reduction: computed aside, then added) into b.
  tensor<double, shape<>> norm;
  eval_accumulating(std::tie(norm), std::tuple{sum(square(w))},
                    std::tuple{accumulated_output{store.view<double, shape<inner, columns>>("w"), -0.5,
                                                  matmul(transpose(x), g)},
                               accumulated_output{store.view<double, shape<columns>>("b"), 2.0, sum(g, axes<0>)}},
                    x = xv, g = gv, store);
  double want_norm = 0;
  for (double v : w_before) want_norm += v * v;
  EXPECT_NEAR(norm[0], want_norm, 1e-12);
  const auto w1 = store.view<double, shape<inner, columns>>("w");
  for (std::size_t i = 0; i < inner; ++i)
    for (std::size_t j = 0; j < columns; ++j) {
      double product = 0;
      for (std::size_t r = 0; r < rows; ++r) product += xv.data()[r * inner + i] * gv.data()[r * columns + j];
      const double want = w_before[i * columns + j] - 0.5 * product, got = w1.data()[i * columns + j];
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << i << "," << j;
      else if (std::isinf(want)) EXPECT_EQ(got, want) << i << "," << j;
      else EXPECT_NEAR(got, want, 1e-12) << i << "," << j;
    }
  const auto b1 = store.view<double, shape<columns>>("b");
  for (std::size_t j = 0; j < columns; ++j) {
    double s = 0;
    for (std::size_t r = 0; r < rows; ++r) s += gv.data()[r * columns + j];
    const double want = b_before[j] + 2.0 * s;
    if (std::isinf(want)) EXPECT_EQ(b1.data()[j], want);
    else EXPECT_NEAR(b1.data()[j], want, 1e-12) << j;
  }
}

TEST(EvalAccumulating, AnOperandLyingInATargetIsReadBeforeItChanges) {
  // a <- a + 0.25 * (b^T a) and b <- b - (a b^T)... with a and b both targets and operands: every
  // product must see the values from before the evaluation.
  constexpr std::size_t n = 9;
  const auto a = variable<"a", double, shape<n, n>>();
  const auto b = variable<"b", double, shape<n, n>>();
  params store;
  store.set("a", random_values<shape<n, n>>({n, n}, 5));
  store.set("b", random_values<shape<n, n>>({n, n}, 6));
  const auto av = store.view<double, shape<n, n>>("a");
  const auto bv = store.view<double, shape<n, n>>("b");
  const std::vector<double> a0(av.data(), av.data() + n * n), b0(bv.data(), bv.data() + n * n);
  eval_accumulating(std::tuple<>{}, std::tuple<>{},
                    std::tuple{accumulated_output{av, 0.25, matmul(transpose(b), a)},
                               accumulated_output{bv, -1.0, matmul(a, transpose(b))}},
                    store);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double bta = 0, abt = 0;
      for (std::size_t k = 0; k < n; ++k) {
        bta += b0[k * n + i] * a0[k * n + j];
        abt += a0[i * n + k] * b0[j * n + k];
      }
      EXPECT_NEAR(av.data()[i * n + j], a0[i * n + j] + 0.25 * bta, 1e-12) << i << "," << j;
      EXPECT_NEAR(bv.data()[i * n + j], b0[i * n + j] - abt, 1e-12) << i << "," << j;
    }
}

TEST(EvalAccumulating, AKernelThatDoesNotAccumulateIsComputedAsideAndAdded) {
  // A batched product: a kernel, but not one that adds into memory (rank 3).
  const auto a = placeholder<"a", double, shape<2, 3, 5>>();
  const auto b = placeholder<"b", double, shape<2, 5, 4>>();
  const auto av = random_values<shape<2, 3, 5>>({2, 3, 5}, 8);
  const auto bv = random_values<shape<2, 5, 4>>({2, 5, 4}, 9);
  tensor<double, shape<2, 3, 4>> target = random_values<shape<2, 3, 4>>({2, 3, 4}, 10);
  const std::vector<double> before(target.data(), target.data() + target.size());
  eval_accumulating(std::tuple<>{}, std::tuple<>{},
                    std::tuple{accumulated_output{tensor_view<double, shape<2, 3, 4>>(target.data(), target.extents()), 3.0,
                                                  matmul(a, b)}},
                    a = av, b = bv);
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 4; ++j) {
        double product = 0;
        for (std::size_t k = 0; k < 5; ++k) product += av.data()[(n * 3 + i) * 5 + k] * bv.data()[(n * 5 + k) * 4 + j];
        const std::size_t at = (n * 3 + i) * 4 + j;
        EXPECT_NEAR(target.data()[at], before[at] + 3.0 * product, 1e-12) << n << "," << i << "," << j;
      }
}

TEST(EvalAccumulating, ATargetOfOtherExtentsIsRefusedBeforeAnythingChanges) {
  const auto x = placeholder<"x", double, shape<dyn, inner>>();
  const auto g = placeholder<"g", double, shape<dyn, columns>>();
  params store;
  store.set("w", random_values<shape<inner, columns>>({inner, columns}, 3));
  store.set("v", random_values<shape<columns, inner>>({columns, inner}, 7));
  const auto w = store.view<double, shape<inner, columns>>("w");
  const auto v = store.view<double, shape<columns, inner>>("v");
  const std::vector<double> w0(w.data(), w.data() + w.size());
  const auto xv = random_values<shape<dyn, inner>>({rows, inner}, 1);
  const auto gv = random_values<shape<dyn, columns>>({rows, columns}, 2);
  try {
    eval_accumulating(std::tuple<>{}, std::tuple<>{},
                      std::tuple{accumulated_output{w, 1.0, matmul(transpose(x), g)},
                                 accumulated_output{v, 1.0, matmul(transpose(x), g)}},  // [13, 7] into [7, 13]
                      x = xv, g = gv);
    ADD_FAILURE() << "no shape_error";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("target of extents [7,13]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::vector<double>(w.data(), w.data() + w.size()), w0);  // the first target is untouched
}

}  // namespace
