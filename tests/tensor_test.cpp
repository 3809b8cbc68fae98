// Tensors: construction, element access, value semantics, alignment, views, printing, Eigen
// interop and the params store.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>

#include <Eigen/Core>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

template <class X>
std::string str(const X& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// Restores the process-wide print options when a test ends, pass or fail.
struct print_options_guard {
  print_settings saved = print_options();
  ~print_options_guard() { print_options() = saved; }
};

bool aligned64(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

template <class T>
std::string what_of(T&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction

TEST(TensorConstruct, DefaultStaticShapeIsZeroFilled) {
  tensor<float, shape<2, 3>> t;
  EXPECT_EQ(t.extents(), (extents_t<2>{2, 3}));
  EXPECT_EQ(t.size(), 6u);
  ASSERT_NE(t.data(), nullptr);
  for (float x : t) EXPECT_EQ(x, 0.f);
  tensor<std::int64_t, shape<4>> i;
  for (auto x : i) EXPECT_EQ(x, 0);
}

TEST(TensorConstruct, DefaultDynShapeIsEmpty) {
  tensor<float, shape<dyn, 3>> t;
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_EQ(t.begin(), t.end());
}

TEST(TensorConstruct, FromExtentsIsZeroFilled) {
  tensor<double, shape<dyn, 3>> t(extents_t<2>{4, 3});
  EXPECT_EQ(t.extents(), (extents_t<2>{4, 3}));
  EXPECT_EQ(t.extent(0), 4u);
  EXPECT_EQ(t.extent(1), 3u);
  EXPECT_EQ(t.size(), 12u);
  for (double x : t) EXPECT_EQ(x, 0.0);
}

TEST(TensorConstruct, FromExtentsAndValue) {
  tensor<std::int32_t, shape<dyn, dyn>> t(extents_t<2>{2, 5}, 7);
  EXPECT_EQ(t.size(), 10u);
  for (auto x : t) EXPECT_EQ(x, 7);
  tensor<bool, shape<3>> b(extents_t<1>{3}, true);
  for (bool x : b) EXPECT_TRUE(x);
}

TEST(TensorConstruct, Uninitialized) {
  tensor<float, shape<dyn>> t(extents_t<1>{33}, uninitialized);
  EXPECT_EQ(t.size(), 33u);
  ASSERT_NE(t.data(), nullptr);
}

TEST(TensorConstruct, Rank0TakesAPlainValue) {
  tensor<float, shape<>> s(2.5f);
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0], 2.5f);
  EXPECT_EQ(s(), 2.5f);
}

TEST(TensorConstruct, NestedListRank1) {
  tensor<float, shape<dyn>> t{1.5f, -2.f, 3.25f, 4.f};
  EXPECT_EQ(t.extents(), (extents_t<1>{4}));
  EXPECT_EQ(t(0), 1.5f);
  EXPECT_EQ(t(1), -2.f);
  EXPECT_EQ(t(2), 3.25f);
  EXPECT_EQ(t(3), 4.f);
}

TEST(TensorConstruct, NestedListRank2IsRowMajor) {
  tensor<int, shape<2, 3>> t{{1, 2, 3}, {4, 5, 6}};
  EXPECT_EQ(t.extents(), (extents_t<2>{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data()[i], i + 1);
  EXPECT_EQ(t(1, 0), 4);
  EXPECT_EQ(t(0, 2), 3);
}

TEST(TensorConstruct, NestedListRank3) {
  tensor<double, shape<dyn, 2, dyn>> t{{{1, 2, 3}, {4, 5, 6}}, {{7, 8, 9}, {10, 11, 12}}};
  EXPECT_EQ(t.extents(), (extents_t<3>{2, 2, 3}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(t.data()[i], i + 1);
  EXPECT_EQ(t(1, 0, 2), 9.0);
  EXPECT_EQ(t(0, 1, 0), 4.0);
}

TEST(TensorConstruct, RaggedListsThrowShapeError) {
  using t2 = tensor<float, shape<dyn, dyn>>;
  using t3 = tensor<float, shape<dyn, dyn, dyn>>;
  EXPECT_THROW((t2{{1, 2}, {3}}), shape_error);
  EXPECT_THROW((t2{{1}, {2, 3}}), shape_error);
  EXPECT_THROW((t2{{1, 2}, {}}), shape_error);
  EXPECT_THROW((t3{{{1, 2}, {3, 4}}, {{5, 6}}}), shape_error);
  EXPECT_THROW((t3{{{1, 2}, {3, 4}}, {{5, 6}, {7}}}), shape_error);
  EXPECT_THROW((t3{{{1, 2}, {3}}, {{5, 6}, {7, 8}}}), shape_error);
  EXPECT_NE(what_of([] { t2{{1, 2}, {3}}; }).find("ragged"), std::string::npos);
}

TEST(TensorConstruct, StaticExtentMismatchThrowsShapeError) {
  using t23 = tensor<float, shape<2, 3>>;
  EXPECT_THROW((t23{{1, 2}, {3, 4}}), shape_error);
  EXPECT_THROW((t23{{1, 2, 3}}), shape_error);
  EXPECT_THROW(t23(extents_t<2>{3, 3}), shape_error);
  EXPECT_NO_THROW(t23(extents_t<2>{2, 3}, 1.f));
}

TEST(TensorConstruct, StaticExtentMismatchOnDynMixedShape) {
  using t = tensor<float, shape<dyn, 3>>;
  EXPECT_NO_THROW((t{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}));
  EXPECT_THROW((t{{1, 2, 3, 4}}), shape_error);
  EXPECT_THROW(t(extents_t<2>{5, 4}), shape_error);
  const std::string msg = what_of([] { t(extents_t<2>{5, 4}); });
  EXPECT_NE(msg.find("[5,4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[?,3]"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------
// Element access, value semantics, alignment

TEST(TensorAccess, IndexingMatchesRowMajorOffsets) {
  tensor<float, shape<3, 4, 5>> t;
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = float(i) * 0.5f + 1.f;
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t b = 0; b < 4; ++b)
      for (std::size_t c = 0; c < 5; ++c) EXPECT_EQ(t(a, b, c), float(a * 20 + b * 5 + c) * 0.5f + 1.f);
  t(2, 1, 3) = -7.f;
  EXPECT_EQ(t[2 * 20 + 1 * 5 + 3], -7.f);
  const auto& ct = t;
  EXPECT_EQ(ct(2, 1, 3), -7.f);
  EXPECT_EQ(ct[0], 1.f);
  EXPECT_EQ(t.strides(), (extents_t<3>{20, 5, 1}));
}

TEST(TensorAccess, FillAndIterate) {
  tensor<std::int64_t, shape<dyn>> t(extents_t<1>{10});
  t.fill(-3);
  std::int64_t sum = 0;
  for (auto x : t) sum += x;
  EXPECT_EQ(sum, -30);
}

TEST(TensorValueSemantics, CopyIsDeep) {
  tensor<float, shape<dyn, 2>> a{{1, 2}, {3, 4}};
  tensor<float, shape<dyn, 2>> b = a;
  EXPECT_NE(a.data(), b.data());
  EXPECT_EQ(b.extents(), a.extents());
  b(0, 0) = 99.f;
  EXPECT_EQ(a(0, 0), 1.f);
  EXPECT_EQ(b(1, 1), 4.f);
  tensor<float, shape<dyn, 2>> c;
  c = a;
  EXPECT_NE(c.data(), a.data());
  a(1, 1) = -1.f;
  EXPECT_EQ(c(1, 1), 4.f);
  EXPECT_TRUE(aligned64(b.data()));
  EXPECT_TRUE(aligned64(c.data()));
}

TEST(TensorValueSemantics, MoveTransfersTheBuffer) {
  tensor<double, shape<dyn>> a(extents_t<1>{1000}, 2.0);
  const double* p = a.data();
  tensor<double, shape<dyn>> b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b[999], 2.0);
  tensor<double, shape<dyn>> c(extents_t<1>{3}, 1.0);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 1000u);
  static_assert(std::is_nothrow_move_constructible_v<tensor<double, shape<dyn>>>);
}

TEST(TensorAlignment, StorageIs64ByteAligned) {
  for (std::size_t n : {1u, 3u, 7u, 17u, 64u, 1001u}) {
    tensor<float, shape<dyn>> f(extents_t<1>{n});
    tensor<double, shape<dyn>> d(extents_t<1>{n});
    tensor<bool, shape<dyn>> b(extents_t<1>{n});
    tensor<std::int32_t, shape<dyn, dyn>> i(extents_t<2>{n, 3});
    EXPECT_TRUE(aligned64(f.data())) << n;
    EXPECT_TRUE(aligned64(d.data())) << n;
    EXPECT_TRUE(aligned64(b.data())) << n;
    EXPECT_TRUE(aligned64(i.data())) << n;
  }
  tensor<float, shape<5>> s{1, 2, 3, 4, 5};
  EXPECT_TRUE(aligned64(s.data()));
  EXPECT_EQ(storage_alignment, 64u);
}

// ---------------------------------------------------------------------------------------------
// Views

TEST(TensorView, ViewOfTensorHasRowMajorStrides) {
  tensor<float, shape<2, 3, 4>> t;
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = float(i);
  auto v = t.view();
  EXPECT_EQ(v.data(), t.data());
  EXPECT_EQ(v.extents(), (extents_t<3>{2, 3, 4}));
  EXPECT_EQ(v.strides(), (extents_t<3>{12, 4, 1}));
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v(1, 2, 3), 23.f);
  v(0, 1, 1) = -5.f;  // views write through
  EXPECT_EQ(t(0, 1, 1), -5.f);
  tensor_view<const float, shape<2, 3, 4>> cv = v;  // mutable converts to const
  EXPECT_EQ(cv(0, 1, 1), -5.f);
}

TEST(TensorView, StridedViewReadsTheRightElements) {
  tensor<int, shape<2, 3>> t{{1, 2, 3}, {4, 5, 6}};
  // The transpose, as a view: extents [3,2], strides {1,3}.
  tensor_view<int, shape<dyn, dyn>> tr(t.data(), {3, 2}, {1, 3});
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.size(), 6u);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 2; ++j) EXPECT_EQ(tr(i, j), t(j, i));
  const auto copy = tensor<int, shape<dyn, dyn>>::copy_of(tr);
  EXPECT_EQ(copy.extents(), (extents_t<2>{3, 2}));
  const int expect[] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(copy[i], expect[i]);
  // Every other column of row 1 (a stride-2 window).
  tensor_view<const int, shape<2>> odd(t.data() + 3, {2}, {2});
  EXPECT_EQ(odd(0), 4);
  EXPECT_EQ(odd(1), 6);
}

TEST(TensorView, StaticShapeIsChecked) {
  float data[6] = {};
  EXPECT_THROW((tensor_view<float, shape<2, 2>>(data, {2, 3})), shape_error);
  EXPECT_NO_THROW((tensor_view<float, shape<dyn, 3>>(data, {2, 3})));
}

// ---------------------------------------------------------------------------------------------
// Printing (NumPy's str() layout)

TEST(TensorPrint, FloatVectorAlignsOnThePoint) {
  EXPECT_EQ(str(tensor<float, shape<3>>{1.5f, 2.f, 3.25f}), "[1.5  2.   3.25]");
  EXPECT_EQ(str(tensor<float, shape<3>>{1.f, 2.f, 3.f}), "[1. 2. 3.]");
  EXPECT_EQ(str(tensor<double, shape<2>>{0.1, 10.0}), "[ 0.1 10. ]");
  EXPECT_EQ(str(tensor<float, shape<2>>{1.f / 3.f, -2.f / 3.f}), "[ 0.3333 -0.6667]");
  EXPECT_EQ(str(tensor<double, shape<1>>{3.14159265358979}), "[3.1416]");
  EXPECT_EQ(str(tensor<float, shape<2>>{0.f, 0.f}), "[0. 0.]");
}

TEST(TensorPrint, FloatMatrix) {
  EXPECT_EQ(str(tensor<float, shape<2, 2>>{{1.f, -2.5f}, {3.125f, 4.f}}),
            "[[ 1.    -2.5  ]\n"
            " [ 3.125  4.   ]]");
  EXPECT_EQ(str(tensor<double, shape<2, 3>>{{1, 2, 3}, {4, 5, 6}}),
            "[[1. 2. 3.]\n"
            " [4. 5. 6.]]");
}

TEST(TensorPrint, Integers) {
  EXPECT_EQ(str(tensor<std::int32_t, shape<3>>{1, 20, 300}), "[  1  20 300]");
  EXPECT_EQ(str(tensor<std::int32_t, shape<2, 3>>{{1, -20, 3}, {400, 5, 6}}),
            "[[  1 -20   3]\n"
            " [400   5   6]]");
  EXPECT_EQ(str(tensor<std::int64_t, shape<2>>{-5000000000LL, 7}), "[-5000000000           7]");
}

TEST(TensorPrint, Rank3) {
  EXPECT_EQ(str(tensor<int, shape<2, 2, 2>>{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}),
            "[[[1 2]\n"
            "  [3 4]]\n"
            "\n"
            " [[5 6]\n"
            "  [7 8]]]");
}

TEST(TensorPrint, Booleans) {
  EXPECT_EQ(str(tensor<bool, shape<3>>{true, false, true}), "[ True False  True]");
  EXPECT_EQ(str(tensor<bool, shape<2, 2>>{{true, true}, {true, false}}),
            "[[ True  True]\n"
            " [ True False]]");
  EXPECT_EQ(str(tensor<bool, shape<2>>{true, true}), "[True True]");
}

TEST(TensorPrint, Scalars) {
  EXPECT_EQ(str(tensor<float, shape<>>(42.f)), "42.");
  EXPECT_EQ(str(tensor<int, shape<>>(-3)), "-3");
}

TEST(TensorPrint, EmptyTensor) {
  tensor<float, shape<dyn>> e(extents_t<1>{0});
  EXPECT_EQ(str(e), "[]");
}

TEST(TensorPrint, PrecisionOption) {
  print_options_guard guard;
  print_options().precision = 2;
  EXPECT_EQ(str(tensor<float, shape<2>>{3.14159f, 2.5f}), "[3.14 2.5 ]");
  EXPECT_EQ(str(tensor<double, shape<2>>{1.0 / 3.0, 2.0 / 3.0}), "[0.33 0.67]");
  print_options().precision = 6;
  EXPECT_EQ(str(tensor<double, shape<1>>{3.14159265358979}), "[3.141593]");
  print_options().precision = 0;
  EXPECT_EQ(str(tensor<double, shape<2>>{1.4, 2.6}), "[1. 3.]");
}

TEST(TensorPrint, NanAndInf) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(str(tensor<float, shape<3>>{nan, 1.5f, -inf}), "[ nan  1.5 -inf]");
  EXPECT_EQ(str(tensor<float, shape<2>>{inf, 2.f}), "[inf  2.]");
}

TEST(TensorPrint, ScientificForTinyAndHugeValues) {
  EXPECT_EQ(str(tensor<float, shape<2>>{1e-5f, 1.f}), "[1.e-05 1.e+00]");
  EXPECT_EQ(str(tensor<double, shape<2>>{1.5e-5, 2.0}), "[1.5e-05 2.0e+00]");
  EXPECT_EQ(str(tensor<double, shape<2>>{-1e-5, 2.0}), "[-1.e-05  2.e+00]");
  EXPECT_EQ(str(tensor<double, shape<2>>{1e9, 1.0}), "[1.e+09 1.e+00]");
  EXPECT_EQ(str(tensor<double, shape<1>>{1.23456789e10}), "[1.2346e+10]");
  EXPECT_EQ(str(tensor<double, shape<2>>{1e-100, 1.0}), "[1.e-100 1.e+000]");
  // A spread of more than 1000 between the largest and smallest magnitude also switches.
  EXPECT_EQ(str(tensor<double, shape<2>>{1.0, 2000.0}), "[1.e+00 2.e+03]");
  EXPECT_EQ(str(tensor<double, shape<2>>{1.0, 1000.0}), "[   1. 1000.]");
  // Zeros do not count as tiny.
  EXPECT_EQ(str(tensor<double, shape<2>>{0.0, 2.5}), "[0.  2.5]");
}

TEST(TensorPrint, EllipsisPastTheThreshold) {
  tensor<int, shape<dyn>> big(extents_t<1>{2000});
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = int(i);
  EXPECT_EQ(str(big), "[   0    1    2 ... 1997 1998 1999]");
  tensor<int, shape<dyn>> at_threshold(extents_t<1>{1000});  // not more than 1000: printed whole
  EXPECT_EQ(str(at_threshold).find("..."), std::string::npos);
}

TEST(TensorPrint, ThresholdAndEdgeItemsOptions) {
  print_options_guard guard;
  print_options().threshold = 5;
  print_options().edge_items = 2;
  tensor<int, shape<10>> v;
  for (int i = 0; i < 10; ++i) v[i] = i;
  EXPECT_EQ(str(v), "[0 1 ... 8 9]");
  tensor<int, shape<10, 10>> m;
  for (int i = 0; i < 100; ++i) m[i] = i;
  EXPECT_EQ(str(m),
            "[[ 0  1 ...  8  9]\n"
            " [10 11 ... 18 19]\n"
            " ...\n"
            " [80 81 ... 88 89]\n"
            " [90 91 ... 98 99]]");
  // Axes not longer than 2 * edge_items are kept whole.
  tensor<float, shape<4, 3>> small;
  for (int i = 0; i < 12; ++i) small[i] = float(i);
  EXPECT_EQ(str(small),
            "[[ 0.  1.  2.]\n"
            " [ 3.  4.  5.]\n"
            " [ 6.  7.  8.]\n"
            " [ 9. 10. 11.]]");
  print_options().edge_items = 1;
  tensor<double, shape<8>> f;
  for (int i = 0; i < 8; ++i) f[i] = 0.5 * i;
  EXPECT_EQ(str(f), "[0.  ... 3.5]");
}

TEST(TensorPrint, StridedViewPrintsLogicalOrder) {
  tensor<int, shape<2, 3>> t{{1, 2, 3}, {4, 5, 6}};
  tensor_view<int, shape<dyn, dyn>> tr(t.data(), {3, 2}, {1, 3});
  EXPECT_EQ(str(tr), "[[1 4]\n [2 5]\n [3 6]]");
}

// ---------------------------------------------------------------------------------------------
// Eigen interop

TEST(EigenInterop, AsEigenMapsWithoutCopy) {
  tensor<float, shape<2, 3>> t{{1, 2, 3}, {4, 5, 6}};
  auto m = as_eigen(t);
  EXPECT_EQ(m.data(), t.data());
  EXPECT_EQ(m.rows(), 2);
  EXPECT_EQ(m.cols(), 3);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(m(i, j), t(i, j));
  m(0, 1) = 42.f;  // Eigen -> tensor
  EXPECT_EQ(t(0, 1), 42.f);
  t(1, 2) = -8.f;  // tensor -> Eigen
  EXPECT_EQ(m(1, 2), -8.f);
  // Eigen arithmetic on the map writes into the tensor.
  m *= 2.f;
  EXPECT_EQ(t(1, 0), 8.f);
  const auto& ct = t;
  auto cm = as_eigen(ct);
  EXPECT_EQ(cm.data(), t.data());
  EXPECT_EQ(cm.sum(), 2.f * (1 + 42 + 3 + 4 + 5) - 16.f);
}

TEST(EigenInterop, AsEigenVector) {
  tensor<double, shape<dyn>> v{1.0, 2.0, 3.0};
  auto m = as_eigen(v);
  EXPECT_EQ(m.data(), v.data());
  EXPECT_EQ(m.size(), 3);
  m(2) = 10.0;
  EXPECT_EQ(v(2), 10.0);
  EXPECT_DOUBLE_EQ(m.dot(m), 1.0 + 4.0 + 100.0);
}

TEST(EigenInterop, ViewOfColumnMajorMatrix) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.f, 3.f);
  Eigen::MatrixXf m(3, 5);  // column-major
  for (int j = 0; j < 5; ++j)
    for (int i = 0; i < 3; ++i) m(i, j) = dist(rng) + 0.25f * float(i * 5 + j);
  auto v = view_of(m);
  EXPECT_EQ(v.data(), m.data());
  EXPECT_EQ(v.extents(), (extents_t<2>{3, 5}));
  EXPECT_EQ(v.strides(), (extents_t<2>{1, 3}));
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(v(i, j), m(Eigen::Index(i), Eigen::Index(j)));
  v(2, 4) = 123.f;  // writes through
  EXPECT_EQ(m(2, 4), 123.f);
  const Eigen::MatrixXf& cm = m;
  auto cv = view_of(cm);
  static_assert(std::is_const_v<std::remove_pointer_t<decltype(cv.data())>>);
  EXPECT_EQ(cv(1, 3), m(1, 3));
}

TEST(EigenInterop, ViewOfRowMajorMatrix) {
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> m(2, 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) m(i, j) = i * 10 + j + 0.5;
  auto v = view_of(m);
  EXPECT_EQ(v.strides(), (extents_t<2>{4, 1}));
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v(1, 3), 13.5);
}

TEST(EigenInterop, ColumnMajorViewFeedsAnExpression) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  Eigen::MatrixXf m(4, 6), n(4, 6);
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 4; ++i) {
      m(i, j) = dist(rng);
      n(i, j) = dist(rng);
    }
  auto a = placeholder<"a", float, shape<dyn, 6>>();
  auto b = placeholder<"b", float, shape<4, dyn>>();
  auto y = a * 2.f + b;
  const auto r = eval(y, a = view_of(m), b = view_of(n));
  ASSERT_EQ(r.extents(), (extents_t<2>{4, 6}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) EXPECT_EQ(r(i, j), m(i, j) * 2.f + n(i, j)) << i << "," << j;

  // Row sums of the column-major data (a reduction over its strided axis).
  const auto s = eval(sum(a, axes<1>), a = view_of(m));
  ASSERT_EQ(s.extents(), (extents_t<1>{4}));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(s(i), m.row(i).sum(), 1e-5f);

  // A matmul of the column-major view: the result matches Eigen's.
  auto w = placeholder<"w", float, shape<6, 3>>();
  tensor<float, shape<6, 3>> wt;
  for (auto& x : wt) x = dist(rng);
  const auto p = eval(matmul(a, w), a = view_of(m), w = wt);
  const Eigen::MatrixXf ref = m * as_eigen(wt);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(p(i, j), ref(i, j), 1e-5f);
}

// ---------------------------------------------------------------------------------------------
// params

TEST(Params, SetAndGet) {
  params p;
  EXPECT_EQ(p.size(), 0u);
  tensor<float, shape<2, 2>> w{{1, 2}, {3, 4}};
  p.set("W", w);
  p.set("b", tensor<double, shape<dyn>>{0.5, -0.5, 1.5});
  EXPECT_TRUE(p.contains("W"));
  EXPECT_TRUE(p.contains("b"));
  EXPECT_FALSE(p.contains("c"));
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ(p.names(), (std::vector<std::string>{"W", "b"}));

  auto v = p.view<float, shape<2, 2>>("W");
  EXPECT_EQ(v.extents(), (extents_t<2>{2, 2}));
  EXPECT_EQ(v(1, 0), 3.f);
  EXPECT_NE(v.data(), w.data());  // the store holds a copy
  w(1, 0) = 100.f;
  EXPECT_EQ(v(1, 0), 3.f);
  EXPECT_TRUE(aligned64(v.data()));

  auto bv = p.view<double, shape<dyn>>("b");  // dyn extents accept any
  EXPECT_EQ(bv.extent(0), 3u);
  EXPECT_EQ(bv(2), 1.5);
  const params& cp = p;
  auto cv = cp.view<double, shape<3>>("b");
  EXPECT_EQ(cv(0), 0.5);

  // Writes through a mutable view are stored; set replaces.
  v(0, 0) = -1.f;
  EXPECT_EQ((p.view<float, shape<2, 2>>("W")(0, 0)), -1.f);
  p.set("W", tensor<float, shape<3>>{7, 8, 9});
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ((p.view<float, shape<3>>("W")(2)), 9.f);
}

TEST(Params, WrongDtypeThrowsValueError) {
  params p;
  p.set("W", tensor<float, shape<2>>{1, 2});
  EXPECT_THROW((p.view<double, shape<2>>("W")), value_error);
  EXPECT_THROW((p.view<std::int32_t, shape<2>>("W")), value_error);
  const std::string msg = what_of([&] { p.view<double, shape<2>>("W"); });
  EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
}

TEST(Params, WrongShapeThrowsShapeError) {
  params p;
  p.set("W", tensor<float, shape<2, 3>>{{1, 2, 3}, {4, 5, 6}});
  EXPECT_THROW((p.view<float, shape<3, 2>>("W")), shape_error);
  EXPECT_THROW((p.view<float, shape<dyn, 2>>("W")), shape_error);
  EXPECT_THROW((p.view<float, shape<6>>("W")), shape_error);  // wrong rank
  EXPECT_NO_THROW((p.view<float, shape<dyn, 3>>("W")));
  const std::string msg = what_of([&] { p.view<float, shape<3, 2>>("W"); });
  EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3,2]"), std::string::npos) << msg;
}

TEST(Params, MissingNameThrowsValueError) {
  params p;
  p.set("W", tensor<float, shape<1>>{1});
  EXPECT_THROW((p.view<float, shape<1>>("V")), value_error);
  EXPECT_THROW(p.at("V"), value_error);
  const std::string msg = what_of([&] { p.at("missing_one"); });
  EXPECT_NE(msg.find("missing_one"), std::string::npos) << msg;
}
