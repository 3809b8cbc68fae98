// The interpreter against compiled evaluation of the same expressions on random inputs, bit for bit:
// every elementwise op, broadcasting, literals, integer/f64/bool, fused chains, and broadcast rows
// fused and unfused at several thread counts. (Reductions, views, kernels, gradient graphs:
// graph_interpreter_reductions_test; models, loaded graphs, stats and bad feeds:
// graph_interpreter_io_test.)
//
// This file is compiled with -ffp-contract=off (tests/CMakeLists.txt): otherwise GCC may contract
// a*b+c inside a compiled fused loop into one FMA, which the interpreter (one kernel per op) cannot
// do, and the two sides would differ by the product's rounding (docs/graph.md, "Interpreter").
#include "graph_interpreter_support.hpp"

TEST(GraphInterpreter, UnaryOpsAreBitwiseEqualToCompiled) {
  elementwise_inputs in;
  // Three evaluations of five outputs: one of fifteen costs the compiler far more than three of five.
  expect_bitwise(std::tuple{sin(x), cos(x), exp(x), log(p), log1p(p)}, x = in.x, p = in.p);
  expect_bitwise(std::tuple{sqrt(p), rsqrt(p), tanh(x), sigmoid(x), softplus(x)}, x = in.x, p = in.p);
  expect_bitwise(std::tuple{abs(x), sign(x), relu(x), square(x), -x}, x = in.x);
}

TEST(GraphInterpreter, BinaryOpsWithBroadcastingAndLiteralsAreBitwiseEqual) {
  elementwise_inputs in;
  expect_bitwise(std::tuple{x + w, x - col, x * y, x / p, pow(p, 1.7f), maximum(x, w), minimum(y, 0.5f), 2.5f * x,
                            1.0f - x, x / 3.0f, where(m, x, w), where(m, 0.0f, y)},
                 x = in.x, y = in.y, p = in.p, w = in.w, col = in.col, m = in.m);
}

TEST(GraphInterpreter, ComparisonsCastsIntegersAndDoublesAreBitwiseEqual) {
  elementwise_inputs in;
  expect_bitwise(std::tuple{equal(x, w), not_equal(x, y), x < y, x <= 1.0f, x > w, x >= y, cast<std::int32_t>(x * 4.0f),
                            cast<double>(x), cast<float>(i), i + j * 3, maximum(i, j), abs(i) - j, d * d + sin(d),
                            exp(d) / (1.0 + abs(d)), tanh(d) * 0.5 - log1p(abs(d))},
                 x = in.x, y = in.y, w = in.w, i = in.i, j = in.j, d = in.d);
}

TEST(GraphInterpreter, ChainsFuseIntoOnePassAndMatchCompiled) {
  elementwise_inputs in;
  const auto r = expect_bitwise(std::tuple{tanh(x * y + p) * exp(-x * x) + 0.5f * x}, x = in.x, y = in.y, p = in.p);
  EXPECT_EQ(r.stats.fused_groups, 1u);
  EXPECT_EQ(r.stats.fused_nodes, count_op(r.lowered, "tanh") + count_op(r.lowered, "exp") + count_op(r.lowered, "mul") +
                                     count_op(r.lowered, "add") + count_op(r.lowered, "neg"));
  EXPECT_EQ(r.stats.materialised_values, 1u);  // the result only
}


// Broadcast rows end in a scalar tail; an op whose packet and scalar forms round differently (sin,
// exp, tanh, ...) then depends on where an element falls. Fused, the interpreter walks the same rows
// as the compiled loop; unfused, x*w is stored first and sin runs over it as one contiguous run, so
// tail elements of a row are computed by the packet form instead (docs/graph.md, "Interpreter").
TEST(GraphInterpreter, BroadcastRowsMatchCompiledFusedAndWithinPacketErrorUnfused) {
  elementwise_inputs in;
  const auto exprs = std::tuple{sin(x * w) + col, exp(x - col) * w, tanh(x * w)};
  const auto r = evaluate_both_ways(exprs, x = in.x, w = in.w, col = in.col);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (
        [&] {
          const auto fused = compare(std::get<K>(r.compiled), r.fused[K]);
          EXPECT_EQ(fused.max_ulps, 0u) << to_string(std::get<K>(exprs)) << ": " << fused.what;
          const auto unfused = compare(std::get<K>(r.compiled), r.unfused[K]);
          EXPECT_LE(unfused.max_ulps, 4u) << to_string(std::get<K>(exprs)) << ": " << unfused.what;
        }(),
        ...);
  }(std::make_index_sequence<3>{});
}

// Two threads once split a broadcast group at a multiple of the tile size, inside a row of 40: the tile
// starting there put other elements of the row into SIMD packets than a single thread does, and tanh's
// packet and scalar forms round differently. Shares now start on the row's packet grid.
TEST(GraphInterpreter, BroadcastResultsDoNotDependOnTheThreadCount) {
  std::mt19937 rng(17);
  const auto wide = placeholder<"wide", float, shape<dyn, 40>>();
  const auto row = placeholder<"row", float, shape<40>>();
  const auto wv = random_tensor<float, shape<dyn, 40>>(rng, {2000, 40}, -3, 3);  // over 2^15 elements
  const auto rv = random_tensor<float, shape<40>>(rng, {40}, -3, 3);
  const auto r = evaluate_both_ways(std::tuple{tanh(wide * row)}, wide = wv, row = rv);
  EXPECT_EQ(compare(std::get<0>(r.compiled), r.fused[0]).max_ulps, 0u) << compare(std::get<0>(r.compiled), r.fused[0]).what;
}

}  // namespace
