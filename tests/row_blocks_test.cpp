// Row blocks (eval/cpu/row_blocks.hpp): passes whose inner reductions run per block of rows, and the
// quicker max/min row combine (ops/max.hpp), against float64 loops on operands large enough to be
// blocked (and odd extents, so blocks and packets end mid-way), with NaN, infinities and signed
// zeros; the same bits whatever the thread count; broadcasts along the rows; reductions that cross
// the rows (not blocked); a root reduction; and the work counted as one unblocked pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

constexpr std::size_t R = 263, C = 131;  // 34453 elements: above the blocking threshold
using matrix = tensor<float, shape<dyn, dyn>>;
const float inf = std::numeric_limits<float>::infinity();
const float nan = std::numeric_limits<float>::quiet_NaN();

matrix random_matrix(std::size_t rows, std::size_t cols, unsigned seed, float low = -6, float high = 6) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(low, high);
  matrix t({rows, cols}, 0.f);
  for (auto& v : t) v = d(rng);
  return t;
}
// Rows with special values: a NaN, +Inf, masked (-Inf) entries, a row of -Inf, zeros of both signs.
void plant_specials(matrix& t) {
  const std::size_t c = t.extents()[1];
  float* d = t.data();
  d[3 * c + 5] = nan;
  d[7 * c + c - 1] = inf;
  for (std::size_t j = c / 2; j < c; ++j) d[11 * c + j] = -inf;
  for (std::size_t j = 0; j < c; ++j) d[13 * c + j] = -inf;
  for (std::size_t j = 0; j < c; ++j) d[17 * c + j] = (j % 3 == 0) ? -0.f : -1.f;
  for (std::size_t j = 0; j < c; ++j) d[19 * c + j] = -0.f;
  d[19 * c + c - 2] = 0.f;
}

// Elementwise closeness: both NaN, equal infinities, or within `rel` of the float64 reference.
void expect_close(const float* got, const std::vector<double>& want, double rel, const char* what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = want[i], g = got[i];
    const bool ok = std::isnan(w) ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= rel * std::max(1.0, std::abs(w));
    if (!ok && ++bad <= 5) ADD_FAILURE() << what << " at " << i << ": got " << g << ", want " << w;
  }
  EXPECT_EQ(bad, 0u) << what;
}

std::vector<double> softmax_reference(const matrix& x, bool log) {
  const std::size_t rows = x.extents()[0], cols = x.extents()[1];
  std::vector<double> out(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * cols;
    double top = -INFINITY;
    bool has_nan = false;
    for (std::size_t c = 0; c < cols; ++c) {
      has_nan |= std::isnan(in[c]);
      top = std::max(top, double(in[c]));
    }
    double total = 0;
    for (std::size_t c = 0; c < cols; ++c) total += std::exp(double(in[c]) - top);
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = log ? double(in[c]) - top - std::log(total) : std::exp(double(in[c]) - top) / total;
      out[r * cols + c] = has_nan ? NAN : v;
    }
  }
  return out;
}

TEST(RowBlocks, SoftmaxAndLogSoftmaxMatchFloat64) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  matrix v = random_matrix(R, C, 1);
  plant_specials(v);
  const matrix y = eval(softmax(x), x = v), ly = eval(log_softmax(x), x = v);
  expect_close(y.data(), softmax_reference(v, false), 2e-6, "softmax");
  expect_close(ly.data(), softmax_reference(v, true), 2e-6, "log_softmax");
}

TEST(RowBlocks, LogsumexpAndLayerNormMatchFloat64) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  const auto g = placeholder<"g", float, shape<dyn>>();
  const auto b = placeholder<"b", float, shape<dyn>>();
  const matrix v = random_matrix(R, C, 2);
  tensor<float, shape<dyn>> gamma({C}, 0.f), beta({C}, 0.f);
  for (std::size_t c = 0; c < C; ++c) {
    gamma.data()[c] = 0.5f + float(c % 7) / 7;
    beta.data()[c] = float(c % 5) - 2;
  }
  const auto lse = eval(logsumexp(x), x = v);
  const matrix ln = eval(layer_norm(x, g, b, 1e-5), x = v, g = gamma, b = beta);
  std::vector<double> want_lse(R), want_ln(R * C);
  for (std::size_t r = 0; r < R; ++r) {
    const float* in = v.data() + r * C;
    double top = -INFINITY, total = 0, mean = 0, var = 0;
    for (std::size_t c = 0; c < C; ++c) top = std::max(top, double(in[c]));
    for (std::size_t c = 0; c < C; ++c) total += std::exp(in[c] - top);
    want_lse[r] = top + std::log(total);
    for (std::size_t c = 0; c < C; ++c) mean += in[c];
    mean /= C;
    for (std::size_t c = 0; c < C; ++c) var += (in[c] - mean) * (in[c] - mean);
    var /= C;
    for (std::size_t c = 0; c < C; ++c)
      want_ln[r * C + c] = (in[c] - mean) / std::sqrt(var + 1e-5) * gamma.data()[c] + beta.data()[c];
  }
  expect_close(lse.data(), want_lse, 1e-6, "logsumexp");
  expect_close(ln.data(), want_ln, 1e-5, "layer_norm");
}

// max and min of every row of v, as the exact IEEE combine gives them: a NaN anywhere gives NaN;
// +0 beats -0 for max, -0 for min.
void expect_extrema_of_rows(const matrix& v, const tensor<float, shape<dyn>>& top, const tensor<float, shape<dyn>>& bottom) {
  const std::size_t rows = v.extents()[0], cols = v.extents()[1];
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = v.data() + r * cols;
    float want_max = -inf, want_min = inf;
    bool has_nan = false;
    for (std::size_t c = 0; c < cols; ++c) {
      has_nan |= std::isnan(in[c]);
      if (in[c] > want_max || (in[c] == 0 && want_max == 0 && !std::signbit(in[c]))) want_max = in[c];
      if (in[c] < want_min || (in[c] == 0 && want_min == 0 && std::signbit(in[c]))) want_min = in[c];
    }
    if (has_nan) {
      EXPECT_TRUE(std::isnan(top.data()[r])) << "row " << r;
      EXPECT_TRUE(std::isnan(bottom.data()[r])) << "row " << r;
    } else {
      EXPECT_EQ(std::memcmp(&top.data()[r], &want_max, sizeof(float)), 0) << "max of row " << r << ": " << top.data()[r];
      EXPECT_EQ(std::memcmp(&bottom.data()[r], &want_min, sizeof(float)), 0) << "min of row " << r << ": " << bottom.data()[r];
    }
  }
}

// max and min over rows take the plain vector max first; NaN, signed zeros and -Inf rows must come
// out as the exact combine gives them (a NaN anywhere: NaN; +0 beats -0 for max, -0 for min).
TEST(RowBlocks, MaxAndMinRowsKeepNaNAndSignedZeros) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  matrix v = random_matrix(R, C, 3);
  plant_specials(v);
  // Rows for min: all +0 with one -0; all +Inf.
  for (std::size_t j = 0; j < C; ++j) v.data()[23 * C + j] = 0.f;
  v.data()[23 * C + 64] = -0.f;
  for (std::size_t j = 0; j < C; ++j) v.data()[29 * C + j] = inf;
  // +Inf and -Inf in one lane of a group of four packets (and sums that overflow to both): the
  // quick path's NaN test flags them, and the exact combine must still give the plain answer.
  v.data()[31 * C + 0] = inf;
  v.data()[31 * C + 16] = -inf;
  for (std::size_t k = 0; k < 4; ++k) v.data()[37 * C + 1 + 16 * k] = k < 2 ? 3e38f : -3e38f;
  v.data()[41 * C + C - 1] = nan;  // in the scalar tail (C = 131 is not a multiple of a packet)
  const auto top = eval(max(x, axes<-1>), x = v), bottom = eval(min(x, axes<-1>), x = v);
  expect_extrema_of_rows(v, top, bottom);
  // The planted rows, spelled out: -0 beside one +0 gives +0; -0 beside -1 gives -0.
  EXPECT_TRUE(top.data()[19] == 0 && !std::signbit(top.data()[19]));
  EXPECT_TRUE(top.data()[17] == 0 && std::signbit(top.data()[17]));
  EXPECT_TRUE(bottom.data()[23] == 0 && std::signbit(bottom.data()[23]));
  EXPECT_TRUE(std::isinf(bottom.data()[29]) && bottom.data()[29] > 0);
  EXPECT_EQ(top.data()[31], inf);
  EXPECT_EQ(bottom.data()[31], -inf);
  EXPECT_EQ(top.data()[37], 3e38f);
  EXPECT_EQ(bottom.data()[37], -3e38f);
  EXPECT_TRUE(std::isnan(top.data()[41]) && std::isnan(bottom.data()[41]));
}

// Rows shorter than a packet are combined element by element with a branch-free select, redone
// exactly where a NaN or a zero result appears: rows of 7 with NaN, zeros of both signs (alone and
// beside negatives), -Inf rows and +Inf beside -Inf.
TEST(RowBlocks, MaxAndMinOfNarrowRowsKeepNaNAndSignedZeros) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  constexpr std::size_t rows = 4099, cols = 7;
  matrix v = random_matrix(rows, cols, 5);
  std::mt19937 rng(6);
  const float specials[] = {nan, 0.f, -0.f, inf, -inf};
  for (std::size_t k = 0; k < rows; k += 3) v.data()[k * cols + rng() % cols] = specials[rng() % 5];
  for (std::size_t c = 0; c < cols; ++c) v.data()[10 * cols + c] = c % 2 ? -0.f : -1.f;  // max -0
  for (std::size_t c = 0; c < cols; ++c) v.data()[11 * cols + c] = c % 2 ? 0.f : 1.f;    // min +0
  for (std::size_t c = 0; c < cols; ++c) v.data()[12 * cols + c] = -inf;
  const auto top = eval(max(x, axes<-1>), x = v), bottom = eval(min(x, axes<-1>), x = v);
  expect_extrema_of_rows(v, top, bottom);
  EXPECT_TRUE(top.data()[10] == 0 && std::signbit(top.data()[10]));
  EXPECT_TRUE(bottom.data()[11] == 0 && !std::signbit(bottom.data()[11]));
  EXPECT_EQ(top.data()[12], -inf);
}

// Rank 3, blocked along the first axis, reducing the middle axis (not the innermost); a [1, T, C]
// operand broadcast along the blocked axis; and a reduction across the blocked axis, which is
// computed whole first.
TEST(RowBlocks, MiddleAxisReductionsBroadcastsAndCrossRowReductions) {
  constexpr std::size_t B = 61, T = 9, C = 67;
  using cube = tensor<float, shape<dyn, dyn, dyn>>;
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const auto w = placeholder<"w", float, shape<dyn, dyn, dyn>>();
  cube v({B, T, C}, 0.f), wv({1, T, C}, 0.f);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> d(-3, 3);
  std::uniform_real_distribution<float> positive(0.5f, 2.f);  // weights > 0: the sums stay away from 0
  for (auto& e : v) e = d(rng);
  for (auto& e : wv) e = positive(rng);
  // exp(x - max over T) * w / sum over T, plus the mean over B (crosses the blocked axis).
  const auto e = exp(x - max(x, axes<1>, keepdims)) * w;
  const auto out = eval(e / sum(e, axes<1>, keepdims) + mean(x, axes<0>, keepdims), x = v, w = wv);
  std::vector<double> want(B * T * C), column_mean(T * C, 0.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < T * C; ++i) column_mean[i] += v.data()[b * T * C + i] / double(B);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t c = 0; c < C; ++c) {
      double top = -INFINITY, total = 0;
      for (std::size_t t = 0; t < T; ++t) top = std::max(top, double(v.data()[(b * T + t) * C + c]));
      for (std::size_t t = 0; t < T; ++t)
        total += std::exp(v.data()[(b * T + t) * C + c] - top) * wv.data()[t * C + c];
      for (std::size_t t = 0; t < T; ++t)
        want[(b * T + t) * C + c] =
            std::exp(v.data()[(b * T + t) * C + c] - top) * wv.data()[t * C + c] / total + column_mean[t * C + c];
    }
  expect_close(out.data(), want, 2e-5, "rank 3");
}

// A root reduction over rows whose operand holds inner reductions: sum(softmax(x) * y) per row.
TEST(RowBlocks, RootReductionOfRowWork) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  const auto y = placeholder<"y", float, shape<dyn, dyn>>();
  const matrix v = random_matrix(R, C, 5), t = random_matrix(R, C, 6, 0, 1);
  const auto got = eval(sum(softmax(x) * y, axes<-1>), x = v, y = t);
  const auto p = softmax_reference(v, false);
  std::vector<double> want(R, 0.0);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) want[r] += p[r * C + c] * t.data()[r * C + c];
  expect_close(got.data(), want, 1e-5, "sum(softmax(x) * y)");
}

// Blocks are whole rows, one thread per block: the result does not depend on the thread count.
TEST(RowBlocks, SameBitsWhateverTheThreadCount) {
#if defined(_OPENMP)
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  const matrix v = random_matrix(1031, 257, 7);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const matrix one = eval(log_softmax(x) * 3.f + softmax(x), x = v);
  const auto lse_one = eval(logsumexp(x), x = v);
  omp_set_num_threads(3);
  const matrix three = eval(log_softmax(x) * 3.f + softmax(x), x = v);
  const auto lse_three = eval(logsumexp(x), x = v);
  omp_set_num_threads(saved);
  EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(lse_one.data(), lse_three.data(), lse_one.size() * sizeof(float)), 0);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

// The blocked pass counts as the single pass it replaces: each inner reduction once, one fused pass.
TEST(RowBlocks, CountsLikeOnePass) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  const matrix v = random_matrix(R, C, 8);
  cpu::counters().reset();
  const matrix y = eval(softmax(x), x = v);
  EXPECT_EQ(cpu::counters().reductions.load(), 2u);  // max and sum
  EXPECT_EQ(cpu::counters().fused_passes.load(), 1u);
  EXPECT_EQ(cpu::counters().row_blocked.load(), 1u);
  EXPECT_TRUE(std::isfinite(y.data()[0]));
}

// Which passes are blocked: reductions along the rows, also at the root and under broadcasts; not a
// pass without inner reductions, nor one too small to gain, nor a reduction across the rows.
TEST(RowBlocks, BlockedWhereTheRowsAreIndependent) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  const matrix v = random_matrix(R, C, 9), small = random_matrix(5, 7, 10);
  const auto blocked = [&](const auto& e, const matrix& value) {
    cpu::counters().reset();
    (void)eval(e, x = value);
    return cpu::counters().row_blocked.load();
  };
  EXPECT_EQ(blocked(log_softmax(x), v), 1u);
  EXPECT_EQ(blocked(logsumexp(x), v), 1u);
  EXPECT_EQ(blocked(sum(x - max(x, axes<-1>, keepdims), axes<-1>), v), 1u);
  EXPECT_EQ(blocked(exp(x) * 2.f, v), 0u);                         // nothing to gain
  EXPECT_EQ(blocked(softmax(x), small), 0u);                       // fits in cache anyway
  EXPECT_EQ(blocked(x - mean(x, axes<0>, keepdims), v), 0u);       // only a reduction across the rows
  EXPECT_EQ(blocked(softmax(x) - mean(x, axes<0>, keepdims), v), 1u);  // that one computed whole first
}

// A root reduction whose result rows are not its operand's rows (column sums: a bias gradient) is
// one pass: blocks of its result would read the operand two columns out of every C, strided.
TEST(RowBlocks, ColumnSumsAreOnePassAndMatchFloat64) {
  const auto x = placeholder<"x", float, shape<dyn, 28, 28, 32>>();
  tensor<float, shape<dyn, 28, 28, 32>> v(extents_t<4>{9, 28, 28, 32}, uninitialized);
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& e : v) e = d(rng);
  v.data()[5] = -0.0f;
  v.data()[6 * 32 + 7] = std::numeric_limits<float>::infinity();  // column 7 sums to +inf
  cpu::counters().reset();
  const auto sums = eval(sum(x, axes<0, 1, 2>), x = v);
  EXPECT_EQ(cpu::counters().row_blocked.load(), 0u);
  EXPECT_EQ(cpu::counters().reductions.load(), 1u);
  const auto c_sums = eval(sum(x * 1.0f, axes<0, 1, 2>), x = v);  // the same through a fused operand
  for (std::size_t c = 0; c < 32; ++c) {
    double want = 0;
    for (std::size_t k = c; k < v.size(); k += 32) want += double(v.data()[k]);
    if (std::isinf(want)) EXPECT_EQ(double(sums.data()[c]), want) << c;
    else EXPECT_NEAR(double(sums.data()[c]), want, 1e-3) << c;
    if (std::isinf(want)) EXPECT_EQ(double(c_sums.data()[c]), want) << c;
    else EXPECT_NEAR(double(c_sums.data()[c]), want, 1e-3) << c;
  }
}

}  // namespace
