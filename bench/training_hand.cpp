#include "training_hand.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <random>

namespace w4_hand {
namespace {
using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using map = Eigen::Map<matrix>;
using const_map = Eigen::Map<const matrix>;
using row_vector = Eigen::Map<Eigen::RowVectorXf>;
}  // namespace

parameters::parameters(int hidden_units)
    : hidden(hidden_units), W1(std::size_t(inputs) * hidden), b1(hidden), W2(std::size_t(hidden) * classes),
      b2(classes) {}

void parameters::init(std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> u1(-1.0f / 28, 1.0f / 28), u2(-1.0f / 32, 1.0f / 32);
  for (auto& v : W1) v = u1(engine);
  for (auto& v : W2) v = u2(engine);
  std::fill(b1.begin(), b1.end(), 0.01f);
  std::fill(b2.begin(), b2.end(), 0.01f);
}

trainer::trainer(int batch, int hidden)
    : batch_(batch), hidden_(hidden), h_(std::size_t(batch) * hidden), logits_(std::size_t(batch) * classes),
      dlogits_(std::size_t(batch) * classes), dh_(std::size_t(batch) * hidden), dW1_(std::size_t(inputs) * hidden),
      db1_(hidden), dW2_(std::size_t(hidden) * classes), db2_(classes) {}

float trainer::sgd_step(parameters& p, const float* x_data, const std::int32_t* y, float lr, bool accumulate) {
  const int n = batch_, hidden = hidden_;
  const_map x(x_data, n, inputs);
  map W1(p.W1.data(), inputs, hidden), W2(p.W2.data(), hidden, classes);
  map h(h_.data(), n, hidden), logits(logits_.data(), n, classes), dlogits(dlogits_.data(), n, classes),
      dh(dh_.data(), n, hidden);
  // Forward: h = relu(x W1 + b1), logits = h W2 + b2.
  h.noalias() = x * W1;
  for (int r = 0; r < n; ++r) {
    float* row = h_.data() + std::size_t(r) * hidden;
    for (int j = 0; j < hidden; ++j) row[j] = std::max(row[j] + p.b1[j], 0.0f);
  }
  logits.noalias() = h * W2;
  // Loss and dlogits = (softmax(logits) - onehot(y)) / n, one pass per row.
  double loss = 0;
  const float inv_n = 1.0f / float(n);
  for (int r = 0; r < n; ++r) {
    float* z = logits_.data() + std::size_t(r) * classes;
    float* d = dlogits_.data() + std::size_t(r) * classes;
    float m = -INFINITY;
    for (int j = 0; j < classes; ++j) m = std::max(m, z[j] += p.b2[j]);
    float s = 0;
    for (int j = 0; j < classes; ++j) s += (d[j] = std::exp(z[j] - m));
    loss += double(m + std::log(s) - z[y[r]]);
    const float inv_s = inv_n / s;
    for (int j = 0; j < classes; ++j) d[j] *= inv_s;
    d[y[r]] -= inv_n;
  }
  // Backward: dh = (dlogits W2^T) * (h > 0), before W2 changes.
  dh.noalias() = dlogits * W2.transpose();
  for (std::size_t k = 0; k < dh_.size(); ++k)
    if (!(h_[k] > 0)) dh_[k] = 0;
  // Bias gradients: column sums.
  std::fill(db1_.begin(), db1_.end(), 0.0f);
  std::fill(db2_.begin(), db2_.end(), 0.0f);
  for (int r = 0; r < n; ++r) {
    const float* dhr = dh_.data() + std::size_t(r) * hidden;
    for (int j = 0; j < hidden; ++j) db1_[j] += dhr[j];
    const float* dl = dlogits_.data() + std::size_t(r) * classes;
    for (int j = 0; j < classes; ++j) db2_[j] += dl[j];
  }
  if (accumulate) {
    W2.noalias() -= (lr * h.transpose()) * dlogits;
    W1.noalias() -= (lr * x.transpose()) * dh;
  } else {
    map dW1(dW1_.data(), inputs, hidden), dW2(dW2_.data(), hidden, classes);
    dW2.noalias() = h.transpose() * dlogits;
    dW1.noalias() = x.transpose() * dh;
    W1 -= lr * dW1;
    W2 -= lr * dW2;
  }
  for (int j = 0; j < hidden; ++j) p.b1[j] -= lr * db1_[j];
  for (int j = 0; j < classes; ++j) p.b2[j] -= lr * db2_[j];
  return float(loss / n);
}

void gemms_only(int n, int hidden, const float* x_data, const parameters& p, std::vector<float>& h_data,
                std::vector<float>& logits_data, std::vector<float>& dW1_data, std::vector<float>& dW2_data) {
  const_map x(x_data, n, inputs), W1(p.W1.data(), inputs, hidden), W2(p.W2.data(), hidden, classes);
  map h(h_data.data(), n, hidden), logits(logits_data.data(), n, classes), dW1(dW1_data.data(), inputs, hidden),
      dW2(dW2_data.data(), hidden, classes);
  h.noalias() = x * W1;
  logits.noalias() = h * W2;
  dW2.noalias() = h.transpose() * logits;
  h.noalias() = logits * W2.transpose();
  dW1.noalias() = x.transpose() * h;
}

}  // namespace w4_hand
