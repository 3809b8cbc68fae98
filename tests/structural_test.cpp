// Structural ops checked against float64 references computed here, on random inputs (fixed seeds):
// matmul (2-D, batched, 3-D x 2-D; followed by bias + relu), transpose / permute (also as operands
// of elementwise ops, reductions and matmul), reshape, flatten, slice, concat, one_hot, and
// softmax / log_softmax / logsumexp including logits large enough to overflow a naive exp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <symflow/symflow.hpp>

#include "random_tensor_support.hpp"

namespace sf = symflow;
using sf::axes;
using sf::dyn;
using sf::shape;

namespace {

template <class T, std::size_t R>
using dyn_tensor = sf::tensor<T, sf::dyn_shape<R>>;
using e1 = sf::extents_t<1>;
using e2 = sf::extents_t<2>;
using e3 = sf::extents_t<3>;

std::mt19937 rng(unsigned salt) { return std::mt19937(0x5eed2000u + salt); }

using test_random::random_tensor;

// Unit roundoff of T: a correctly rounded operation is within u * |result|.
template <class T>
constexpr double unit_roundoff = std::is_same_v<T, float> ? 0x1p-24 : 0x1p-53;

// Elementwise |got - want| <= allowed (scalar or per element; NaN matches NaN).
template <class T, class S>
::testing::AssertionResult all_within(const sf::tensor<T, S>& got, const std::vector<double>& want,
                                      const std::vector<double>& allowed) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  std::size_t bad = 0;
  std::ostringstream first;
  first.precision(17);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = want[i];
    const bool ok = g == w || std::fabs(g - w) <= allowed[i] || (std::isnan(g) && std::isnan(w));
    if (!ok && bad++ < 5)
      first << "\n  [" << i << "] got " << g << " want " << w << " (|err| " << std::fabs(g - w) << ", allowed "
            << allowed[i] << ")";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.size() << " elements differ:" << first.str();
}
template <class T, class S>
::testing::AssertionResult all_within(const sf::tensor<T, S>& got, const std::vector<double>& want, double atol = 0) {
  return all_within(got, want, std::vector<double>(want.size(), atol));
}

template <class T, class S>
std::vector<std::size_t> extents_of(const sf::tensor<T, S>& t) {
  return std::vector<std::size_t>(t.extents().begin(), t.extents().end());
}

// Message of the symflow::shape_error thrown by run(), or a marker when there is none.
template <class F>
std::string shape_error_of(F&& run) {
  try {
    run();
  } catch (const sf::shape_error& e) {
    return e.what();
  } catch (...) {
    return "<another exception type>";
  }
  return "<no exception>";
}

// ----- matmul reference: C[p] = A[p] B[p or 0], with the rounding bound of any summation order:
// |fl(sum_k a_k b_k) - sum_k a_k b_k| <= K u sum_k |a_k b_k| (+ higher-order terms; 2x covers them
// and an FMA-less product rounding).
struct matmul_reference {
  std::vector<double> c, allowed;
};
template <class T>
matmul_reference matmul_ref(const T* a, const T* b, std::size_t batches, std::size_t m, std::size_t k, std::size_t n,
                            bool b_batched) {
  matmul_reference r;
  r.c.assign(batches * m * n, 0.0);
  r.allowed.assign(batches * m * n, 0.0);
  for (std::size_t p = 0; p < batches; ++p)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double s = 0, abs_s = 0;
        for (std::size_t q = 0; q < k; ++q) {
          const double t = double(a[(p * m + i) * k + q]) * double(b[((b_batched ? p : 0) * k + q) * n + j]);
          s += t;
          abs_s += std::fabs(t);
        }
        r.c[(p * m + i) * n + j] = s;
        r.allowed[(p * m + i) * n + j] = 2 * double(k + 1) * unit_roundoff<T> * abs_s;
      }
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// matmul

namespace {
// matmul of dtype-T operands of ranks RA x RB, for each pair of runtime extents.
template <class T, std::size_t RA, std::size_t RB>
void check_matmul(std::initializer_list<std::pair<sf::extents_t<RA>, sf::extents_t<RB>>> cases) {
  const auto a = sf::placeholder<"a", T, sf::dyn_shape<RA>>();
  const auto b = sf::placeholder<"b", T, sf::dyn_shape<RB>>();
  const auto e = sf::matmul(a, b);
  static_assert(sf::rank_of<decltype(e)> == RA);
  for (const auto& [ea, eb] : cases) {
    auto g = rng(unsigned(sf::element_count<RA>(ea) * 3 + sf::element_count<RB>(eb)));
    const auto av = random_tensor<T, RA>(ea, -1, 1, g);
    const auto bv = random_tensor<T, RB>(eb, -1, 1, g);
    const auto out = sf::eval(e, a = av, b = bv);
    const std::size_t batches = RA == 3 ? ea[0] : 1, m = ea[RA - 2], k = ea[RA - 1], n = eb[RB - 1];
    const auto ref = matmul_ref(av.data(), bv.data(), batches, m, k, n, RB == 3);
    std::vector<std::size_t> want_ext = {m, n};
    if (RA == 3) want_ext.insert(want_ext.begin(), batches);
    const std::string what = sf::format_extents(ea) + " x " + sf::format_extents(eb);
    EXPECT_EQ(extents_of(out), want_ext) << what;
    EXPECT_TRUE(all_within(out, ref.c, ref.allowed)) << what;
  }
}
}  // namespace

TEST(Matmul, TwoD) {
  // Odd sizes (not multiples of any GEMM block), degenerate ones, and K = 0 (a sum of nothing: 0).
  check_matmul<float, 2, 2>({{e2{37, 53}, e2{53, 29}},
                             {e2{1, 1}, e2{1, 1}},
                             {e2{1, 300}, e2{300, 1}},
                             {e2{64, 64}, e2{64, 64}},
                             {e2{129, 17}, e2{17, 131}},
                             {e2{3, 0}, e2{0, 4}},
                             {e2{0, 5}, e2{5, 2}}});
  check_matmul<double, 2, 2>({{e2{37, 53}, e2{53, 29}}, {e2{200, 3}, e2{3, 7}}});
}

TEST(Matmul, Batched) {
  check_matmul<float, 3, 3>({{e3{4, 7, 13}, e3{4, 13, 5}}, {e3{1, 1, 1}, e3{1, 1, 1}}, {e3{3, 33, 65}, e3{3, 65, 17}}});
}

TEST(Matmul, ThreeDByTwoD) {
  check_matmul<float, 3, 2>({{e3{5, 7, 13}, e2{13, 9}}, {e3{2, 1, 100}, e2{100, 3}}, {e3{3, 40, 1}, e2{1, 41}}});
}

TEST(Matmul, StaticShapes) {
  const auto x = sf::placeholder<"x", float, shape<dyn, 784>>();
  const auto w = sf::variable<"W", float, shape<784, 10>>();
  static_assert(std::is_same_v<sf::shape_of<decltype(sf::matmul(x, w))>, shape<dyn, 10>>);
  const auto xb = sf::placeholder<"xb", float, shape<dyn, 5, 784>>();
  static_assert(std::is_same_v<sf::shape_of<decltype(sf::matmul(xb, w))>, shape<dyn, 5, 10>>);
}

TEST(Matmul, MismatchThrowsShapeError) {
  // (The expression types of TwoD and Batched: no new instantiations.)
  const auto a = sf::placeholder<"a", float, sf::dyn_shape<2>>();
  const auto b = sf::placeholder<"b", float, sf::dyn_shape<2>>();
  const std::string inner =
      shape_error_of([&] { (void)sf::eval(sf::matmul(a, b), a = dyn_tensor<float, 2>({3, 4}), b = dyn_tensor<float, 2>({5, 2})); });
  EXPECT_NE(inner.find("matmul"), std::string::npos) << inner;
  EXPECT_NE(inner.find("[3,4]"), std::string::npos) << inner;
  EXPECT_NE(inner.find("[5,2]"), std::string::npos) << inner;
  const auto a3 = sf::placeholder<"a", float, sf::dyn_shape<3>>();
  const auto b3 = sf::placeholder<"b", float, sf::dyn_shape<3>>();
  const std::string batch = shape_error_of(
      [&] { (void)sf::eval(sf::matmul(a3, b3), a3 = dyn_tensor<float, 3>({2, 3, 4}), b3 = dyn_tensor<float, 3>({3, 4, 5})); });
  EXPECT_NE(batch.find("[2,3,4]"), std::string::npos) << batch;
  EXPECT_NE(batch.find("[3,4,5]"), std::string::npos) << batch;
}

TEST(Matmul, BiasAndReluFuseAfterProduct) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  const auto w = sf::variable<"W", float, shape<dyn, dyn>>();
  const auto bias = sf::variable<"b", float, shape<dyn>>();
  const auto layer = sf::relu(sf::matmul(x, w) + bias);
  for (auto [m, k, n] : {std::tuple<std::size_t, std::size_t, std::size_t>{33, 70, 19}, {1, 5, 1}, {300, 64, 130}}) {
    auto g = rng(unsigned(m * k * n));
    const auto xv = random_tensor<float, 2>({m, k}, -1, 1, g);
    const auto wv = random_tensor<float, 2>({k, n}, -1, 1, g);
    const auto bv = random_tensor<float, 1>({n}, -1, 1, g);
    sf::params p;
    p.set("W", wv);
    p.set("b", bv);
    const auto out = sf::eval(layer, x = xv, p);
    ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{m, n}));
    auto ref = matmul_ref(xv.data(), wv.data(), 1, m, k, n, false);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double& c = ref.c[i * n + j];
        c = std::max(0.0, c + bv[j]);  // relu is 1-Lipschitz: the product's bound carries over
        ref.allowed[i * n + j] += unit_roundoff<float> * (std::fabs(c) + std::fabs(bv[j]));
      }
    EXPECT_TRUE(all_within(out, ref.c, ref.allowed)) << m << "x" << k << "x" << n;
  }
}

// ---------------------------------------------------------------------------------------------
// transpose / permute (views: no copy until something needs contiguous memory)

TEST(Transpose, MatrixAndBatched) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  auto g = rng(1);
  for (auto ext : {e2{3, 5}, e2{1, 7}, e2{64, 33}, e2{300, 301}}) {
    const auto xv = random_tensor<float, 2>(ext, -9, 9, g);
    const auto out = sf::eval(sf::transpose(x), x = xv);
    ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{ext[1], ext[0]}));
    std::vector<double> want;
    for (std::size_t j = 0; j < ext[1]; ++j)
      for (std::size_t i = 0; i < ext[0]; ++i) want.push_back(xv(i, j));
    EXPECT_TRUE(all_within(out, want)) << sf::format_extents(ext);
  }
  const auto y = sf::placeholder<"y", double, shape<dyn, dyn, dyn>>();
  const auto yv = random_tensor<double, 3>({4, 5, 6}, -9, 9, g);
  const auto out = sf::eval(sf::transpose(y), y = yv);  // swaps the last two axes
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{4, 6, 5}));
  std::vector<double> want;
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t j = 0; j < 6; ++j)
      for (std::size_t i = 0; i < 5; ++i) want.push_back(yv(b, i, j));
  EXPECT_TRUE(all_within(out, want));
}

TEST(Transpose, PermuteRank3) {
  // Result axis i is operand axis Perm[i]: permute<2,0,1> of [A,B,C] is [C,A,B], out(c,a,b) = x(a,b,c).
  const auto x = sf::placeholder<"x", std::int32_t, shape<dyn, 5, dyn>>();
  const auto p = sf::permute<2, 0, 1>(x);
  static_assert(std::is_same_v<sf::shape_of<decltype(p)>, shape<dyn, dyn, 5>>);
  auto g = rng(2);
  const auto xv = random_tensor<std::int32_t, 3>({3, 5, 7}, -1000, 1000, g);
  const auto out = sf::eval(p, x = xv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{7, 3, 5}));
  for (std::size_t c = 0; c < 7; ++c)
    for (std::size_t a = 0; a < 3; ++a)
      for (std::size_t b = 0; b < 5; ++b) ASSERT_EQ(out(c, a, b), xv(a, b, c)) << c << a << b;
}

TEST(Transpose, ViewsAsElementwiseOperands) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  auto g = rng(3);
  // transpose(a) + b: one strided (gather) and one contiguous operand; large enough for threads.
  for (auto ext : {e2{3, 5}, e2{17, 33}, e2{257, 300}}) {
    const auto av = random_tensor<float, 2>({ext[1], ext[0]}, -2, 2, g);
    const auto bv = random_tensor<float, 2>(ext, -2, 2, g);
    const auto out = sf::eval(sf::transpose(a) * 2.0f + b, a = av, b = bv);
    std::vector<double> want, allowed;
    for (std::size_t i = 0; i < ext[0]; ++i)
      for (std::size_t j = 0; j < ext[1]; ++j) {
        want.push_back(2.0 * av(j, i) + bv(i, j));
        allowed.push_back(unit_roundoff<float> * std::fabs(want.back()));
      }
    EXPECT_TRUE(all_within(out, want, allowed)) << sf::format_extents(ext);
  }
  // A permuted rank-3 view under exp, times a broadcast row: strided reads inside the packet loop.
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const auto r = sf::placeholder<"r", float, shape<dyn>>();
  const auto xv = random_tensor<float, 3>({19, 4, 6}, -2, 2, g);  // permute<1,2,0> -> [4,6,19]
  const auto rv = random_tensor<float, 1>({19}, -2, 2, g);
  const auto out = sf::eval(sf::exp(sf::permute<1, 2, 0>(x)) * r, x = xv, r = rv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{4, 6, 19}));
  std::vector<double> want, allowed;
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 6; ++j)
      for (std::size_t k = 0; k < 19; ++k) {
        want.push_back(std::exp(double(xv(k, i, j))) * rv[k]);
        allowed.push_back(4 * unit_roundoff<float> * std::fabs(want.back()));
      }
  EXPECT_TRUE(all_within(out, want, allowed));
  // Transpose of a computed value (materialised, then viewed), inside another elementwise op.
  const auto av = random_tensor<float, 2>({23, 41}, -2, 2, g);
  const auto t = sf::eval(sf::transpose(sf::exp(a)) + 1.0f, a = av);
  ASSERT_EQ(extents_of(t), (std::vector<std::size_t>{41, 23}));
  std::vector<double> twant, tallowed;
  for (std::size_t j = 0; j < 41; ++j)
    for (std::size_t i = 0; i < 23; ++i) {
      twant.push_back(std::exp(double(av(i, j))) + 1);
      tallowed.push_back(4 * unit_roundoff<float> * twant.back());
    }
  EXPECT_TRUE(all_within(t, twant, tallowed));
}

TEST(Transpose, ViewsAsMatmulOperands) {
  // matmul wants contiguous operands: transposed views are copied first, with the right layout.
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  auto g = rng(4);
  const auto av = random_tensor<float, 2>({31, 17}, -1, 1, g);  // a^T is [17,31]
  const auto bv = random_tensor<float, 2>({31, 23}, -1, 1, g);
  const auto cv = random_tensor<float, 2>({29, 23}, -1, 1, g);  // c^T is [23,29]
  // a^T b: [17,31] x [31,23]
  const auto at = sf::eval(sf::transpose(a), a = av);
  const auto atb = sf::eval(sf::matmul(sf::transpose(a), b), a = av, b = bv);
  const auto ref1 = matmul_ref(at.data(), bv.data(), 1, 17, 31, 23, false);
  EXPECT_TRUE(all_within(atb, ref1.c, ref1.allowed));
  // b c^T: [31,23] x [23,29]
  const auto ct = sf::eval(sf::transpose(b), b = cv);
  const auto bct = sf::eval(sf::matmul(a, sf::transpose(b)), a = bv, b = cv);
  const auto ref2 = matmul_ref(bv.data(), ct.data(), 1, 31, 23, 29, false);
  EXPECT_TRUE(all_within(bct, ref2.c, ref2.allowed));
  // (a^T b)^T = b^T a: the transposed product as a view.
  const auto btat = sf::eval(sf::transpose(sf::matmul(sf::transpose(a), b)), a = av, b = bv);
  ASSERT_EQ(extents_of(btat), (std::vector<std::size_t>{23, 17}));
  for (std::size_t i = 0; i < 23; ++i)
    for (std::size_t j = 0; j < 17; ++j) ASSERT_EQ(btat(i, j), atb(j, i));
}

// ---------------------------------------------------------------------------------------------
// reshape / flatten

TEST(Reshape, InfersOneDynExtent) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const auto r = sf::reshape<shape<dyn, 6>>(x);
  static_assert(std::is_same_v<sf::shape_of<decltype(r)>, shape<dyn, 6>>);
  auto g = rng(5);
  for (auto ext : {e3{4, 3, 2}, e3{1, 6, 1}, e3{0, 2, 3}, e3{700, 2, 3}}) {
    const auto xv = random_tensor<float, 3>(ext, -5, 5, g);
    const auto out = sf::eval(r, x = xv);
    ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{xv.size() / 6, 6})) << sf::format_extents(ext);
    EXPECT_TRUE(all_within(out, std::vector<double>(xv.begin(), xv.end())));  // same elements, same order
  }
  // dyn in the middle: [4,3,2] -> [2,?,3] = [2,4,3].
  const auto xv = random_tensor<float, 3>({4, 3, 2}, -5, 5, g);
  const auto mid = sf::eval(sf::reshape<shape<2, dyn, 3>>(x), x = xv);
  EXPECT_EQ(extents_of(mid), (std::vector<std::size_t>{2, 4, 3}));
  EXPECT_TRUE(all_within(mid, std::vector<double>(xv.begin(), xv.end())));
}

TEST(Reshape, MismatchThrowsShapeError) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn, dyn>>();
  // 24 elements cannot be [?, 5]; nor can 25 be [4,6] ... (the same types as above / below).
  const std::string inferred =
      shape_error_of([&] { (void)sf::eval(sf::reshape<shape<dyn, 6>>(x), x = dyn_tensor<float, 3>({5, 2, 1})); });
  EXPECT_NE(inferred.find("reshape"), std::string::npos) << inferred;
  EXPECT_NE(inferred.find("[5,2,1]"), std::string::npos) << inferred;
  const std::string fixed =
      shape_error_of([&] { (void)sf::eval(sf::reshape<shape<2, dyn, 3>>(x), x = dyn_tensor<float, 3>({5, 5, 1})); });
  EXPECT_NE(fixed.find("[5,5,1]"), std::string::npos) << fixed;
}

TEST(Reshape, OfTransposedViewUsesLogicalOrder) {
  // A transposed view is not contiguous: reshape must see its elements in the view's row-major order.
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  auto g = rng(6);
  const auto av = random_tensor<float, 2>({5, 8}, -5, 5, g);
  const auto out = sf::eval(sf::reshape<shape<dyn>>(sf::transpose(a)) * 1.0f, a = av);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{40}));
  std::vector<double> want;
  for (std::size_t j = 0; j < 8; ++j)
    for (std::size_t i = 0; i < 5; ++i) want.push_back(av(i, j));
  EXPECT_TRUE(all_within(out, want));
}

TEST(Flatten, KeepsAxisZero) {
  const auto x = sf::placeholder<"x", float, shape<dyn, 3, 4>>();
  const auto f = sf::flatten(x);
  static_assert(std::is_same_v<sf::shape_of<decltype(f)>, shape<dyn, 12>>);
  auto g = rng(7);
  const auto xv = random_tensor<float, 3>({5, 3, 4}, -5, 5, g);
  const auto out = sf::eval(f, x = xv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{5, 12}));
  EXPECT_TRUE(all_within(out, std::vector<double>(xv.begin(), xv.end())));
  // Flatten of a permuted view: [3,5,4] viewed as [5,3,4] (permute<1,0,2>), then [5,12].
  const auto y = sf::placeholder<"y", float, shape<3, dyn, 4>>();
  const auto yv = random_tensor<float, 3>({3, 5, 4}, -5, 5, g);
  const auto out2 = sf::eval(sf::flatten(sf::permute<1, 0, 2>(y)), y = yv);
  ASSERT_EQ(extents_of(out2), (std::vector<std::size_t>{5, 12}));
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) ASSERT_EQ(out2(i, j * 4 + k), yv(j, i, k)) << i << j << k;
}

// ---------------------------------------------------------------------------------------------
// slice

TEST(Slice, RowsOfAxisZero) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  auto g = rng(8);
  const auto xv = random_tensor<float, 2>({10, 37}, -5, 5, g);
  const auto s = sf::slice(x, 2, 7);
  static_assert(std::is_same_v<sf::shape_of<decltype(s)>, shape<dyn, dyn>>);
  const auto out = sf::eval(s, x = xv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{5, 37}));
  EXPECT_TRUE(all_within(out, std::vector<double>(xv.begin() + 2 * 37, xv.begin() + 7 * 37)));
  // Whole range and an empty range.
  EXPECT_EQ(extents_of(sf::eval(sf::slice(x, 0, 10), x = xv)), (std::vector<std::size_t>{10, 37}));
  EXPECT_EQ(extents_of(sf::eval(sf::slice(x, 4, 4), x = xv)), (std::vector<std::size_t>{0, 37}));
}

TEST(Slice, OfSliceInElementwiseAndOfTranspose) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  auto g = rng(9);
  const auto xv = random_tensor<float, 2>({50, 3}, -2, 2, g);
  // rows [3, 40) then [5, 12) of that: rows 8..14 of x, under exp.
  const auto out = sf::eval(sf::exp(sf::slice(sf::slice(x, 3, 40), 5, 12)) + 1.0f, x = xv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{7, 3}));
  std::vector<double> want, allowed;
  for (std::size_t i = 8; i < 15; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      want.push_back(std::exp(double(xv(i, j))) + 1);
      allowed.push_back(4 * unit_roundoff<float> * want.back());
    }
  EXPECT_TRUE(all_within(out, want, allowed));
  // Rows [1, 3) of the transpose are columns 1..2 of x.
  const auto cols = sf::eval(sf::slice(sf::transpose(x), 1, 3), x = xv);
  ASSERT_EQ(extents_of(cols), (std::vector<std::size_t>{2, 50}));
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 50; ++c) ASSERT_EQ(cols(r, c), xv(c, r + 1));
}

TEST(Slice, OutOfRangeThrowsShapeError) {
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  const auto xv = dyn_tensor<float, 2>({10, 3}, 1.0f);
  const std::string past_end = shape_error_of([&] { (void)sf::eval(sf::slice(x, 5, 11), x = xv); });
  EXPECT_NE(past_end.find("slice"), std::string::npos) << past_end;
  EXPECT_NE(past_end.find("[10,3]"), std::string::npos) << past_end;
  EXPECT_NE(shape_error_of([&] { (void)sf::eval(sf::slice(x, 6, 5), x = xv); }).find("slice"), std::string::npos);
  EXPECT_NE(shape_error_of([&] { (void)sf::eval(sf::slice(x, 11, 11), x = xv); }).find("slice"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// concat

namespace {
// Reference concat along `axis` of row-major rank-3 operands.
std::vector<double> concat_ref(std::size_t axis, const std::vector<const dyn_tensor<float, 3>*>& parts) {
  e3 out = parts[0]->extents();
  out[axis] = 0;
  for (auto* p : parts) out[axis] += p->extent(axis);
  std::vector<double> want;
  for (std::size_t i = 0; i < out[0]; ++i)
    for (std::size_t j = 0; j < out[1]; ++j)
      for (std::size_t k = 0; k < out[2]; ++k) {
        std::array<std::size_t, 3> idx{i, j, k};
        for (auto* p : parts) {
          if (idx[axis] < p->extent(axis)) {
            want.push_back((*p)(idx[0], idx[1], idx[2]));
            break;
          }
          idx[axis] -= p->extent(axis);
        }
      }
  return want;
}
}  // namespace

TEST(Concat, AlongEachAxis) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn, dyn>>();
  const auto c = sf::placeholder<"c", float, shape<dyn, dyn, dyn>>();
  auto g = rng(10);
  const auto av = random_tensor<float, 3>({2, 3, 4}, -5, 5, g);
  {
    const auto bv = random_tensor<float, 3>({5, 3, 4}, -5, 5, g);
    const auto out = sf::eval(sf::concat<0>(a, b), a = av, b = bv);
    EXPECT_EQ(extents_of(out), (std::vector<std::size_t>{7, 3, 4}));
    EXPECT_TRUE(all_within(out, concat_ref(0, {&av, &bv})));
    // An empty operand contributes nothing (same expression type).
    const auto empty = dyn_tensor<float, 3>({0, 3, 4});
    EXPECT_TRUE(all_within(sf::eval(sf::concat<0>(a, b), a = empty, b = bv), concat_ref(0, {&bv})));
  }
  {
    const auto bv = random_tensor<float, 3>({2, 1, 4}, -5, 5, g);
    const auto out = sf::eval(sf::concat<1>(a, b), a = av, b = bv);
    EXPECT_EQ(extents_of(out), (std::vector<std::size_t>{2, 4, 4}));
    EXPECT_TRUE(all_within(out, concat_ref(1, {&av, &bv})));
  }
  {
    const auto bv = random_tensor<float, 3>({2, 3, 7}, -5, 5, g);
    const auto cv = random_tensor<float, 3>({2, 3, 1}, -5, 5, g);
    const auto out = sf::eval(sf::concat<2>(a, b, c), a = av, b = bv, c = cv);
    EXPECT_EQ(extents_of(out), (std::vector<std::size_t>{2, 3, 12}));
    EXPECT_TRUE(all_within(out, concat_ref(2, {&av, &bv, &cv})));
  }
}

TEST(Concat, StaticShapeAndComputedOperands) {
  const auto a = sf::placeholder<"a", float, shape<2, 3, 4>>();
  const auto p = sf::placeholder<"p", float, shape<4, dyn, 2>>();
  // concat<1> of [2,3,4] and transpose-like permute of [4,?,2] -> [2,?,4]: static extent 3 + ? = ?.
  const auto e = sf::concat<1>(sf::exp(a) * 0.5f, sf::permute<2, 1, 0>(p));
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<2, dyn, 4>>);
  static_assert(std::is_same_v<sf::shape_of<decltype(sf::concat<0>(a, a))>, shape<4, 3, 4>>);
  auto g = rng(11);
  const auto av = random_tensor<float, 3>({2, 3, 4}, -2, 2, g);
  const auto pv = random_tensor<float, 3>({4, 5, 2}, -2, 2, g);
  const auto out = sf::eval(e, a = av, p = pv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{2, 8, 4}));
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 8; ++j)
      for (std::size_t k = 0; k < 4; ++k) {
        const double want = j < 3 ? std::exp(double(av(i, j, k))) * 0.5 : double(pv(k, j - 3, i));
        EXPECT_NEAR(out(i, j, k), want, 4 * unit_roundoff<float> * std::fabs(want)) << i << j << k;
      }
}

TEST(Concat, MismatchThrowsShapeError) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn, dyn>>();
  const std::string what = shape_error_of(
      [&] { (void)sf::eval(sf::concat<0>(a, b), a = dyn_tensor<float, 3>({2, 3, 4}), b = dyn_tensor<float, 3>({5, 2, 4})); });
  EXPECT_NE(what.find("concat"), std::string::npos) << what;
  EXPECT_NE(what.find("[2,3,4]"), std::string::npos) << what;
  EXPECT_NE(what.find("[5,2,4]"), std::string::npos) << what;
}

// ---------------------------------------------------------------------------------------------
// one_hot

TEST(OneHot, LabelsInAndOutOfRange) {
  const auto l = sf::placeholder<"l", std::int32_t, shape<dyn>>();
  const auto oh = sf::one_hot<7>(l);
  static_assert(std::is_same_v<sf::shape_of<decltype(oh)>, shape<dyn, 7>>);
  static_assert(std::is_same_v<sf::value_type_of<decltype(oh)>, float>);
  auto g = rng(12);
  // Labels in [-3, 9]: -3..-1 and 7..9 are out of range and give rows of zeros.
  const auto lv = random_tensor<std::int32_t, 1>({500}, -3, 9, g);
  const auto out = sf::eval(oh, l = lv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{500, 7}));
  std::vector<double> want(500 * 7, 0.0);
  std::size_t out_of_range = 0;
  for (std::size_t i = 0; i < 500; ++i) {
    if (lv[i] >= 0 && lv[i] < 7) want[i * 7 + std::size_t(lv[i])] = 1;
    else ++out_of_range;
  }
  ASSERT_GT(out_of_range, 0u);
  EXPECT_TRUE(all_within(out, want));
}

TEST(OneHot, Int64LabelsRank2ToDouble) {
  const auto l = sf::placeholder<"l", std::int64_t, shape<dyn, dyn>>();
  const auto oh = sf::one_hot<5, double>(l);
  static_assert(std::is_same_v<sf::shape_of<decltype(oh)>, shape<dyn, dyn, 5>>);
  auto g = rng(13);
  auto lv = random_tensor<std::int64_t, 2>({3, 4}, 0, 4, g);
  lv(0, 0) = -1;
  lv(2, 3) = 5;
  lv(1, 1) = std::int64_t(1) << 40;  // far out of range, not wrapped into range
  const auto out = sf::eval(oh * 2.0, l = lv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{3, 4, 5}));
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      for (std::size_t k = 0; k < 5; ++k) ASSERT_EQ(out(i, j, k), lv(i, j) == std::int64_t(k) ? 2.0 : 0.0) << i << j << k;
}

// ---------------------------------------------------------------------------------------------
// softmax / log_softmax / logsumexp

namespace {
// float64 references along the last axis of a [rows, cols] row-major array (stable: max-shifted),
// with per-element bounds for a dtype-T implementation:
// softmax: x - m costs <= u|x - m| (exp turns it into a relative error), exp a few u, the sum of
// positive terms <= cols u relative, the division u.
// log_softmax = (x - m) - log(s): u|x - m| + (cols + 4) u + 2u |log s| + u |result|.
// logsumexp = m + log(s): the same without the first term, relative to |m| + |log s|.
struct softmax_reference {
  std::vector<double> softmax, softmax_allowed, log_softmax, log_softmax_allowed, lse, lse_allowed;
};
template <class T>
softmax_reference softmax_ref(const T* x, std::size_t rows, std::size_t cols, std::size_t row_stride,
                              std::size_t col_stride) {
  const double u = unit_roundoff<T>;
  softmax_reference r;
  for (std::size_t i = 0; i < rows; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < cols; ++j) m = std::max(m, double(x[i * row_stride + j * col_stride]));
    double s = 0;
    for (std::size_t j = 0; j < cols; ++j) s += std::exp(double(x[i * row_stride + j * col_stride]) - m);
    const double log_s = std::log(s);
    for (std::size_t j = 0; j < cols; ++j) {
      const double shifted = double(x[i * row_stride + j * col_stride]) - m;
      const double p = std::exp(shifted) / s, lp = shifted - log_s;
      r.softmax.push_back(p);
      // (+ the smallest normal of T: probabilities below it underflow, to 0 or a denormal.)
      r.softmax_allowed.push_back((std::fabs(shifted) + double(cols) + 8) * u * p + double(std::numeric_limits<T>::min()));
      r.log_softmax.push_back(lp);
      r.log_softmax_allowed.push_back(u * (std::fabs(shifted) + double(cols) + 4 + 2 * std::fabs(log_s) + std::fabs(lp)));
    }
    r.lse.push_back(m + log_s);
    r.lse_allowed.push_back(u * (double(cols) + 4 + 2 * std::fabs(log_s) + std::fabs(m + log_s)));
  }
  return r;
}

template <class T>
void check_softmax_family(std::initializer_list<std::tuple<std::size_t, std::size_t, double, double>> cases) {
  const auto x = sf::placeholder<"x", T, shape<dyn, dyn>>();
  const auto sm = sf::softmax(x);
  const auto lsm = sf::log_softmax(x);
  const auto lse = sf::logsumexp(x);
  static_assert(std::is_same_v<sf::shape_of<decltype(lse)>, shape<dyn>>);
  for (const auto& [rows, cols, lo, hi] : cases) {
    auto g = rng(unsigned(rows * 131 + cols) + unsigned(hi));
    const auto xv = random_tensor<T, 2>({rows, cols}, lo, hi, g);
    const auto ref = softmax_ref(xv.data(), rows, cols, cols, 1);
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]";
    EXPECT_TRUE(all_within(sf::eval(sm, x = xv), ref.softmax, ref.softmax_allowed)) << "softmax " << what;
    EXPECT_TRUE(all_within(sf::eval(lsm, x = xv), ref.log_softmax, ref.log_softmax_allowed)) << "log_softmax " << what;
    EXPECT_TRUE(all_within(sf::eval(lse, x = xv), ref.lse, ref.lse_allowed)) << "logsumexp " << what;
  }
}
}  // namespace

TEST(Softmax, FloatMatchesFloat64Reference) {
  check_softmax_family<float>({{1, 1, -1, 1},
                               {7, 10, -5, 5},
                               {33, 37, -5, 5},
                               {3, 1000, -10, 10},
                               {300, 301, -3, 3},   // threaded
                               // logits that overflow exp in float and double: exp(1000) = inf
                               {9, 17, 995, 1005},
                               {9, 17, -1005, -995},
                               {4, 64, -1000, 1000}});
}

TEST(Softmax, DoubleMatchesFloat64Reference) {
  check_softmax_family<double>({{7, 10, -5, 5}, {5, 129, -1000, 1000}, {3, 17, 995, 1005}});
}

TEST(Softmax, LargeLogitsAreFiniteAndNormalised) {
  // One row of +-1000 logits: the naive exp(x) / sum(exp(x)) is inf/inf = NaN.
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  const dyn_tensor<float, 2> xv{{1000.0f, -1000.0f, 999.0f, 1000.0f}, {-1000.0f, -1001.0f, -999.0f, -1000.0f}};
  const auto p = sf::eval(sf::softmax(x), x = xv);
  const auto row_sums = sf::eval(sf::sum(sf::softmax(x), axes<-1>), x = xv);
  for (float v : p) EXPECT_TRUE(std::isfinite(v));
  for (float s : row_sums) EXPECT_NEAR(s, 1.0f, 4e-7f);
  EXPECT_EQ(p(0, 1), 0.0f);  // exp(-2000) underflows to exactly 0
  const double e1 = std::exp(-1.0);
  EXPECT_NEAR(p(0, 0), 1 / (2 + e1), 4e-7);
  EXPECT_NEAR(p(0, 2), e1 / (2 + e1), 4e-7);
  const auto lse = sf::eval(sf::logsumexp(x), x = xv);
  EXPECT_NEAR(lse[0], 1000 + std::log(2 + e1), 1e-4);  // ulp(1000) in float is 6e-5
  EXPECT_NEAR(lse[1], -999 + std::log(1 + 2 * e1 + std::exp(-2.0)), 1e-4);
}

TEST(Softmax, OtherAxesAndRank3) {
  auto g = rng(14);
  // axes<0> of a [rows, cols] input: the reference runs down the columns (stride cols).
  const auto x = sf::placeholder<"x", float, shape<dyn, dyn>>();
  const auto xv = random_tensor<float, 2>({41, 6}, -8, 8, g);
  const auto ref = softmax_ref(xv.data(), 6, 41, 1, 6);  // "rows" are columns of x
  const auto out = sf::eval(sf::softmax(x, axes<0>), x = xv);
  ASSERT_EQ(extents_of(out), (std::vector<std::size_t>{41, 6}));
  std::vector<double> got_t;  // out transposed to the reference's order
  for (std::size_t c = 0; c < 6; ++c)
    for (std::size_t r = 0; r < 41; ++r) got_t.push_back(out(r, c));
  dyn_tensor<double, 1> got_t_tensor({got_t.size()}, 0.0);
  std::copy(got_t.begin(), got_t.end(), got_t_tensor.begin());
  EXPECT_TRUE(all_within(got_t_tensor, ref.softmax, ref.softmax_allowed));
  // Last axis of a rank-3 input equals the rank-2 computation on its rows.
  const auto y = sf::placeholder<"y", float, shape<dyn, dyn, dyn>>();
  const auto yv = random_tensor<float, 3>({3, 5, 19}, 990, 1010, g);
  const auto ref3 = softmax_ref(yv.data(), 15, 19, 19, 1);
  EXPECT_TRUE(all_within(sf::eval(sf::log_softmax(y), y = yv), ref3.log_softmax, ref3.log_softmax_allowed));
}

TEST(Softmax, CrossEntropyWithOneHot) {
  // -sum(one_hot(labels) * log_softmax(logits), axes<1>): the usual classification loss.
  const auto logits = sf::placeholder<"z", float, shape<dyn, 10>>();
  const auto labels = sf::placeholder<"l", std::int32_t, shape<dyn>>();
  const auto loss = sf::mean(-sf::sum(sf::one_hot<10>(labels) * sf::log_softmax(logits), axes<1>));
  auto g = rng(15);
  const auto zv = random_tensor<float, 2>({64, 10}, -4, 4, g);
  const auto lv = random_tensor<std::int32_t, 1>({64}, 0, 9, g);
  const auto out = sf::eval(loss, logits = zv, labels = lv);
  const auto ref = softmax_ref(zv.data(), 64, 10, 10, 1);
  double want = 0;
  for (std::size_t i = 0; i < 64; ++i) want -= ref.log_softmax[i * 10 + std::size_t(lv[i])];
  want /= 64;
  EXPECT_NEAR(out[0], want, 1e-5 * std::fabs(want));
}

