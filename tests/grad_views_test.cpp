// Derivative rules of views (transpose, permute, reshape, flatten, slice) and concat, checked
// against float64 central differences on random inputs; reshape from several run-time extents and
// reshape_as (ops/reshape_as.hpp), also through run-time differentiation of the graph value.
#include <bit>
#include <cstdint>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>

#include "gradient_support.hpp"
#include "runtime_gradient_check.hpp"

using namespace symflow;
using namespace symflow::testing;


TEST(GradViews, TransposePermuteReshapeFlattenSlice) {
  auto x = placeholder<"x", float, shape<4, 3>>();
  auto y = placeholder<"y", float, shape<2, 3, 4>>();
  const auto xv = random_tensor<float, shape<4, 3>>({4, 3}, -1, 1, 9);
  const auto yv = random_tensor<float, shape<2, 3, 4>>({2, 3, 4}, -1, 1, 10);
  const auto w43 = constant(random_tensor<float, shape<3, 4>>({3, 4}, -1, 1, 11));
  const auto w6 = constant(random_tensor<float, shape<6, 2>>({6, 2}, -1, 1, 12));
  auto cx = [&](auto loss) { expect_gradient_matches(check_gradient(loss, x, x = xv, y = yv)); };
  auto cy = [&](auto loss) { expect_gradient_matches(check_gradient(loss, y, x = xv, y = yv)); };
  cx(sum(transpose(x) * w43));
  cx(sum(exp(reshape<shape<6, 2>>(x)) * w6));
  cx(sum(slice(x, 1, 3) * slice(x, 2, 4)));
  cx(sum(narrow<1>(x, 1, 3) * narrow<1>(x, 0, 2) * 3.0f));
  cy(sum(square(permute<2, 0, 1>(y)) * permute<2, 0, 1>(y)));
  cy(sum(flatten(y) * flatten(y)));
  cy(sum(matmul(transpose(y), y)));
}

TEST(GradKernels, Concat) {
  auto a = placeholder<"a", float, shape<2, 3>>();
  auto b = placeholder<"b", float, shape<2, 2>>();
  const auto av = random_tensor<float, shape<2, 3>>({2, 3}, -1, 1, 13);
  const auto bv = random_tensor<float, shape<2, 2>>({2, 2}, -1, 1, 14);
  const auto w = constant(random_tensor<float, shape<2, 5>>({2, 5}, -1, 1, 15));
  auto loss = sum(sin(concat<1>(a, b)) * w);
  expect_gradient_matches(check_gradient(loss, a, a = av, b = bv));
  expect_gradient_matches(check_gradient(loss, b, a = av, b = bv));
  auto loss0 = sum(exp(concat<0>(b, b * 2.0f)));
  expect_gradient_matches(check_gradient(loss0, b, a = av, b = bv));
}

// reshape from a shape with two extents known only at run time ([n, t, 4] -> [n * t, 4]): its
// gradient is reshape_as(g, x), a copy with x's extents, where no reshape target can name them.
TEST(GradViews, ReshapeFromSeveralUnknownExtents) {
  auto x = placeholder<"x", double, shape<dyn, dyn, 4>>();
  const auto xv = random_tensor<double, shape<dyn, dyn, 4>>({3, 5, 4}, -1, 1, 21);
  const auto w = constant(random_tensor<double, shape<4, 2>>({4, 2}, -1, 1, 22));
  const auto loss = sum(tanh(matmul(reshape<shape<dyn, 4>>(x), w))) + sum(square(reshape<shape<dyn>>(x)) * 0.5);
  expect_gradient_matches(check_gradient(loss, x, x = xv));
  symflow::testing::expect_runtime_gradient_matches(loss, x, xv, 1e-12);  // extents [3, 5, 4] included
  // reshape_as itself: row-major order kept, bits kept, counts checked.
  auto a = placeholder<"a", float, shape<dyn, 3>>();
  auto like = placeholder<"like", std::int32_t, shape<3, dyn>>();
  tensor<float, shape<dyn, 3>> av({2, 3}, 0.f);
  for (std::size_t k = 0; k < 6; ++k) av.data()[k] = float(k) - 2.5f;
  av.data()[4] = -0.0f;
  const auto r = eval(reshape_as(a, like), a = av, like = tensor<std::int32_t, shape<3, dyn>>({3, 2}, 7));
  ASSERT_EQ(r.extent(0), 3u);
  ASSERT_EQ(r.extent(1), 2u);
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(std::bit_cast<std::uint32_t>(r.data()[k]), std::bit_cast<std::uint32_t>(av.data()[k]));
  EXPECT_THROW((void)eval(reshape_as(a, like), a = av, like = tensor<std::int32_t, shape<3, dyn>>({3, 3}, 7)), shape_error);
  // In a graph the counts of unknown extents are compared when the node runs: an error, no read
  // past the operand.
  graph_builder b;
  const auto xa = b.input("xa", dtype::f32, {-1});
  const auto la = b.input("la", dtype::f32, {-1, 2});
  const graph g = b.build({b.apply("reshape_as", {xa, la}, {})});
  runtime_feeds bad;
  bad.insert_or_assign("xa", runtime_tensor(tensor<float, shape<dyn>>({5}, 1.f)));
  bad.insert_or_assign("la", runtime_tensor(tensor<float, shape<dyn, 2>>({3, 2}, 1.f)));
  EXPECT_THROW((void)interpreter(g).run(bad), shape_error);
  bad.insert_or_assign("xa", runtime_tensor(tensor<float, shape<dyn>>({6}, 1.f)));
  EXPECT_EQ(interpreter(g).run(bad)[0].extents(), (std::vector<std::size_t>{3, 2}));
}
