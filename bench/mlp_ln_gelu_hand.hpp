#pragma once
// A hand-written training step of the N-layer LN+GELU MLP (bench/compile/gen_mlp.py's model), the
// reference that symflow's compiled gradient is measured against:
//
//   h_0 = x;  for i < N:  h_{i+1} = gelu(layer_norm(h_i W_i + b_i) * gamma_i + beta_i)
//   logits = h_N Wo + bo;  loss = mean_r(logsumexp(logits_r) - logits_r[y_r])
//
// layer_norm(z) = (z - mean(z)) * rsqrt(mean((z - mean(z))^2) + 1e-5) per row, and
// gelu(u) = 0.5 u (1 + tanh(0.7978845608 (u + 0.044715 u^3))), as in the generated symflow model.
// GEMMs are Eigen's (row-major maps); layer norm, GELU and the loss are hand-written loops, forward
// and backward, parallel over rows with OpenMP. Templated on the scalar so that a float64 instance
// checks the float32 one and finite differences (bench/mlp_ln_gelu_check.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mlp_hand {

struct sizes {
  int layers = 4, input = 784, width = 256, classes = 10;
};

// Parameters (or gradients), row-major, in gen_mlp.py's variable order:
// W0 [input x width], b0, gamma0, beta0 [width], W1 [width x width], ..., Wo [width x classes], bo.
template <class Real>
struct parameters {
  sizes dims;
  std::vector<std::vector<Real>> tensors;

  explicit parameters(const sizes& s);
  std::vector<Real>& W(int i) { return tensors[4 * i]; }
  std::vector<Real>& b(int i) { return tensors[4 * i + 1]; }
  std::vector<Real>& gamma(int i) { return tensors[4 * i + 2]; }
  std::vector<Real>& beta(int i) { return tensors[4 * i + 3]; }
  std::vector<Real>& Wo() { return tensors[4 * dims.layers]; }
  std::vector<Real>& bo() { return tensors[4 * dims.layers + 1]; }
  const std::vector<Real>& W(int i) const { return tensors[4 * i]; }
  const std::vector<Real>& b(int i) const { return tensors[4 * i + 1]; }
  const std::vector<Real>& gamma(int i) const { return tensors[4 * i + 2]; }
  const std::vector<Real>& beta(int i) const { return tensors[4 * i + 3]; }
  const std::vector<Real>& Wo() const { return tensors[4 * dims.layers]; }
  const std::vector<Real>& bo() const { return tensors[4 * dims.layers + 1]; }

  // He-normal weights (glorot-uniform for Wo), zero biases and beta, gamma 1 — gen_mlp.py's
  // initialisers (same distributions; not the same random numbers as symflow's sampler).
  void init(std::uint64_t seed);
  // Every entry drawn from N(0, scale^2) around its init value: for gradient checks, so that
  // gamma, beta and the biases are not at special points.
  void perturb(std::uint64_t seed, double scale);
  std::string name(std::size_t k) const;
};

// The activations one step keeps for its backward pass, sized for a batch.
template <class Real>
class trainer {
 public:
  trainer(const sizes& s, int batch);
  // Loss and the gradients of every parameter (grads is overwritten).
  Real loss_and_gradients(const parameters<Real>& p, const Real* x, const std::int32_t* y,
                          parameters<Real>& grads);
  // The loss only.
  Real loss(const parameters<Real>& p, const Real* x, const std::int32_t* y);
  // One training step: loss_and_gradients, then p -= learning_rate * grads. Returns the loss.
  Real sgd_step(parameters<Real>& p, const Real* x, const std::int32_t* y, Real learning_rate);

 private:
  Real forward(const parameters<Real>& p, const Real* x, const std::int32_t* y);
  sizes dims_;
  int batch_;
  // Per layer: normalised xhat [batch x width], 1/std per row [batch], u = xhat*gamma+beta, h = gelu(u).
  std::vector<std::vector<Real>> xhat_, rstd_, u_, h_;
  std::vector<Real> probs_;       // softmax of the logits [batch x classes]
  std::vector<Real> dz_, dh_;     // [batch x width] scratch of the backward pass
  parameters<Real> grads_;        // sgd_step's gradients
};

}  // namespace mlp_hand
