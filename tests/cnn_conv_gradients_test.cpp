// conv2d's gradients wrt input and filter, and its adjoint ops differentiated again, against
// float64 central differences on random inputs.
#include "cnn_support.hpp"

TEST(CnnGradients, ConvolutionInputAndFilter) {
  const auto x = placeholder<"x", float, any4>();
  const auto w = placeholder<"w", float, any4>();
  auto check = [&](auto conv, extents_t<4> xe, extents_t<4> we, unsigned seed) {
    const auto xv = random_tensor<float, any4>(xe, -1, 1, seed);
    const auto wv = random_tensor<float, any4>(we, -1, 1, seed + 1);
    const auto loss = sum(sin(conv(x, w)));
    expect_gradient_matches(check_gradient(loss, x, x = xv, w = wv));
    expect_gradient_matches(check_gradient(loss, w, x = xv, w = wv));
  };
  check([](const auto& a, const auto& b) { return conv2d<1, padding::same>(a, b); }, {2, 5, 4, 3}, {3, 2, 3, 2}, 300);
  check([](const auto& a, const auto& b) { return conv2d<2, padding::same>(a, b); }, {1, 6, 5, 2}, {3, 3, 2, 3}, 302);
  check([](const auto& a, const auto& b) { return conv2d<2, padding::valid>(a, b); }, {2, 7, 5, 2}, {3, 2, 2, 2}, 304);
  // Dilation and groups: every input tap and every group's block of the filter.
  check([](const auto& a, const auto& b) { return conv2d<1, padding::same, 2>(a, b); }, {2, 6, 5, 2}, {3, 2, 2, 3}, 306);
  check([](const auto& a, const auto& b) { return conv2d<2, padding::valid, 2, 2>(a, b); }, {1, 8, 7, 4}, {2, 3, 2, 4}, 308);
  check([](const auto& a, const auto& b) { return conv2d<1, padding::same, 1, 3>(a, b); }, {2, 4, 5, 3}, {3, 3, 1, 6}, 310);
}

// The adjoints with dilation and groups differentiated again (what hvp through such a layer uses).
TEST(CnnGradients, DilatedGroupedAdjointOpsDifferentiate) {
  const auto g = placeholder<"g", float, any4>();
  const auto w = placeholder<"w", float, any4>();
  const auto x = placeholder<"x", float, any4>();
  const auto gv = random_tensor<float, any4>({2, 5, 4, 4}, -1, 1, 320);  // conv2d<1, same, 2, 2> of [2,5,4,6] by [3,2,3,4]
  const auto wv = random_tensor<float, any4>({3, 2, 3, 4}, -1, 1, 321);
  const auto xv = random_tensor<float, any4>({2, 5, 4, 6}, -1, 1, 322);
  const auto input_adjoint = sum(sin(conv2d_backprop_input<1, padding::same, 2, 2>(g, w, x)));
  expect_gradient_matches(check_gradient(input_adjoint, g, g = gv, w = wv, x = xv));
  expect_gradient_matches(check_gradient(input_adjoint, w, g = gv, w = wv, x = xv));
  const auto filter_adjoint = sum(sin(conv2d_backprop_filter<1, padding::same, 2, 2>(x, g, w)));
  expect_gradient_matches(check_gradient(filter_adjoint, x, g = gv, w = wv, x = xv));
  expect_gradient_matches(check_gradient(filter_adjoint, g, g = gv, w = wv, x = xv));
}

// Second order: the adjoint ops' own rules (what hvp through a CNN uses).
TEST(CnnGradients, ConvolutionAdjointOpsDifferentiate) {
  const auto g = placeholder<"g", float, any4>();
  const auto w = placeholder<"w", float, any4>();
  const auto x = placeholder<"x", float, any4>();
  const auto gv = random_tensor<float, any4>({2, 3, 2, 2}, -1, 1, 310);  // conv2d<2, same> of [2,5,4,3] by [3,3,3,2]
  const auto wv = random_tensor<float, any4>({3, 3, 3, 2}, -1, 1, 311);
  const auto xv = random_tensor<float, any4>({2, 5, 4, 3}, -1, 1, 312);
  const auto input_adjoint = sum(sin(conv2d_backprop_input<2, padding::same>(g, w, x)));
  expect_gradient_matches(check_gradient(input_adjoint, g, g = gv, w = wv, x = xv));
  expect_gradient_matches(check_gradient(input_adjoint, w, g = gv, w = wv, x = xv));
  const auto filter_adjoint = sum(sin(conv2d_backprop_filter<2, padding::same>(x, g, w)));
  expect_gradient_matches(check_gradient(filter_adjoint, x, g = gv, w = wv, x = xv));
  expect_gradient_matches(check_gradient(filter_adjoint, g, g = gv, w = wv, x = xv));
}
