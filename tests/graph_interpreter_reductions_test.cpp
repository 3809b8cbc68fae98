// The interpreter against compiled evaluation of the same expressions on random inputs: reductions
// over several axes (against a float64 reference), views, kernels and gradient graphs.
//
// Compiled with -ffp-contract=off (tests/CMakeLists.txt), as graph_interpreter_test.cpp: see there.
#include "graph_interpreter_support.hpp"

// A reference reduction in float64 over the axes marked in `reduced`, in memory order, with the sum
// of magnitudes each result combines (the scale of a float sum's rounding error).
struct reference_reduction {
  std::vector<double> value, magnitude;
};
template <class T>
reference_reduction reduce_reference(const T* in, const runtime_extents& extents, const std::vector<bool>& reduced,
                                     std::string_view op) {
  std::size_t kept = 1, count = 1;
  for (std::size_t a = 0; a < extents.size(); ++a) (reduced[a] ? count : kept) *= extents[a];
  const double start = op == "max" ? -INFINITY : op == "min" ? INFINITY : 0.0;
  reference_reduction r{std::vector<double>(kept, start), std::vector<double>(kept, 0.0)};
  std::vector<std::size_t> index(extents.size(), 0);
  for (std::size_t flat = 0; flat < element_count(extents); ++flat) {
    std::size_t out = 0;
    for (std::size_t a = 0; a < extents.size(); ++a)
      if (!reduced[a]) out = out * extents[a] + index[a];
    const double v = double(in[flat]);
    if (op == "max") r.value[out] = std::max(r.value[out], v);
    else if (op == "min") r.value[out] = std::min(r.value[out], v);
    else r.value[out] += v;
    r.magnitude[out] += std::abs(v);
    for (std::size_t a = extents.size(); a-- > 0;) {
      if (++index[a] < extents[a]) break;
      index[a] = 0;
    }
  }
  if (op == "mean")
    for (auto& v : r.value) v /= double(count);
  if (op == "mean")
    for (auto& v : r.magnitude) v /= double(count);
  return r;
}

// Compiled and interpreted reductions against the float64 reference: max and min exactly; sums
// within the rounding a float accumulation may add (compiled: float partial sums), the interpreter
// (which accumulates floats in double) within one ulp of the rounded reference.
template <class E, class T>
void expect_reduction_matches_reference(const E& expr, const tensor<value_type_of<E>, shape_of<E>>& compiled,
                                        const runtime_tensor& interpreted, const T* operand,
                                        const runtime_extents& extents, std::vector<bool> reduced,
                                        std::string_view op) {
  SCOPED_TRACE(to_string(expr));
  const auto ref = reduce_reference(operand, extents, reduced, op);
  ASSERT_EQ(compiled.size(), ref.value.size());
  ASSERT_EQ(interpreted.size(), ref.value.size());
  using R = value_type_of<E>;
  const R* got = interpreted.data<R>();
  for (std::size_t k = 0; k < ref.value.size(); ++k) {
    const R rounded = R(ref.value[k]);
    if (op == "max" || op == "min" || std::is_integral_v<R>) {
      EXPECT_EQ(compiled.data()[k], rounded) << "compiled, element " << k;
      EXPECT_EQ(got[k], rounded) << "interpreted, element " << k;
    } else {
      const double tolerance = 8 * double(std::numeric_limits<R>::epsilon()) * ref.magnitude[k] + 1e-30;
      EXPECT_NEAR(double(compiled.data()[k]), ref.value[k], tolerance) << "compiled, element " << k;
      EXPECT_LE(ulp_distance(got[k], rounded), 1u) << "interpreted, element " << k << ": " << got[k] << " vs " << rounded;
    }
  }
}

TEST(GraphInterpreter, ReductionsOverAxesWithAndWithoutKeepdimsMatchAFloat64Reference) {
  std::mt19937 rng(11);
  const auto z = placeholder<"z", float, shape<6, dyn, 37>>();
  const auto k = placeholder<"k", std::int32_t, shape<6, dyn, 37>>();
  const auto zv = random_tensor<float, shape<6, dyn, 37>>(rng, {6, 50, 37}, -1, 1);
  const auto kv = random_tensor<std::int32_t, shape<6, dyn, 37>>(rng, {6, 50, 37}, -1000, 1000);
  const runtime_extents e{6, 50, 37};
  const auto exprs = std::tuple{sum(z), sum(z, axes<0>), sum(z, axes<1>, keepdims), mean(z, axes<2>),
                                mean(z, axes<0, 2>, keepdims), max(z, axes<1>), min(z), max(z, axes<-1>, keepdims),
                                min(z, axes<0, 1>), sum(k, axes<1>), max(k, axes<0, 2>)};
  const auto r = evaluate_both_ways(exprs, z = zv, k = kv);
  const std::vector<bool> all{true, true, true}, a0{true, false, false}, a1{false, true, false},
      a2{false, false, true}, a02{true, false, true}, a01{true, true, false};
  const float* zp = zv.data();
  expect_reduction_matches_reference(std::get<0>(exprs), std::get<0>(r.compiled), r.fused[0], zp, e, all, "sum");
  expect_reduction_matches_reference(std::get<1>(exprs), std::get<1>(r.compiled), r.fused[1], zp, e, a0, "sum");
  expect_reduction_matches_reference(std::get<2>(exprs), std::get<2>(r.compiled), r.fused[2], zp, e, a1, "sum");
  expect_reduction_matches_reference(std::get<3>(exprs), std::get<3>(r.compiled), r.fused[3], zp, e, a2, "mean");
  expect_reduction_matches_reference(std::get<4>(exprs), std::get<4>(r.compiled), r.fused[4], zp, e, a02, "mean");
  expect_reduction_matches_reference(std::get<5>(exprs), std::get<5>(r.compiled), r.fused[5], zp, e, a1, "max");
  expect_reduction_matches_reference(std::get<6>(exprs), std::get<6>(r.compiled), r.fused[6], zp, e, all, "min");
  expect_reduction_matches_reference(std::get<7>(exprs), std::get<7>(r.compiled), r.fused[7], zp, e, a2, "max");
  expect_reduction_matches_reference(std::get<8>(exprs), std::get<8>(r.compiled), r.fused[8], zp, e, a01, "min");
  expect_reduction_matches_reference(std::get<9>(exprs), std::get<9>(r.compiled), r.fused[9], kv.data(), e, a1, "sum");
  expect_reduction_matches_reference(std::get<10>(exprs), std::get<10>(r.compiled), r.fused[10], kv.data(), e, a02, "max");
  for (std::size_t o = 0; o < r.fused.size(); ++o) EXPECT_EQ(compare(r.fused[o], r.unfused[o]).max_ulps, 0u) << o;
  // Kept extents of 1 where keepdims asks for them.
  EXPECT_EQ(r.fused[2].extents(), (runtime_extents{6, 1, 37}));
  EXPECT_EQ(r.fused[4].extents(), (runtime_extents{1, 50, 1}));
  EXPECT_EQ(r.fused[7].extents(), (runtime_extents{6, 50, 1}));
}

TEST(GraphInterpreter, ReductionOfAFusedChainOverManyElements) {
  std::mt19937 rng(12);
  const auto v = placeholder<"v", float, shape<dyn>>();
  const auto vv = random_tensor<float, shape<dyn>>(rng, {100003}, -2, 2);
  const auto expr = sum(square(v - 0.5f));
  const auto r = evaluate_both_ways(std::tuple{expr}, v = vv);
  tensor<float, shape<dyn>> operand(extents_t<1>{vv.size()}, uninitialized);
  for (std::size_t q = 0; q < vv.size(); ++q) operand[q] = (vv[q] - 0.5f) * (vv[q] - 0.5f);
  expect_reduction_matches_reference(expr, std::get<0>(r.compiled), r.fused[0], operand.data(), {vv.size()}, {true},
                                     "sum");
}

TEST(GraphInterpreter, ViewsMatchCompiled) {
  elementwise_inputs in;
  std::mt19937 rng(13);
  const auto z = placeholder<"z", float, shape<2, 3, dyn>>();
  const auto zv = random_tensor<float, shape<2, 3, dyn>>(rng, {2, 3, 19}, -2, 2);
  const auto r = expect_bitwise(std::tuple{transpose(x) * 2.0f - transpose(y), permute<2, 0, 1>(z) + 1.0f,
                                           reshape<shape<dyn, 7>>(x) * 3.0f, flatten(z) - 0.25f, tanh(slice(x, 3, 10)) + slice(y, 0, 7),
                                           narrow<1>(x, 2, 9) * narrow<1>(y, 5, 12), transpose(z) / 4.0f},
                                x = in.x, y = in.y, z = zv);
  EXPECT_EQ(r.fused[2].extents(), (runtime_extents{rows * cols / 7, 7}));
}

TEST(GraphInterpreter, KernelsMatchCompiled) {
  elementwise_inputs in;
  std::mt19937 rng(14);
  const auto W = variable<"W", float, shape<cols, 13>>();
  const auto bias = variable<"bias", float, shape<13>>();
  const auto zb = placeholder<"zb", float, shape<dyn, 9, cols>>();
  const auto V = placeholder<"V", float, shape<dyn, cols, 5>>();
  const auto labels = placeholder<"labels", std::int32_t, shape<dyn>>();
  const auto Wv = random_tensor<float, shape<cols, 13>>(rng, {cols, 13}, -1, 1);
  const auto bv = random_tensor<float, shape<13>>(rng, {13}, -1, 1);
  const auto zbv = random_tensor<float, shape<dyn, 9, cols>>(rng, {4, 9, cols}, -1, 1);
  const auto Vv = random_tensor<float, shape<dyn, cols, 5>>(rng, {4, cols, 5}, -1, 1);
  auto lv = random_tensor<std::int32_t, shape<dyn>>(rng, {40}, 0, 6);
  lv[3] = 7;  // outside [0, 7): a row of zeros on both sides
  lv[4] = -1;
  const auto r = expect_bitwise(std::tuple{matmul(x, W), relu(matmul(x, W) + bias), matmul(zb, W), matmul(zb, V),
                                           concat<0>(x, y), concat<1>(x, p, y), one_hot<7>(labels),
                                           one_hot<7, double>(labels) * 2.0},
                                x = in.x, y = in.y, p = in.p, W = Wv, bias = bv, zb = zbv, V = Vv, labels = lv);
  EXPECT_EQ(count_op(r.lowered, "matmul"), 3u);
  EXPECT_EQ(r.fused[5].extents(), (runtime_extents{rows, 3 * cols}));
}

// Gradients bring the remaining ops: expand_dims (reductions' adjoints), scatter (slices' and
// concats' adjoints), reduced_count (mean's), expand_as (broadcast operands').
TEST(GraphInterpreter, GradientGraphsMatchCompiled) {
  elementwise_inputs in;
  std::mt19937 rng(15);
  const auto z = placeholder<"z", float, shape<2, 3, dyn>>();
  const auto zv = random_tensor<float, shape<2, 3, dyn>>(rng, {2, 3, 19}, -2, 2);
  const auto loss = sum(square(concat<1>(slice(x, 0, 1), reshape<shape<1, cols>>(w))) * 1.5f) + mean(max(z, axes<2>)) +
                    sum(narrow<1>(x, 2, 9) * 0.5f) + mean(sin(x) * w);
  const auto [dw, dx, dz] = grad(loss, w, x, z);
  const auto r = evaluate_both_ways(std::tuple{loss, dw, dx, dz}, x = in.x, w = in.w, z = zv);
  for (const char* op : {"expand_dims", "scatter", "reduced_count", "expand_as"})
    EXPECT_GT(count_op(r.lowered, op), 0u) << op;
  // The loss is a sum of reductions: within float rounding of compiled. The gradients are
  // elementwise in the reductions' values, identical here.
  const float l = std::get<0>(r.compiled)[0];
  EXPECT_NEAR(r.fused[0].data<float>()[0], l, 1e-5f * std::abs(l));
  EXPECT_EQ(compare(std::get<1>(r.compiled), r.fused[1]).max_ulps, 0u) << compare(std::get<1>(r.compiled), r.fused[1]).what;
  EXPECT_EQ(compare(std::get<2>(r.compiled), r.fused[2]).max_ulps, 0u) << compare(std::get<2>(r.compiled), r.fused[2]).what;
  EXPECT_EQ(compare(std::get<3>(r.compiled), r.fused[3]).max_ulps, 0u) << compare(std::get<3>(r.compiled), r.fused[3]).what;
  // Unfused, sin(x) and cos(x) run over whole stored arrays rather than the broadcast rows of the
  // fused group (see BroadcastRowsMatchCompiled...).
  for (std::size_t o = 0; o < 4; ++o) EXPECT_LE(compare(r.fused[o], r.unfused[o]).max_ulps, 4u) << o;
}

}  // namespace

// Sums over the leading axes with the last axis kept (a bias gradient's column sums) split their
// columns between threads: the same bits on one thread and on all, and float64's sums.
TEST(GraphInterpreter, ColumnSumsAreTheSameOnAnyThreadCount) {
  const auto cp = placeholder<"cp", float, shape<dyn, 3, 45>>();
  std::mt19937 rng{45};
  constexpr std::size_t n = 401;  // 54135 elements: over cpu::parallel_threshold
  auto pv = random_tensor<float, shape<dyn, 3, 45>>(rng, {n, 3, 45}, -2, 2);
  pv(7, 1, 44) = std::numeric_limits<float>::quiet_NaN();
  pv(9, 2, 16) = std::numeric_limits<float>::infinity();
  pv(10, 0, 3) = -0.f;
  const graph g = to_graph(sum(cp, axes<0>), mean(cp, axes<0, 1>));
  const auto feeds = sources_for(g, cp = pv).feeds;
  std::vector<runtime_tensor> serial;
  {
    const cpu::serial_scope one_thread(true);
    serial = interpreter(g).run(feeds);
  }
  const auto threaded = interpreter(g).run(feeds);
  ASSERT_EQ(threaded.size(), 2u);
  for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(compare(serial[o], threaded[o]).max_ulps, 0u) << "output " << o;
  for (std::size_t j = 0; j < 45; ++j) {
    double over_both = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      double s = 0;
      for (std::size_t r = 0; r < n; ++r) s += pv(r, i, j);
      over_both += s;
      const float f = threaded[0].data<float>()[i * 45 + j];
      if (std::isnan(s)) EXPECT_TRUE(std::isnan(f)) << i << ", " << j;
      else if (std::isinf(s)) EXPECT_EQ(f, float(s)) << i << ", " << j;
      else EXPECT_NEAR(f, s, 1e-5 * (1 + std::abs(s))) << i << ", " << j;
    }
    const double m = over_both / double(3 * n);
    const float f = threaded[1].data<float>()[j];
    if (std::isnan(m)) EXPECT_TRUE(std::isnan(f)) << j;
    else if (std::isinf(m)) EXPECT_EQ(f, float(m)) << j;
    else EXPECT_NEAR(f, m, 1e-6 * (1 + std::abs(m))) << j;
  }
}

// Reductions over every axis but the last run in the pass computing their operand
// (runtime/pass_reductions.hpp): threads take whole blocks of rows and add each block's rows into a
// row of accumulators, the blocks combined in order, which is the order the reductions' own units
// follow (runtime/column_reduction.hpp): the same bits, on any thread count and tile. Rows of 24
// (tiles of whole rows that straddle the blocks of rows), 3003 rows (over the parallel threshold),
// keepdims or not, a max among the sums, NaN, infinity and -0 among the inputs; float64 as the
// reference.
TEST(GraphInterpreter, ColumnReductionsRunInTheirOperandsPassBitwise) {
  const auto kp = placeholder<"kp", float, shape<dyn, 3, 24>>();
  const auto kq = placeholder<"kq", float, shape<3, 24>>();
  std::mt19937 rng{26};
  constexpr std::size_t n = 1001;  // 72072 elements
  auto pv = random_tensor<float, shape<dyn, 3, 24>>(rng, {n, 3, 24}, -2, 2);
  const auto qv = random_tensor<float, shape<3, 24>>(rng, {3, 24}, -2, 2);
  pv(5, 1, 3) = std::numeric_limits<float>::quiet_NaN();
  pv(9, 2, 0) = -std::numeric_limits<float>::infinity();
  pv(11, 0, 7) = -0.f;
  const graph g = to_graph(sum(sin(kp) * kq, axes<0, 1>), mean(kp * kp + kq, axes<0, 1>, keepdims),
                           max(kp * kq, axes<0, 1>));
  const auto feeds = sources_for(g, kp = pv, kq = qv).feeds;
  interpreter_options separate;
  separate.fuse_row_reductions = false;
  interpreter fused(g), units(g, separate);
  const auto got = fused.run(feeds);
  const auto want = units.run(feeds);
  EXPECT_EQ(fused.last_stats().fused_reductions, 3u);
  EXPECT_EQ(units.last_stats().fused_reductions, 0u);
  EXPECT_LT(fused.last_stats().materialised_values, units.last_stats().materialised_values);
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t o = 0; o < 3; ++o) EXPECT_EQ(compare(want[o], got[o]).max_ulps, 0u) << "output " << o;
  for (std::size_t tile : {16, 100, 4096}) {
    const auto out = interpreter(g, tiled_options(tile)).run(feeds);
    for (std::size_t o = 0; o < 3; ++o) EXPECT_EQ(compare(want[o], out[o]).max_ulps, 0u) << "tile " << tile;
  }
  {
    const cpu::serial_scope one_thread(true);
    const auto serial = interpreter(g).run(feeds);
    for (std::size_t o = 0; o < 3; ++o) EXPECT_EQ(compare(want[o], serial[o]).max_ulps, 0u) << "one thread, output " << o;
  }
  ASSERT_EQ(got[0].extents(), (runtime_extents{24}));
  ASSERT_EQ(got[1].extents(), (runtime_extents{1, 1, 24}));
  for (std::size_t j = 0; j < 24; ++j) {
    double s = 0, m = 0, mx = -INFINITY, magnitude = 0;
    bool nan_max = false;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t i = 0; i < 3; ++i) {
        const double x = pv(r, i, j), q = qv(i, j);
        s += std::sin(x) * q;
        magnitude += std::abs(std::sin(x) * q);
        m += x * x + q;
        nan_max = nan_max || std::isnan(x * q);
        mx = std::max(mx, x * q);
      }
    m /= double(3 * n);
    const float fs = got[0].data<float>()[j], fm = got[1].data<float>()[j], fx = got[2].data<float>()[j];
    if (std::isnan(s)) EXPECT_TRUE(std::isnan(fs)) << j;
    else EXPECT_NEAR(fs, s, 1e-6 * (1 + magnitude)) << j;
    if (std::isnan(m)) EXPECT_TRUE(std::isnan(fm)) << j;
    else if (std::isinf(m)) EXPECT_EQ(fm, float(m)) << j;
    else EXPECT_NEAR(fm, m, 1e-5 * (1 + std::abs(m))) << j;
    if (nan_max) EXPECT_TRUE(std::isnan(fx)) << j;
    else EXPECT_FLOAT_EQ(fx, float(mx)) << j;
  }
  EXPECT_TRUE(std::isnan(got[0].data<float>()[3]));  // the NaN's column
}

// Members read once by a later member run in that member's loop (runtime/chained_kernels.hpp): the
// same bits as one pass per node, and as the float ops written out (this file is compiled with
// -ffp-contract=off), with the intermediate on either side of the second op (sub is not
// commutative), a broadcast operand, rows of odd length (scalar tails) and NaN, infinities and -0.
template <class T>
void expect_chained_members_match_unfused() {
  using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const auto a = placeholder<"ca", T, shape<dyn, 37>>();
  const auto b = placeholder<"cb", T, shape<dyn, 37>>();
  const auto c = placeholder<"cc", T, shape<dyn, 37>>();
  const auto d = placeholder<"cd", T, shape<37>>();
  std::mt19937 rng{37};
  constexpr std::size_t rows = 1501;  // 55537 elements: threads share the pass
  auto av = random_tensor<T, shape<dyn, 37>>(rng, {rows, 37}, -3, 3);
  auto bv = random_tensor<T, shape<dyn, 37>>(rng, {rows, 37}, -3, 3);
  auto cv = random_tensor<T, shape<dyn, 37>>(rng, {rows, 37}, -3, 3);
  auto dv = random_tensor<T, shape<37>>(rng, {37}, -3, 3);
  av(5, 36) = std::numeric_limits<T>::quiet_NaN();
  bv(9, 2) = std::numeric_limits<T>::infinity();
  cv(11, 17) = -std::numeric_limits<T>::infinity();
  av(12, 0) = T(-0.0);
  bv(12, 0) = T(0.0);
  const auto e = (a * b + c) * (d - a * c) - (a - b) * (c + d);
  const graph g = to_graph(e);
  const auto feeds = sources_for(g, a = av, b = bv, c = cv, d = dv).feeds;
  interpreter chained(g);
  const auto got = chained.run(feeds);
  EXPECT_GE(chained.last_stats().chained_nodes, 3u);
  interpreter_options one_per_node;
  one_per_node.fuse = false;
  interpreter unfused(g, one_per_node);
  const auto want = unfused.run(feeds);
  EXPECT_EQ(unfused.last_stats().chained_nodes, 0u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(compare(got[0], want[0]).max_ulps, 0u);
  const T* out = got[0].template data<T>();
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < 37; ++j) {
      const T x = av(r, j), y = bv(r, j), z = cv(r, j), w = dv(j);
      const T xy = x * y, xz = x * z;
      const T left = xy + z, right = w - xz, product = left * right;
      const T diff = x - y, sum = z + w, second = diff * sum;
      const T expected = product - second;
      const T value = out[r * 37 + j];
      if (std::isnan(expected)) EXPECT_TRUE(std::isnan(value)) << r << ", " << j;
      else EXPECT_EQ(std::bit_cast<bits>(value), std::bit_cast<bits>(expected)) << r << ", " << j << ": " << value << " vs " << expected;
    }
}
TEST(GraphInterpreter, ChainedMembersGiveTheBitsOfOnePassPerNode) {
  expect_chained_members_match_unfused<float>();
  expect_chained_members_match_unfused<double>();
}

// Tiles of several whole rows (fused_pass.hpp, plan_row_tiles): a [rows, 48] pass whose inputs are
// a matrix, a bias broadcast over the rows and a value per row (broadcast along it) runs 10 rows
// per tile (480 elements) instead of one, with a row sum and column sums of the same value in the
// pass: the same bits as tiles of one row, as one pass per node, and on one thread; float64 as the
// reference. 1385 rows (over the parallel threshold, the last tile short), NaN, infinities and -0
// among the inputs.
template <class T>
void expect_row_tiles_match_one_row_tiles() {
  const auto x = placeholder<"rx", T, shape<dyn, 48>>();
  const auto b = placeholder<"rb", T, shape<48>>();
  const auto m = placeholder<"rm", T, shape<dyn, 1>>();
  std::mt19937 rng{48};
  constexpr std::size_t rows = 1385;
  auto xv = random_tensor<T, shape<dyn, 48>>(rng, {rows, 48}, -2, 2);
  const auto bv = random_tensor<T, shape<48>>(rng, {48}, -2, 2);
  auto mv = random_tensor<T, shape<dyn, 1>>(rng, {rows, 1}, -1, 1);
  xv(3, 47) = std::numeric_limits<T>::quiet_NaN();
  xv(700, 5) = std::numeric_limits<T>::infinity();
  xv(901, 9) = -std::numeric_limits<T>::infinity();
  xv(1384, 0) = T(-0.0);
  mv(1384, 0) = T(-0.0);
  const auto v = tanh(x * b + m) * x - m;
  const graph g = to_graph(v, sum(v, axes<1>), sum(v, axes<0>));
  const auto feeds = sources_for(g, x = xv, b = bv, m = mv).feeds;
  interpreter_options profiled;
  profiled.profile = true;
  interpreter rows_per_tile(g, profiled);
  const auto got = rows_per_tile.run(feeds);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(rows_per_tile.last_stats().fused_reductions, 2u);
  bool row_tiles = false;
  for (const auto& e : rows_per_tile.last_profile().entries)
    row_tiles = row_tiles || e.description.find("tile 480 (10 rows)") != std::string::npos;
  EXPECT_TRUE(row_tiles) << rows_per_tile.last_profile().slowest();
  const auto one_row = interpreter(g, tiled_options(48)).run(feeds);
  const auto unfused = interpreter(g, unfused_options()).run(feeds);
  std::vector<runtime_tensor> serial;
  {
    const cpu::serial_scope one_thread(true);
    serial = interpreter(g).run(feeds);
  }
  for (std::size_t o = 0; o < 3; ++o) {
    EXPECT_EQ(compare(one_row[o], got[o]).max_ulps, 0u) << "output " << o;
    EXPECT_EQ(compare(unfused[o], got[o]).max_ulps, 0u) << "unfused, output " << o;
    EXPECT_EQ(compare(serial[o], got[o]).max_ulps, 0u) << "one thread, output " << o;
  }
  const double eps = double(std::numeric_limits<T>::epsilon());
  std::vector<double> column(48, 0.0), column_magnitude(48, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    double row = 0, magnitude = 0;
    for (std::size_t j = 0; j < 48; ++j) {
      const double xx = xv(r, j), mm = mv(r, 0);
      const double want = std::tanh(xx * double(bv(j)) + mm) * xx - mm;
      const T value = got[0].template data<T>()[r * 48 + j];
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(value)) << r << ", " << j;
      else if (std::isinf(want)) EXPECT_EQ(value, T(want)) << r << ", " << j;
      else EXPECT_NEAR(double(value), want, 64 * eps * (1 + std::abs(want))) << r << ", " << j;
      row += want;
      magnitude += std::abs(want);
      column[j] += want;
      column_magnitude[j] += std::abs(want);
    }
    const double s = got[1].template data<T>()[r];
    if (std::isnan(row)) EXPECT_TRUE(std::isnan(s)) << "row " << r;
    else if (std::isinf(row)) EXPECT_EQ(s, row) << "row " << r;
    else EXPECT_NEAR(s, row, 64 * eps * (1 + magnitude)) << "row " << r;
  }
  for (std::size_t j = 0; j < 48; ++j) {
    const double s = got[2].template data<T>()[j];
    if (std::isnan(column[j])) EXPECT_TRUE(std::isnan(s)) << "column " << j;
    else if (std::isinf(column[j])) EXPECT_EQ(s, column[j]) << "column " << j;
    else EXPECT_NEAR(s, column[j], 64 * eps * (1 + column_magnitude[j])) << "column " << j;
  }
  EXPECT_TRUE(std::isnan(got[2].template data<T>()[47]));  // the NaN's column
}
TEST(GraphInterpreter, TilesOfSeveralRowsGiveTheBitsOfOneRowTiles) {
  expect_row_tiles_match_one_row_tiles<float>();
  expect_row_tiles_match_one_row_tiles<double>();
}
