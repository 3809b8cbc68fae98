// Fused elementwise chains (strided feeds, odd thread counts, eval_into) and broadcasting (static and
// dynamic extents, rank extension, rank 0, empty tensors, shape errors at run time and compile time),
// checked against a float64 reference computed here with <cmath> on random inputs.
//
// Compile time matters (every distinct expression type instantiates the fused evaluator), so the
// checks go through a few typed helpers that take the expression as a lambda and loop over sizes
// and data at run time.
#include "elementwise_support.hpp"

#include <tuple>

// ---------------------------------------------------------------------------------------------
// Fused chains on the SIMD path, strided feeds, threading.

TEST(ElementwiseFused, ChainOfOpsMatchesComposedReference) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  const auto c = sf::placeholder<"c", float, shape<dyn>>();
  const auto e = sf::sigmoid(a * b + c) + sf::exp(-sf::square(a)) / (1.0f + sf::abs(b));
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 17}, {129, 331}}) {
    auto g = rng(unsigned(rows * cols));
    const auto av = random_tensor<float, 2>({rows, cols}, -2, 2, g);
    const auto bv = random_tensor<float, 2>({rows, cols}, -2, 2, g);
    const auto cv = random_tensor<float, 1>({cols}, -2, 2, g);
    const auto out = sf::eval(e, a = av, b = bv, c = cv);
    ASSERT_EQ(out.extents(), (sf::extents_t<2>{rows, cols}));
    std::vector<double> want;
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        const double x = av[i * cols + j], y = bv[i * cols + j];
        want.push_back(sigmoid_ref(x * y + cv[j]) + std::exp(-x * x) / (1 + std::fabs(y)));
      }
    // Each of ~8 float roundings or kernels adds a few ulps; all terms are positive, so no
    // cancellation amplifies them: 1e-5 relative.
    EXPECT_TRUE(all_close(out, want, tolerance{1e-5, 0})) << rows << "x" << cols;
  }
}

TEST(ElementwiseFused, StridedFeedUsesGather) {
  // A view with stride 3 into a buffer: the packet path gathers.
  const auto x = sf::placeholder<"x", float, shape<dyn>>();
  const auto y = sf::placeholder<"y", float, shape<dyn>>();
  auto g = rng(6);
  const std::size_t n = 1037;
  const auto buffer = random_tensor<float, 1>({3 * n}, -3, 3, g);
  const auto yv = random_tensor<float, 1>({n}, -3, 3, g);
  const sf::tensor_view<const float, shape<dyn>> strided(buffer.data() + 1, {n}, {3});
  const auto out = sf::eval(sf::exp(x) * y, x = strided, y = yv);
  std::vector<double> want;
  for (std::size_t i = 0; i < n; ++i) want.push_back(std::exp(double(buffer[1 + 3 * i])) * yv[i]);
  EXPECT_TRUE(all_close(out, want, tolerance{4e-6, 0}));
}

TEST(ElementwiseFused, ThreadedPathWithOddThreadCount) {
#if defined(_OPENMP)
  // Three threads split 70001 elements into chunks on packet boundaries with a ragged tail.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  // (Expression types shared with FloatTensorTensor and IntegersAreExact.)
  check_binary<float>("a*b (3 threads)", [](auto a, auto b) { return a * b; }, [](double a, double b) { return a * b; }, -10, 10,
                      -10, 10);
  check_binary<std::int32_t>("a+b*a-b (3 threads)", [](auto a, auto b) { return a + b * a - b; },
                             [](double a, double b) { return a + b * a - b; }, -1000, 1000, -1000, 1000);
  omp_set_num_threads(saved);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

TEST(ElementwiseFused, EvalIntoReusesBuffer) {
  const auto x = sf::placeholder<"x", double, shape<dyn>>();
  auto g = rng(8);
  const auto in = random_tensor<double, 1>({1000}, 0.5, 2, g);
  dyn_tensor<double, 1> out({1000}, 0.0);
  const double* before = out.data();
  sf::eval_into(out, sf::log(x), x = in);
  EXPECT_EQ(out.data(), before);
  std::vector<double> want;
  for (double v : in) want.push_back(std::log(v));
  EXPECT_TRUE(all_close(out, want, zero_crossing_tolerance<double>(1)));
}

// Several outputs of one frame run as one pass; where every array has inner stride 1 the packets
// skip the per-leaf stride tests. A column operand (inner stride 0), a strided view (stride 2) and
// a rank-0 operand must each keep the pass on the tested reads, and a dense pass must stay right.
TEST(ElementwiseFused, SeveralOutputsInOnePassWithBroadcastAndStridedOperands) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  const auto s = sf::placeholder<"s", float, shape<>>();
  auto g = rng(9);
  const std::size_t rows = 37, cols = 133;
  const auto av = random_tensor<float, 2>({rows, cols}, -2, 2, g);
  const auto column = random_tensor<float, 2>({rows, 1}, -2, 2, g);
  const auto wide = random_tensor<float, 2>({rows, 2 * cols}, -2, 2, g);
  const sf::tensor_view<const float, shape<dyn, dyn>> strided(wide.data(), {rows, cols}, {2 * cols, 2});
  const auto sv = random_tensor<float, 0>({}, 0.5, 1.5, g);
  const auto first = a * b + s;
  const auto second = sf::exp(a - b) * s;
  sf::tensor<float, shape<dyn, dyn>> out1, out2;
  const auto check = [&](const char* what, const auto& bv, auto b_at) {
    sf::eval_into(std::tie(out1, out2), first, second, a = av, b = bv, s = sv);
    std::vector<double> want1, want2;
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        const double x = av[i * cols + j], y = b_at(i, j);
        want1.push_back(x * y + double(sv.data()[0]));
        want2.push_back(std::exp(x - y) * double(sv.data()[0]));
      }
    EXPECT_TRUE(all_close(out1, want1, tolerance{1e-6, 1e-6})) << what;
    EXPECT_TRUE(all_close(out2, want2, tolerance{4e-6, 1e-6})) << what;
  };
  const auto dense = random_tensor<float, 2>({rows, cols}, -2, 2, g);
  check("dense", dense, [&](std::size_t i, std::size_t j) { return double(dense[i * cols + j]); });
  check("strided", strided, [&](std::size_t i, std::size_t j) { return double(wide[i * 2 * cols + 2 * j]); });
  const sf::tensor_view<const float, shape<dyn, dyn>> broadcast(column.data(), {rows, cols}, {1, 0});
  check("column broadcast", broadcast, [&](std::size_t i, std::size_t) { return double(column[i]); });
}

// ---------------------------------------------------------------------------------------------
// Broadcasting.

namespace {
// Offset into a row-major operand of extents `in` (right-aligned, extent 1 broadcasts) for the
// out-element at row-major position `flat` of extents `out`.
template <std::size_t RO, std::size_t RI>
std::size_t broadcast_offset(std::size_t flat, const sf::extents_t<RO>& out, const sf::extents_t<RI>& in) {
  std::array<std::size_t, RO> idx{};
  for (std::size_t i = RO; i-- > 0;) {
    idx[i] = flat % out[i];
    flat /= out[i];
  }
  std::size_t off = 0, stride = 1;
  for (std::size_t j = RI; j-- > 0;) {
    off += (in[j] == 1 ? 0 : idx[j + RO - RI]) * stride;
    stride *= in[j];
  }
  return off;
}

template <std::size_t RO, class TA, class TB, class F>
std::vector<double> broadcast_ref(const sf::extents_t<RO>& out, const TA& a, const TB& b, F f) {
  std::vector<double> want(sf::element_count<RO>(out));
  for (std::size_t k = 0; k < want.size(); ++k)
    want[k] = f(double(a[broadcast_offset<RO>(k, out, a.extents())]), double(b[broadcast_offset<RO>(k, out, b.extents())]));
  return want;
}
}  // namespace

TEST(ElementwiseBroadcast, ColumnPlusRowStatic) {
  const auto a = sf::placeholder<"a", float, shape<3, 1>>();
  const auto b = sf::placeholder<"b", float, shape<1, 4>>();
  const auto e = a + b;
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<3, 4>>);
  auto g = rng(9);
  const auto av = random_tensor<float, 2>({3, 1}, -5, 5, g);
  const auto bv = random_tensor<float, 2>({1, 4}, -5, 5, g);
  const auto out = sf::eval(e, a = av, b = bv);
  ASSERT_EQ(out.extents(), (sf::extents_t<2>{3, 4}));
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(out(i, j), av[i] + bv[j]) << i << "," << j;
}

TEST(ElementwiseBroadcast, RankExtension) {
  // [2,1,4] * [3,1] -> [2,3,4]: lower rank on the right, size-1 dims on both sides.
  const auto a = sf::placeholder<"a", float, shape<2, 1, 4>>();
  const auto b = sf::placeholder<"b", float, shape<3, 1>>();
  const auto e = a * b;
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<2, 3, 4>>);
  auto g = rng(10);
  const auto av = random_tensor<float, 3>({2, 1, 4}, -5, 5, g);
  const auto bv = random_tensor<float, 2>({3, 1}, -5, 5, g);
  const auto out = sf::eval(e, a = av, b = bv);
  ASSERT_EQ(out.extents(), (sf::extents_t<3>{2, 3, 4}));
  EXPECT_TRUE(all_close(out, broadcast_ref<3>(out.extents(), av, bv, [](double x, double y) { return x * y; }), f32));
  // Operands swapped (lower rank on the left).
  const auto swapped = sf::eval(b - a, a = av, b = bv);
  // One rounding of exact operands: within half an ulp.
  EXPECT_TRUE(all_close(swapped, broadcast_ref<3>(out.extents(), bv, av, [](double x, double y) { return x - y; }),
                        tolerance{0x1p-24, 0}));
}

TEST(ElementwiseBroadcast, DynExtentsAtRunTime) {
  // One expression, many runtime broadcast patterns, including ones large enough for threads and
  // with a stride-0 (broadcast) operand in the packet loop.
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  const auto e = sf::maximum(a, b) * 2.0f - b;
  using ext3 = sf::extents_t<3>;
  using ext2 = sf::extents_t<2>;
  const std::vector<std::pair<ext3, ext2>> cases = {
      {{2, 3, 4}, {3, 4}},   {{2, 3, 1}, {1, 4}},   {{1, 1, 1}, {5, 7}},     {{4, 1, 33}, {6, 1}},
      {{1, 300, 1}, {1, 301}}, {{3, 1, 257}, {129, 257}}, {{2, 5, 17}, {1, 1}}, {{1, 1, 70001}, {1, 70001}},
      // > 16 MiB of output: the streaming-store path, with rows (4099 floats) that start at every
      // alignment; the [1029,1] operand is a stride-0 broadcast along the rows.
      {{1, 1029, 4099}, {1029, 1}},
  };
  for (const auto& [ea, eb] : cases) {
    auto g = rng(unsigned(sf::element_count<3>(ea) + eb[0]));
    const auto av = random_tensor<float, 3>(ea, -4, 4, g);
    const auto bv = random_tensor<float, 2>(eb, -4, 4, g);
    const auto out = sf::eval(e, a = av, b = bv);
    ext3 want_ext{};
    for (std::size_t i = 0; i < 3; ++i) {
      const std::size_t x = ea[i], y = i == 0 ? 1 : eb[i - 1];
      want_ext[i] = x == 1 ? y : x;
    }
    ASSERT_EQ(out.extents(), want_ext) << sf::format_extents(ea) << " vs " << sf::format_extents(eb);
    // 2*max(a,b) is exact; the subtraction is one rounding of exact operands.
    EXPECT_TRUE(all_close(out, broadcast_ref<3>(want_ext, av, bv, [](double x, double y) { return 2 * std::max(x, y) - y; }),
                          tolerance{0x1p-24, 0}))
        << sf::format_extents(ea) << " vs " << sf::format_extents(eb);
  }
}

TEST(ElementwiseBroadcast, IntegerAndDoubleBroadcasts) {
  const auto a = sf::placeholder<"a", std::int64_t, shape<dyn, 1>>();
  const auto b = sf::placeholder<"b", std::int64_t, shape<dyn>>();
  auto g = rng(11);
  const auto av = random_tensor<std::int64_t, 2>({41, 1}, -1e9, 1e9, g);
  const auto bv = random_tensor<std::int64_t, 1>({23}, -1e6, 1e6, g);
  const auto out = sf::eval(a * b - 3, a = av, b = bv);
  ASSERT_EQ(out.extents(), (sf::extents_t<2>{41, 23}));
  EXPECT_TRUE(all_close(out, broadcast_ref<2>(out.extents(), av, bv, [](double x, double y) { return x * y - 3; }), exact));

  const auto c = sf::placeholder<"c", double, shape<dyn, dyn>>();
  const auto d = sf::placeholder<"d", double, shape<dyn, dyn>>();
  const auto cv = random_tensor<double, 2>({1, 1000}, 0.5, 2, g);
  const auto dv = random_tensor<double, 2>({77, 1}, 0.5, 2, g);
  const auto out2 = sf::eval(sf::exp(c) / d, c = cv, d = dv);
  EXPECT_TRUE(all_close(out2, broadcast_ref<2>(out2.extents(), cv, dv, [](double x, double y) { return std::exp(x) / y; }),
                        tolerance{4e-15, 0}));
}

TEST(ElementwiseBroadcast, RankZeroOperands) {
  const auto s = sf::placeholder<"s", float, shape<>>();
  const auto t = sf::placeholder<"t", float, shape<>>();
  const auto x = sf::placeholder<"x", float, shape<dyn>>();
  const sf::tensor<float, shape<>> sv(1.75f), tv(-0.5f);
  // Rank-0 result.
  const auto r0 = sf::eval(sf::exp(s) * t + 2.0f, s = sv, t = tv);
  static_assert(decltype(r0)::rank == 0);
  EXPECT_NEAR(r0[0], std::exp(1.75) * -0.5 + 2.0, 4e-7);
  // Rank-0 tensors (a fed one and a constant baked into the expression) broadcast over a vector on
  // either side, on the SIMD and threaded paths.
  const auto k = sf::constant(sf::tensor<float, shape<>>(0.5f));
  for (std::size_t n : {std::size_t(1), std::size_t(17), std::size_t(70001)}) {
    auto g = rng(unsigned(n));
    const auto xv = random_tensor<float, 1>({n}, 1, 2, g);
    const auto out = sf::eval(s * x - x / s * k, s = sv, x = xv);
    std::vector<double> want;
    for (float v : xv) want.push_back(1.75 * v - v / 1.75 * 0.5);
    // three roundings; the difference of same-sign terms (1.75v - 0.286v) loses < 1 bit: a few ulps.
    EXPECT_TRUE(all_close(out, want, tolerance{5e-7, 0})) << n;
  }
}

TEST(ElementwiseBroadcast, EmptyTensors) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  const auto e = sf::exp(a) + b;
  const auto zero_rows = sf::eval(e, a = dyn_tensor<float, 2>({0, 4}), b = dyn_tensor<float, 2>({1, 4}, 1.0f));
  EXPECT_EQ(zero_rows.extents(), (sf::extents_t<2>{0, 4}));
  EXPECT_EQ(zero_rows.size(), 0u);
  const auto zero_cols = sf::eval(e, a = dyn_tensor<float, 2>({3, 1}, 1.0f), b = dyn_tensor<float, 2>({3, 0}));
  EXPECT_EQ(zero_cols.extents(), (sf::extents_t<2>{3, 0}));
  const auto both = sf::eval(e, a = dyn_tensor<float, 2>({0, 1}), b = dyn_tensor<float, 2>({1, 5}, 2.0f));
  EXPECT_EQ(both.extents(), (sf::extents_t<2>{0, 5}));
  // An empty extent still has to broadcast: 0 against 2 is an error.
  EXPECT_THROW(sf::eval(e, a = dyn_tensor<float, 2>({0, 4}), b = dyn_tensor<float, 2>({2, 4})), sf::shape_error);
  // Integer (scalar path) empty map.
  // (The same expression type as in IntegersAreExact, so no new instantiation. extents_t spelled
  // out: tensor({0}) would be the one-element tensor holding 0.)
  const auto i = sf::placeholder<"x", std::int32_t, shape<dyn>>();
  EXPECT_EQ(sf::eval(7 - i / 2, i = dyn_tensor<std::int32_t, 1>(sf::extents_t<1>{0})).size(), 0u);
}

TEST(ElementwiseBroadcast, RuntimeMismatchThrowsShapeErrorNamingOpAndShapes) {
  const auto a = sf::placeholder<"a", float, shape<dyn, dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn, dyn>>();
  const auto av = dyn_tensor<float, 2>({3, 4}, 1.0f);
  const auto bv = dyn_tensor<float, 2>({2, 4}, 1.0f);
  auto message_of = [](auto&& run) -> std::string {
    try {
      run();
    } catch (const sf::shape_error& e) {
      return e.what();
    } catch (...) {
      return "<wrong exception type>";
    }
    return "<no exception>";
  };
  const std::string add = message_of([&] { (void)sf::eval(sf::exp(a) + b, a = av, b = bv); });
  EXPECT_NE(add.find("add"), std::string::npos) << add;
  EXPECT_NE(add.find("[3,4]"), std::string::npos) << add;
  EXPECT_NE(add.find("[2,4]"), std::string::npos) << add;

  // A named function records where it was written, and scopes prefix the name.
  const std::string named = message_of([&] {
    const auto e = sf::scope("block", [&] { return sf::maximum(b, a); });
    (void)sf::eval(sf::exp(e), a = av, b = bv);
  });
  EXPECT_NE(named.find("block/maximum"), std::string::npos) << named;
  EXPECT_NE(named.find("elementwise_broadcast_test.cpp"), std::string::npos) << named;
  EXPECT_NE(named.find("[2,4]"), std::string::npos) << named;
  EXPECT_NE(named.find("[3,4]"), std::string::npos) << named;

  // Rank extension mismatch ([2,3] against [2]) deep inside a fused chain (the expression of
  // ElementwiseFused.ChainOfOpsMatchesComposedReference); checked before any work, so eval_into
  // leaves its output alone.
  const auto c = sf::placeholder<"c", float, shape<dyn>>();
  const auto chain = sf::sigmoid(a * b + c) + sf::exp(-sf::square(a)) / (1.0f + sf::abs(b));
  dyn_tensor<float, 2> out({2, 3}, 42.0f);
  const std::string deep = message_of([&] {
    const auto m = dyn_tensor<float, 2>({2, 3}, 1.0f);
    sf::eval_into(out, chain, a = m, b = m, c = dyn_tensor<float, 1>({2}, 1.0f));
  });
  EXPECT_NE(deep.find("add"), std::string::npos) << deep;
  EXPECT_NE(deep.find("[2,3]"), std::string::npos) << deep;
  EXPECT_NE(deep.find("[2]"), std::string::npos) << deep;
  for (float o : out) EXPECT_EQ(o, 42.0f);

  // shape_error is a symflow::error.
  EXPECT_THROW((void)sf::eval(sf::exp(a) + b, a = av, b = bv), sf::error);
}

TEST(ElementwiseBroadcast, StaticShapeMismatchOfFeedThrows) {
  // A feed whose runtime extents contradict the leaf's static shape [2,1,4].
  const auto a = sf::placeholder<"a", float, shape<2, 1, 4>>();
  const auto b = sf::placeholder<"b", float, shape<3, 1>>();
  try {
    (void)sf::eval(a * b, a = dyn_tensor<float, 3>({2, 2, 4}, 1.0f), b = dyn_tensor<float, 2>({3, 1}, 1.0f));
    ADD_FAILURE() << "no exception";
  } catch (const sf::shape_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[2,2,4]"), std::string::npos) << what;
    EXPECT_NE(what.find("f32[2,1,4]"), std::string::npos) << what;
  }
}
