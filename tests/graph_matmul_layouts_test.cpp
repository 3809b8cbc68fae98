// The matrix product on operands stored row- or column-major (core/gemm.hpp): gemm against a
// float64 reference for every layout pair, padded lines, alpha and beta, NaN/Inf and -0, extents of
// 1 and 0; matrix_layout's choices; and matmul over transposed views and slices, compiled and in
// the interpreter (both read them where they lie, unless another reader needs a contiguous copy)
// bit for bit.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <symflow/core/gemm.hpp>
#include <symflow/symflow.hpp>

#include "graph_interpreter_support.hpp"  // opens an anonymous namespace, closed at the end

// A rows x columns matrix in a buffer with `pad` unused elements after each line, row- or
// column-major, filled from `values` (row-major, rows * columns).
template <class T>
struct stored_matrix {
  std::vector<T> buffer;
  strided_matrix<T> m;
  stored_matrix(const std::vector<double>& values, std::size_t rows, std::size_t columns, bool row_major, std::size_t pad) {
    const std::size_t line = (row_major ? columns : rows) + pad;
    buffer.assign((row_major ? rows : columns) * line + 1, T(-7));  // -7: padding that must not be read
    const std::size_t rs = row_major ? line : 1, cs = row_major ? 1 : line;
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < columns; ++j) buffer[i * rs + j * cs] = T(values[i * columns + j]);
    EXPECT_TRUE(matrix_layout<T>(buffer.data(), rows, columns, rs, cs, m));
  }
  strided_matrix<const T> as_const() const {
    return {m.data, m.rows, m.columns, m.row_stride, m.column_stride};
  }
};

std::vector<double> random_values(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
void check_all_layouts(std::size_t m, std::size_t k, std::size_t n, double alpha, double beta, std::mt19937& rng,
                       std::vector<double> a = {}, std::vector<double> b = {}) {
  if (a.empty()) a = random_values(rng, m * k);
  if (b.empty()) b = random_values(rng, k * n);
  const auto c0 = random_values(rng, m * n);
  for (bool a_rows : {true, false})
    for (bool b_rows : {true, false})
      for (std::size_t pad : {0, 3}) {
        const stored_matrix<T> sa(a, m, k, a_rows, pad), sb(b, k, n, b_rows, pad);
        // c: row-major with its own padding; beta == 0 must not read it, so it starts as NaN there.
        const std::size_t c_line = n + pad;
        std::vector<T> c(std::max<std::size_t>(m * c_line, 1), std::numeric_limits<T>::quiet_NaN());
        if (beta != 0)
          for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j) c[i * c_line + j] = T(c0[i * n + j]);
        strided_matrix<T> mc{c.data(), std::ptrdiff_t(m), std::ptrdiff_t(n), std::ptrdiff_t(c_line), 1};
        gemm<T>(mc, sa.as_const(), sb.as_const(), T(alpha), T(beta));
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            double want = 0;
            for (std::size_t p = 0; p < k; ++p) want += double(T(a[i * k + p])) * double(T(b[p * n + j]));
            want = alpha * want + (beta != 0 ? beta * double(T(c0[i * n + j])) : 0.0);
            const double got = double(c[i * c_line + j]);
            const std::string where = "m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n) +
                                      " a " + (a_rows ? "row" : "col") + "-major, b " + (b_rows ? "row" : "col") +
                                      "-major, pad " + std::to_string(pad) + " at (" + std::to_string(i) + "," +
                                      std::to_string(j) + ")";
            if (std::isnan(want)) {
              EXPECT_TRUE(std::isnan(got)) << where;
            } else if (std::isinf(want)) {
              EXPECT_EQ(got, want) << where;
            } else {
              const double tolerance = (std::is_same_v<T, float> ? 1e-5 : 1e-13) * (double(k) + 2);
              EXPECT_NEAR(got, want, tolerance) << where;
            }
          }
        // The padding of c is untouched (NaN stays NaN, the value never written).
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = n; j < c_line; ++j) EXPECT_TRUE(std::isnan(c[i * c_line + j]));
      }
}

TEST(Gemm, EveryLayoutPairMatchesFloat64) {
  std::mt19937 rng(11);
  for (const auto& [m, k, n] : std::vector<std::array<std::size_t, 3>>{
           {1, 1, 1}, {3, 5, 2}, {1, 7, 9}, {9, 7, 1}, {17, 33, 9}, {40, 50, 30}, {65, 130, 70}}) {
    check_all_layouts<float>(m, k, n, 1.0, 0.0, rng);
    check_all_layouts<double>(m, k, n, 1.0, 0.0, rng);
  }
}

TEST(Gemm, AlphaAndBetaScaleAndAccumulate) {
  std::mt19937 rng(12);
  for (double beta : {1.0, 0.5}) {
    check_all_layouts<float>(33, 21, 17, -0.25, beta, rng);
    check_all_layouts<double>(48, 64, 40, 2.0, beta, rng);
  }
}

TEST(Gemm, NaNAndInfPropagateAndEmptyInnerExtentGivesZeros) {
  std::mt19937 rng(13);
  auto a = random_values(rng, 37 * 29);
  auto b = random_values(rng, 29 * 31);
  a[5 * 29 + 3] = std::numeric_limits<double>::quiet_NaN();  // row 5 of the result is NaN
  b[2 * 31 + 7] = std::numeric_limits<double>::infinity();   // column 7 is +-Inf (or NaN in row 5)
  check_all_layouts<float>(37, 29, 31, 1.0, 0.0, rng, a, b);
  check_all_layouts<double>(37, 29, 31, 1.0, 1.0, rng, a, b);
  // k = 0: c = beta c, and with beta 0 zeros (not the NaN c started with).
  check_all_layouts<float>(4, 0, 3, 1.0, 0.0, rng, std::vector<double>(), std::vector<double>());
}

TEST(Gemm, NegativeZeroProductsKeepTheirSign) {
  std::mt19937 rng(14);
  // One term: (-0) * 1 = -0, summed from -0 in Eigen's accumulators; 1 x 1 x 1 runs the
  // coefficient path and 40 x 1 x 40 the blocked one.
  for (std::size_t size : {1, 40}) {
    const std::vector<double> a(size, -0.0), b(size, 1.0);
    std::vector<float> c(size * size, 1.0f);
    const stored_matrix<float> sa(a, size, 1, true, 0), sb(b, 1, size, true, 0);
    gemm<float>({c.data(), std::ptrdiff_t(size), std::ptrdiff_t(size), std::ptrdiff_t(size), 1}, sa.as_const(),
                sb.as_const(), 1.0f, 0.0f);
    for (float v : c) EXPECT_EQ(v, 0.0f);  // +0 or -0: Eigen starts from zeroed accumulators
  }
}

TEST(Gemm, MatrixLayoutAcceptsOneUnitStrideAndRefusesTheRest) {
  float data[64] = {};
  strided_matrix<float> m;
  EXPECT_TRUE(matrix_layout(data, 4, 5, 5, 1, m));  // contiguous rows
  EXPECT_TRUE(m.row_major());
  EXPECT_TRUE(matrix_layout(data, 4, 5, 8, 1, m));  // rows of a wider matrix (a column slice)
  EXPECT_EQ(m.outer_stride(), 8);
  EXPECT_TRUE(matrix_layout(data, 4, 5, 1, 4, m));  // a transposed 5 x 4 matrix
  EXPECT_FALSE(m.row_major());
  EXPECT_EQ(m.outer_stride(), 4);
  EXPECT_TRUE(matrix_layout(data, 1, 5, 0, 1, m));  // one row: its row stride is free
  EXPECT_TRUE(matrix_layout(data, 5, 1, 1, 0, m));  // one column
  EXPECT_TRUE(matrix_layout(data, 5, 1, 3, 7, m));  // one column, every third element
  EXPECT_FALSE(matrix_layout(data, 4, 5, 0, 1, m));  // a broadcast row: lines overlap
  EXPECT_FALSE(matrix_layout(data, 4, 5, 1, 0, m));
  EXPECT_FALSE(matrix_layout(data, 4, 5, 10, 2, m));  // every other column: no unit stride
  EXPECT_FALSE(matrix_layout(data, 4, 5, 4, 1, m));   // rows overlapping
}

// A dense layer's input x [37, 13], output adjoint g [37, 11] and weight w [13, 11], with random
// values: `auto [x, g, w, rng, xv, gv, wv] = layer(seed);`.
struct layer {
  placeholder<"x", float, shape<dyn, 13>> x;
  placeholder<"g", float, shape<dyn, 11>> g;
  variable<"w", float, shape<13, 11>> w;
  std::mt19937 rng;
  tensor<float, shape<dyn, 13>> xv = random_tensor<float, shape<dyn, 13>>(rng, {37, 13}, -1, 1);
  tensor<float, shape<dyn, 11>> gv = random_tensor<float, shape<dyn, 11>>(rng, {37, 11}, -1, 1);
  tensor<float, shape<13, 11>> wv = random_tensor<float, shape<13, 11>>(rng, {13, 11}, -1, 1);
  explicit layer(unsigned seed) : rng(seed) {}
};

// matmul over views: compiled evaluation reads transposes and row slices where they lie (the
// interpreter too, see below; a slice with steps is copied). Same bits either way, and the float64
// reference.
TEST(MatmulLayouts, TransposedAndSlicedOperandsAreBitwiseEqualToTheInterpreter) {
  auto [x, g, w, rng, xv, gv, wv] = layer(15);
  gv.data()[4] = std::numeric_limits<float>::infinity();
  gv.data()[30] = -0.0f;
  const auto exprs = std::tuple{matmul(transpose(x), g),                  // [13, 11]: x^T g, a weight gradient
                                matmul(g, transpose(w)),                  // w read column-major
                                matmul(transpose(g), transpose(transpose(x))),
                                matmul(slice(x, fixed<1>{}, 2, 13), slice(w, fixed<0>{}, 0, 11)),  // padded rows
                                // every other column of x (no unit stride: copied) by every other
                                // row of w (rows 22 elements apart: read in place)
                                matmul(slice(x, fixed<1>{}, 0, 13, 2), slice(w, fixed<0>{}, 0, 13, 2))};
  const auto r = expect_bitwise(exprs, x = xv, g = gv, w = wv);
  // x^T g against float64.
  const auto& xtg = std::get<0>(r.compiled);
  for (std::size_t i = 0; i < 13; ++i)
    for (std::size_t j = 0; j < 11; ++j) {
      double want = 0;
      for (std::size_t p = 0; p < 37; ++p) want += double(xv.data()[p * 13 + i]) * double(gv.data()[p * 11 + j]);
      const double got = double(xtg.data()[i * 11 + j]);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << i << "," << j;
      else if (std::isinf(want)) EXPECT_EQ(got, want) << i << "," << j;
      else EXPECT_NEAR(got, want, 1e-4) << i << "," << j;
    }
}

TEST(MatmulLayouts, TransposedOperandsAreNotCopied) {
  const auto [x, g, w, rng, xv, gv, wv] = layer(17);
  cpu::counters().reset();
  (void)eval(matmul(transpose(x), g), x = xv, g = gv);
  EXPECT_EQ(cpu::counters().fused_passes, 0u);  // the product only: x^T read where x lies
  EXPECT_EQ(cpu::counters().kernels, 1u);
  cpu::counters().reset();
  (void)eval(matmul(transpose(slice(x, fixed<1>{}, 0, 13, 2)), g), x = xv, g = gv);
  EXPECT_EQ(cpu::counters().fused_passes, 1u);  // every other column: one copy, then the product
}

// The interpreter reads a transposed operand where it lies when only products read it; a view
// that an elementwise op or the graph's outputs also read is copied as before.
TEST(MatmulLayouts, TheInterpreterReadsTransposedOperandsInPlaceWhenOnlyProductsReadThem) {
  auto [x, g, w, rng, xv, gv, wv] = layer(18);
  gv.data()[7] = std::numeric_limits<float>::quiet_NaN();
  // x^T read by a product only: no copy; w^T read by two products: no copy either.
  const auto alone = expect_bitwise(std::tuple{matmul(transpose(x), g), matmul(g, transpose(w)),
                                               matmul(matmul(g, transpose(w)), w)},
                                    x = xv, g = gv, w = wv);
  // Materialised: the three products only (copying x^T and w^T first made it five).
  EXPECT_EQ(alone.stats.materialised_values, 3u);
  // x^T also read by exp and as an output: copied, every reader right.
  const auto shared = expect_bitwise(std::tuple{matmul(transpose(x), g), exp(transpose(x)), transpose(x)}, x = xv, g = gv);
  EXPECT_EQ(shared.stats.materialised_values, 3u);  // the product, exp's pass and the copy of x^T
  // x^T g against float64, NaN row included.
  const auto& got = shared.fused[0];
  for (std::size_t i = 0; i < 13; ++i)
    for (std::size_t j = 0; j < 11; ++j) {
      double want = 0;
      for (std::size_t p = 0; p < 37; ++p) want += double(xv.data()[p * 13 + i]) * double(gv.data()[p * 11 + j]);
      const double v = double(got.data<float>()[i * 11 + j]);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(v)) << i << "," << j;
      else EXPECT_NEAR(v, want, 1e-4) << i << "," << j;
    }
}

TEST(MatmulLayouts, GradientOfADenseLayerMatchesFiniteDifferencesThroughTransposedOperands) {
  std::mt19937 rng(16);
  const auto x = placeholder<"x", double, shape<dyn, 7>>();
  const auto w = variable<"w", double, shape<7, 5>>();
  const auto xv = random_tensor<double, shape<dyn, 7>>(rng, {9, 7}, -1, 1);
  auto wv = random_tensor<double, shape<7, 5>>(rng, {7, 5}, -1, 1);
  const auto loss = sum(square(tanh(matmul(x, w))));
  const auto dw = eval(grad(loss, w), x = xv, w = wv);  // x^T (upstream): x read column-major
  for (std::size_t k = 0; k < wv.size(); ++k) {
    const double h = 1e-6, saved = wv.data()[k];
    wv.data()[k] = saved + h;
    const double up = eval(loss, x = xv, w = wv)[0];
    wv.data()[k] = saved - h;
    const double down = eval(loss, x = xv, w = wv)[0];
    wv.data()[k] = saved;
    EXPECT_NEAR(dw.data()[k], (up - down) / (2 * h), 1e-7) << k;
  }
}

}  // namespace
