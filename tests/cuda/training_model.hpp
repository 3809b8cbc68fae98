#pragma once
// The training workloads of the GPU suite, built identically by the GPU tests (nvcc) and by their CPU
// references (training_reference.cpp, the C++ compiler):
// - W3: the loss sum(log(1 + exp(-y * (w * x + b)))) and its gradients with respect to w and b;
// - W4: an MLP 784-1024(relu)-10 with softmax cross-entropy on integer labels, and the gradients of
//   its loss with respect to all four parameters (one SGD step is W - lr * dW for each).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>

#include <symflow/core/tensor.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/scope.hpp>
#include <symflow/ops/all.hpp>
#include <symflow/symbolic/gradient.hpp>

namespace symflow_cuda_test::training {
using namespace symflow;

// ||a - b|| / ||b|| over two host tensors (NaN anywhere fails).
template <class A, class B>
double relative_error(const A& a, const B& b) {
  double num = 0, den = 0;
  if (a.size() != b.size()) return INFINITY;
  for (std::size_t k = 0; k < b.size(); ++k) {
    if (std::isnan(double(a.data()[k])) || std::isnan(double(b.data()[k]))) return INFINITY;
    const double d = double(a.data()[k]) - double(b.data()[k]);
    num += d * d;
    den += double(b.data()[k]) * double(b.data()[k]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
inline double relative_error(float a, float b) { return std::abs(double(a) - double(b)) / std::max(1e-30, std::abs(double(b))); }

// Leaves are spelled out: nvcc 13 emits broken host code for a leaf type first formed through an
// alias template with a string parameter.
struct w3_model {
  placeholder<"x", float, shape<dyn>> x = placeholder<"x", float, shape<dyn>>();
  placeholder<"y", float, shape<dyn>> y = placeholder<"y", float, shape<dyn>>();
  variable<"w", float, shape<dyn>> w = variable<"w", float, shape<dyn>>();
  variable<"b", float, shape<>> b = variable<"b", float, shape<>>();
  auto loss() const { return sum(log(1 + exp(-y * (w * x + b)))); }
  auto gradients() const { return grad(loss(), w, b); }
};

inline constexpr std::size_t mlp_inputs = 784, mlp_hidden = 1024, mlp_classes = 10;

struct mlp_model {
  placeholder<"x", float, shape<dyn, 784>> x = placeholder<"x", float, shape<dyn, 784>>();
  placeholder<"y", std::int32_t, shape<dyn>> y = placeholder<"y", std::int32_t, shape<dyn>>();
  variable<"W1", float, shape<784, 1024>> W1 = variable<"W1", float, shape<784, 1024>>();
  variable<"b1", float, shape<1024>> b1 = variable<"b1", float, shape<1024>>();
  variable<"W2", float, shape<1024, 10>> W2 = variable<"W2", float, shape<1024, 10>>();
  variable<"b2", float, shape<10>> b2 = variable<"b2", float, shape<10>>();
  auto loss() const {
    auto h = scope("dense1", [&] { return relu(matmul(x, W1) + b1); });
    auto logits = scope("dense2", [&] { return matmul(h, W2) + b2; });
    return scope("loss", [&] { return -mean(sum(log_softmax(logits) * one_hot<10>(y), axes<1>)); });
  }
  auto gradients() const { return grad(loss(), W1, b1, W2, b2); }
};

struct mlp_params {
  tensor<float, shape<784, 1024>> W1;
  tensor<float, shape<1024>> b1;
  tensor<float, shape<1024, 10>> W2;
  tensor<float, shape<10>> b2;
};
struct mlp_batch {
  tensor<float, shape<dyn, 784>> x;
  tensor<std::int32_t, shape<dyn>> y;
};
struct mlp_gradients {
  float loss = 0;
  tensor<float, shape<784, 1024>> W1;
  tensor<float, shape<1024>> b1;
  tensor<float, shape<1024, 10>> W2;
  tensor<float, shape<10>> b2;
};
struct w3_result {
  float loss = 0;
  tensor<float, shape<dyn>> dw;
  float db = 0;
};

// Random inputs (fresh for every seed): images in [0, 1), labels in [0, 10), weights uniform in
// +-1/sqrt(fan_in), biases small.
mlp_params random_mlp_params(unsigned seed);
mlp_batch random_mlp_batch(std::size_t batch, unsigned seed);

// The CPU backend's answers (training_reference.cpp).
mlp_gradients mlp_gradients_on_cpu(const mlp_params& p, const mlp_batch& b);
w3_result w3_on_cpu(const tensor<float, shape<dyn>>& x, const tensor<float, shape<dyn>>& y,
                    const tensor<float, shape<dyn>>& w, float b);

}  // namespace symflow_cuda_test::training
