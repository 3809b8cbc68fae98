#pragma once
// W4 written by hand with Eigen matrices: one SGD step of the MLP 784-1024(relu)-10 with softmax
// cross-entropy on integer labels, the reference bench/training.cpp measures symflow against.
//
//   h = relu(x W1 + b1);  logits = h W2 + b2;  loss = mean_r(logsumexp(logits_r) - logits_r[y_r])
//   W <- W - lr dW for W1, b1, W2, b2
//
// Row-major Eigen maps over std::vector storage, GEMMs by Eigen, the rest as plain loops. Two
// variants: `separate` computes every gradient into its own matrix and then updates (what PyTorch
// and a user of Eigen write), `accumulate` lets the weight gradients' GEMMs add -lr * dW straight
// into the weights (Eigen's `W.noalias() -= (lr * A) * B`, one GEMM with beta = 1), which only SGD
// permits.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace w4_hand {

inline constexpr int inputs = 784, classes = 10;  // hidden: 1024 for W4, 256 for the examples' MLP

struct parameters {
  int hidden;
  std::vector<float> W1, b1, W2, b2;
  explicit parameters(int hidden_units = 1024);
  void init(std::uint64_t seed);  // uniform weights (1/28, 1/32), biases 0.01
};

class trainer {
 public:
  trainer(int batch, int hidden = 1024);
  // One step; returns the loss before the update.
  float sgd_step(parameters& p, const float* x, const std::int32_t* y, float learning_rate, bool accumulate);

 private:
  int batch_, hidden_;
  std::vector<float> h_, logits_, dlogits_, dh_, dW1_, db1_, dW2_, db2_;
};

// The GEMMs of one step alone (forward x W1 and h W2, backward dlogits W2^T, x^T dh, h^T dlogits):
// the step's matrix-product time, measured on the same shapes.
void gemms_only(int batch, int hidden, const float* x, const parameters& p, std::vector<float>& scratch_h,
                std::vector<float>& scratch_logits, std::vector<float>& scratch_dW1, std::vector<float>& scratch_dW2);

}  // namespace w4_hand
