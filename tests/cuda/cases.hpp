#pragma once
// The expressions the GPU suite checks against the CPU backend: every class the CPU suite covers
// (elementwise ops, broadcasting, reductions over axes, matmul + bias + relu, softmax, views, kernel
// ops). Each case names its leaves, builds its expression from them and gives the runtime extents of
// its inputs (odd sizes on purpose: vector tails, misaligned views, partial blocks).
#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include <symflow/core/tensor.hpp>
#include <symflow/expr/elementwise.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/reduction.hpp>
#include <symflow/expr/structural.hpp>
#include <symflow/ops/all.hpp>
#include <symflow/symbolic/gradient.hpp>

namespace symflow_cuda_test::cases {
using namespace symflow;
using ext = std::vector<std::vector<std::size_t>>;
using range_t = std::pair<double, double>;

// Leaves are spelled out (placeholder<"x", float, shape<dyn>>) rather than through alias templates
// with a string parameter: nvcc 13 emits broken host code for a leaf type first formed through such an
// alias and later spelled out.

// ---- elementwise ------------------------------------------------------------------------------
struct w1 {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>(), placeholder<"c", float, shape<dyn>>(), placeholder<"d", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b, const auto& c, const auto& d) { return a * b + c * sin(d); }
  static ext extents() { return {{100003}, {100003}, {100003}, {100003}}; }
};
struct w2 {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>(), placeholder<"c", float, shape<dyn>>(), placeholder<"d", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b, const auto& c, const auto& d) {
    return tanh(a * b + c) * exp(-d * d) + 0.5 * a;
  }
  static ext extents() { return {{100003}, {100003}, {100003}, {100003}}; }
};
struct w1_large {  // 2^22 + 3 elements: many blocks, vector body and a 3-element tail
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>(), placeholder<"c", float, shape<dyn>>(), placeholder<"d", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b, const auto& c, const auto& d) { return a * b + c * sin(d); }
  static ext extents() {
    const std::size_t n = (std::size_t(1) << 22) + 3;
    return {{n}, {n}, {n}, {n}};
  }
};
struct unary_a {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) {
    return exp(x) + log(abs(x) + 1.0f) + log1p(abs(x)) + sqrt(abs(x)) + rsqrt(abs(x) + 0.5f) + square(x);
  }
  static ext extents() { return {{37, 129}}; }
  static range_t range(std::size_t) { return {-3, 3}; }
};
struct unary_b {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) {
    return sin(x) + cos(x) * tanh(x) + sigmoid(x) - relu(x) + softplus(x) + (-x) * abs(x) + sign(x);
  }
  static ext extents() { return {{129, 37}}; }
  static range_t range(std::size_t) { return {-4, 4}; }
};
struct binary {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b) {
    return a / (abs(b) + 0.25f) + pow(abs(a) + 0.5f, b) + maximum(a, b) - minimum(a, 2.0f * b) + (1.0f - a) / 3.0f;
  }
  static ext extents() { return {{4099}, {4099}}; }
};
struct compare_where {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b) {
    return where(a > b, a, 2.0f * b) + cast<float>(a <= 0.0f) + cast<float>(equal(a, a)) -
           cast<float>(not_equal(a, b)) + where(a < 0.25f, 1.0f, b) + cast<float>(b >= a);
  }
  static ext extents() { return {{5003}, {5003}}; }
};
struct mask_output {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return a * 2.0f > b; }
  static ext extents() { return {{1031}, {1031}}; }
};
struct int_arith {
  static auto leaves() {
    return std::tuple{placeholder<"i", std::int32_t, shape<dyn>>(), placeholder<"j", std::int32_t, shape<dyn>>()};
  }
  static auto build(const auto& i, const auto& j) { return i * j + 3 - maximum(i, j) + cast<std::int32_t>(i > j); }
  static ext extents() { return {{2053}, {2053}}; }
  static range_t range(std::size_t) { return {-1000, 1000}; }
};
struct int64_cast {
  static auto leaves() { return std::tuple{placeholder<"i", std::int64_t, shape<dyn>>(), placeholder<"x", float, shape<dyn>>()}; }
  static auto build(const auto& i, const auto& x) { return cast<double>(i) * cast<double>(x) + cast<double>(i * 2); }
  static ext extents() { return {{999}, {999}}; }
  static range_t range(std::size_t leaf) { return leaf == 0 ? range_t{-100000, 100000} : range_t{-1, 1}; }
};
struct w2_double {
  static auto leaves() {
    return std::tuple{placeholder<"a", double, shape<dyn>>(), placeholder<"b", double, shape<dyn>>(),
                      placeholder<"c", double, shape<dyn>>(), placeholder<"d", double, shape<dyn>>()};
  }
  static auto build(const auto& a, const auto& b, const auto& c, const auto& d) {
    return tanh(a * b + c) * exp(-d * d) + 0.5 * a;
  }
  static ext extents() { return {{10007}, {10007}, {10007}, {10007}}; }
};

// ---- broadcasting -----------------------------------------------------------------------------
struct broadcast_rows {  // [M,N] + [N] + [1,N]
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn>>(),
                      placeholder<"c", float, shape<1, dyn>>()};
  }
  static auto build(const auto& x, const auto& b, const auto& c) { return x * b + c; }
  static ext extents() { return {{301, 67}, {67}, {1, 67}}; }
};
struct broadcast_cols {  // [M,N] * [M,1] + scalar leaf
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn>>(), placeholder<"m", float, shape<dyn, 1>>(), placeholder<"s", float, shape<>>()};
  }
  static auto build(const auto& x, const auto& m, const auto& s) { return x * m + s * 3.0f; }
  static ext extents() { return {{257, 33}, {257, 1}, {}}; }
};
struct broadcast_3d {  // [B,1,N] * [M,1] -> [B,M,N]
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<dyn, 1, dyn>>(), placeholder<"b", float, shape<dyn, 1>>()};
  }
  static auto build(const auto& a, const auto& b) { return a * b - b; }
  static ext extents() { return {{5, 1, 63}, {17, 1}}; }
};
struct scalar_result {
  static auto leaves() {
    return std::tuple{placeholder<"s", float, shape<>>(), placeholder<"t", float, shape<>>()};
  }
  static auto build(const auto& s, const auto& t) { return s * t + exp(s) - 2.0f; }
  static ext extents() { return {{}, {}}; }
};

// ---- reductions -------------------------------------------------------------------------------
struct sum_all {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn>>()}; }
  static auto build(const auto& x) { return sum(x); }
  static ext extents() { return {{(std::size_t(1) << 20) + 7}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct mean_all_fused {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return mean(a * b + 1.0f); }
  static ext extents() { return {{300007}, {300007}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct max_min_all {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return symflow::max(x) - symflow::min(x) * 2.0f; }
  static ext extents() { return {{513, 257}}; }
};
struct sum_rows {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return sum(x, axes<1>); }
  static ext extents() { return {{1000, 300}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct sum_long_rows {  // few outputs, long rows: chunks and partials
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return sum(x, axes<-1>, keepdims); }
  static ext extents() { return {{3, 200003}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct sum_cols {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return sum(x, axes<0>); }
  static ext extents() { return {{3001, 129}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct mean_02 {  // reduce axes 0 and 2 of a rank-3 operand (non-adjacent reduced axes)
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn>>()}; }
  static auto build(const auto& x) { return mean(x * x, axes<0, 2>); }
  static ext extents() { return {{7, 33, 65}}; }
};
struct max_axis0_keep {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn>>()}; }
  static auto build(const auto& x) { return symflow::max(x, axes<0>, keepdims) + symflow::min(x, axes<1>, keepdims); }
  static ext extents() { return {{9, 17, 31}}; }
};
struct fused_row_reduce {
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>(),
                      placeholder<"c", float, shape<dyn>>()};
  }
  static auto build(const auto& a, const auto& b, const auto& c) { return sum(a * b + c, axes<1>); }
  static ext extents() { return {{513, 4097}, {513, 4097}, {4097}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct reduce_of_view {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return sum(transpose(x), axes<1>) + mean(x, axes<1>); }
  static ext extents() { return {{211, 211}}; }
  static range_t range(std::size_t) { return {0.5, 1.5}; }
};
struct int_sum {
  static auto leaves() { return std::tuple{placeholder<"i", std::int32_t, shape<dyn, dyn>>()}; }
  static auto build(const auto& i) { return sum(i, axes<0>) + symflow::max(i, axes<0>); }
  static ext extents() { return {{1001, 77}}; }
  static range_t range(std::size_t) { return {-100, 100}; }
};

// ---- matmul -----------------------------------------------------------------------------------
struct dense_relu {  // relu(x W + b): one cuBLASLt GEMM with a bias + relu epilogue (an output)
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 96>>(), variable<"W", float, shape<96, 40>>(),
                      variable<"b", float, shape<40>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x, W) + b); }
  static ext extents() { return {{257, 96}, {96, 40}, {40}}; }
};
struct matmul_batched {
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<dyn, dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn, dyn>>()};
  }
  static auto build(const auto& a, const auto& b) { return matmul(a, b); }
  static ext extents() { return {{4, 33, 65}, {4, 65, 17}}; }
};
struct matmul_3x2 {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn, dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return matmul(a, b) * 2.0f; }
  static ext extents() { return {{3, 31, 64}, {64, 19}}; }
};
struct matmul_transposed {  // transposed operands are handed to cuBLAS as column-major, no copy
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return matmul(transpose(a), b) + matmul(transpose(a), transpose(transpose(b))); }
  static ext extents() { return {{70, 45}, {70, 23}}; }
};
struct matmul_strided {  // a slice (rows) and a computed operand
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return matmul(slice(a, 3, 40), b * 2.0f + 1.0f); }
  static ext extents() { return {{50, 32}, {32, 24}}; }
};
struct matmul_double {
  static auto leaves() {
    return std::tuple{placeholder<"a", double, shape<dyn, dyn>>(), placeholder<"b", double, shape<dyn, dyn>>()};
  }
  static auto build(const auto& a, const auto& b) { return matmul(a, b); }
  static ext extents() { return {{65, 129}, {129, 33}}; }
};
struct matmul_tf32 {  // opt-in TF32: documented tolerance 5e-3
  static constexpr bool allow_tf32 = true;
  static constexpr double tolerance = 5e-3;
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return matmul(a, b); }
  static ext extents() { return {{256, 512}, {512, 128}}; }
};

// ---- softmax and friends ----------------------------------------------------------------------
struct softmax_rows {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return softmax(x); }
  static ext extents() { return {{1000, 10}}; }
  static range_t range(std::size_t) { return {-5, 5}; }
};
struct log_softmax_rows {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return log_softmax(x) + 1.0f; }
  static ext extents() { return {{129, 3001}}; }
  static range_t range(std::size_t) { return {-5, 5}; }
};
struct logsumexp_rows {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return logsumexp(x); }
  static ext extents() { return {{333, 77}}; }
  static range_t range(std::size_t) { return {-5, 5}; }
};
struct softmax_axis0 {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return softmax(x, axes<0>); }
  static ext extents() { return {{65, 300}}; }
  static range_t range(std::size_t) { return {-5, 5}; }
};
struct cross_entropy {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 32>>(), variable<"W", float, shape<32, 10>>(),
                      placeholder<"y", std::int32_t, shape<dyn>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& y) {
    return mean(sum(-log_softmax(matmul(x, W)) * one_hot<10>(y), axes<1>));
  }
  static ext extents() { return {{300, 32}, {32, 10}, {300}}; }
  static range_t range(std::size_t leaf) { return leaf == 2 ? range_t{0, 9} : range_t{-1, 1}; }
};

// ---- views and kernel ops ---------------------------------------------------------------------
struct transpose_scale {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return transpose(x) * 2.0f + 1.0f; }
  static ext extents() { return {{123, 77}}; }
};
struct permute3 {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn>>()}; }
  static auto build(const auto& x) { return permute<2, 0, 1>(x) + 1.0f; }
  static ext extents() { return {{5, 17, 29}}; }
};
struct reshape_computed {  // reshape needs a contiguous operand: the product is materialised first
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return reshape<shape<dyn, 4>>(transpose(x) * 2.0f) + 1.0f; }
  static ext extents() { return {{16, 9}}; }
};
struct flatten_leaf {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, 3, 5>>()}; }
  static auto build(const auto& x) { return flatten(x) * 3.0f; }
  static ext extents() { return {{11, 3, 5}}; }
};
struct slice_rows {  // an offset of one row of 33 floats: not 16-byte aligned, strided path
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>(), placeholder<"y", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x, const auto& y) { return slice(x, 1, 90) * 3.0f + slice(y, 10, 99); }
  static ext extents() { return {{100, 33}, {120, 33}}; }
};
struct concat_axis1 {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return concat<1>(a, b * 2.0f, a) + 1.0f; }
  static ext extents() { return {{37, 5}, {37, 11}}; }
};
struct concat_axis0 {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn, dyn>>(), placeholder<"b", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& a, const auto& b) { return concat<0>(a, transpose(b)); }
  static ext extents() { return {{7, 13}, {13, 9}}; }
};
struct one_hot_float {
  static auto leaves() { return std::tuple{placeholder<"y", std::int32_t, shape<dyn>>()}; }
  static auto build(const auto& y) { return one_hot<12>(y) * 2.0f; }
  static ext extents() { return {{777}}; }
  static range_t range(std::size_t) { return {-2, 13}; }  // out-of-range labels give rows of zeros
};
struct leaf_copy {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return x; }
  static ext extents() { return {{19, 23}}; }
};

// ---- gradients: symbolic grad's expressions run through cuda::eval unchanged --------------------
struct grad_dense_W {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 16>>(), variable<"W", float, shape<16, 8>>(),
                      variable<"b", float, shape<8>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) {
    return grad(mean(square(relu(matmul(x, W) + b))), W);
  }
  static ext extents() { return {{300, 16}, {16, 8}, {8}}; }
};
struct grad_dense_b {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 16>>(), variable<"W", float, shape<16, 8>>(),
                      variable<"b", float, shape<8>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) {
    return grad(mean(square(relu(matmul(x, W) + b))), b);
  }
  static ext extents() { return {{300, 16}, {16, 8}, {8}}; }
};
struct grad_cross_entropy_W {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 32>>(), variable<"W", float, shape<32, 10>>(),
                      variable<"b", float, shape<10>>(), placeholder<"y", std::int32_t, shape<dyn>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b, const auto& y) {
    return grad(mean(sum(-log_softmax(matmul(x, W) + b) * one_hot<10>(y), axes<1>)), W);
  }
  static ext extents() { return {{257, 32}, {32, 10}, {10}, {257}}; }
  static range_t range(std::size_t leaf) { return leaf == 3 ? range_t{0, 9} : range_t{-1, 1}; }
};
struct grad_cross_entropy_x {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 32>>(), variable<"W", float, shape<32, 10>>(),
                      variable<"b", float, shape<10>>(), placeholder<"y", std::int32_t, shape<dyn>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b, const auto& y) {
    return grad(mean(sum(-log_softmax(matmul(x, W) + b) * one_hot<10>(y), axes<1>)), x);
  }
  static ext extents() { return {{257, 32}, {32, 10}, {10}, {257}}; }
  static range_t range(std::size_t leaf) { return leaf == 3 ? range_t{0, 9} : range_t{-1, 1}; }
};
struct grad_w2_a {  // the elementwise gradient of sum(W2) with respect to a
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>(),
                      placeholder<"c", float, shape<dyn>>(), placeholder<"d", float, shape<dyn>>()};
  }
  static auto build(const auto& a, const auto& b, const auto& c, const auto& d) {
    return grad(sum(tanh(a * b + c) * exp(-d * d) + 0.5 * a), a);
  }
  static ext extents() { return {{100003}, {100003}, {100003}, {100003}}; }
};

}  // namespace symflow_cuda_test::cases

#define SYMFLOW_CUDA_GRADIENT_CASES(X) \
  X(grad_dense_W) X(grad_dense_b) X(grad_cross_entropy_W) X(grad_cross_entropy_x) X(grad_w2_a)

#define SYMFLOW_CUDA_ELEMENTWISE_CASES(X)                                                                  \
  X(w1) X(w2) X(w1_large) X(unary_a) X(unary_b) X(binary) X(compare_where) X(mask_output) X(int_arith)     \
  X(int64_cast) X(w2_double) X(broadcast_rows) X(broadcast_cols) X(broadcast_3d) X(scalar_result)
#define SYMFLOW_CUDA_STRUCTURE_CASES(X)                                                                    \
  X(sum_all) X(mean_all_fused) X(max_min_all) X(sum_rows) X(sum_long_rows) X(sum_cols) X(mean_02)          \
  X(max_axis0_keep) X(fused_row_reduce) X(reduce_of_view) X(int_sum) X(dense_relu) X(matmul_batched)       \
  X(matmul_3x2) X(matmul_transposed) X(matmul_strided) X(matmul_double) X(matmul_tf32) X(softmax_rows)     \
  X(log_softmax_rows) X(logsumexp_rows) X(softmax_axis0) X(cross_entropy) X(transpose_scale) X(permute3)   \
  X(reshape_computed) X(flatten_leaf) X(slice_rows) X(concat_axis1) X(concat_axis0) X(one_hot_float)      \
  X(leaf_copy)
