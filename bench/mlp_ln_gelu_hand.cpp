// The hand-written LN+GELU MLP training step (see mlp_ln_gelu_hand.hpp).
#include "mlp_ln_gelu_hand.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace mlp_hand {
namespace {

template <class Real>
using matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class Real>
using map = Eigen::Map<matrix<Real>>;
template <class Real>
using cmap = Eigen::Map<const matrix<Real>>;

constexpr double ln_eps = 1e-5, gelu_k = 0.7978845608, gelu_a = 0.044715;

// Column sums of a row-major [rows x cols] block, added into out.
template <class Real>
void add_column_sums(const Real* m, int rows, int cols, Real* out) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) out[j] += m[std::size_t(r) * cols + j];
}

}  // namespace

template <class Real>
parameters<Real>::parameters(const sizes& s) : dims(s) {
  for (int i = 0; i < s.layers; ++i) {
    const int fan_in = i == 0 ? s.input : s.width;
    tensors.emplace_back(std::size_t(fan_in) * s.width, Real(0));
    for (int k = 0; k < 3; ++k) tensors.emplace_back(std::size_t(s.width), Real(0));
  }
  tensors.emplace_back(std::size_t(s.width) * s.classes, Real(0));
  tensors.emplace_back(std::size_t(s.classes), Real(0));
}

template <class Real>
void parameters<Real>::init(std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  for (int i = 0; i < dims.layers; ++i) {
    const int fan_in = i == 0 ? dims.input : dims.width;
    const double scale = std::sqrt(2.0 / fan_in);
    for (auto& v : W(i)) v = Real(scale * normal(engine));
    std::fill(b(i).begin(), b(i).end(), Real(0));
    std::fill(gamma(i).begin(), gamma(i).end(), Real(1));
    std::fill(beta(i).begin(), beta(i).end(), Real(0));
  }
  const double limit = std::sqrt(6.0 / (dims.width + dims.classes));
  std::uniform_real_distribution<double> uniform(-limit, limit);
  for (auto& v : Wo()) v = Real(uniform(engine));
  std::fill(bo().begin(), bo().end(), Real(0));
}

template <class Real>
void parameters<Real>::perturb(std::uint64_t seed, double scale) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  for (auto& t : tensors)
    for (auto& v : t) v = Real(double(v) + scale * normal(engine));
}

template <class Real>
std::string parameters<Real>::name(std::size_t k) const {
  const std::size_t n = std::size_t(dims.layers);
  if (k == 4 * n) return "Wo";
  if (k == 4 * n + 1) return "bo";
  static const char* kinds[] = {"W", "b", "gamma", "beta"};
  return kinds[k % 4] + std::to_string(k / 4);
}

template <class Real>
trainer<Real>::trainer(const sizes& s, int batch) : dims_(s), batch_(batch), grads_(s) {
  const std::size_t bw = std::size_t(batch) * s.width;
  for (int i = 0; i < s.layers; ++i) {
    xhat_.emplace_back(bw);
    rstd_.emplace_back(std::size_t(batch));
    u_.emplace_back(bw);
    h_.emplace_back(bw);
  }
  probs_.resize(std::size_t(batch) * s.classes);
  dz_.resize(bw);
  dh_.resize(bw);
}

template <class Real>
Real trainer<Real>::forward(const parameters<Real>& p, const Real* x, const std::int32_t* y) {
  const int B = batch_, Wd = dims_.width, C = dims_.classes;
  const Real* in = x;
  int fan_in = dims_.input;
  for (int i = 0; i < dims_.layers; ++i) {
    // z = h W (into u_, overwritten below), then per row: + b, layer norm, * gamma + beta, gelu.
    map<Real> z(u_[i].data(), B, Wd);
    z.noalias() = cmap<Real>(in, B, fan_in) * cmap<Real>(p.W(i).data(), fan_in, Wd);
    const Real* b = p.b(i).data();
    const Real* g = p.gamma(i).data();
    const Real* be = p.beta(i).data();
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B; ++r) {
      Real* zr = u_[i].data() + std::size_t(r) * Wd;
      Real* xr = xhat_[i].data() + std::size_t(r) * Wd;
      Real* hr = h_[i].data() + std::size_t(r) * Wd;
      Real mean = 0;
      for (int j = 0; j < Wd; ++j) {
        zr[j] += b[j];
        mean += zr[j];
      }
      mean /= Real(Wd);
      Real var = 0;
      for (int j = 0; j < Wd; ++j) {
        const Real c = zr[j] - mean;
        var += c * c;
      }
      var /= Real(Wd);
      const Real rstd = Real(1) / std::sqrt(var + Real(ln_eps));
      rstd_[i][r] = rstd;
      for (int j = 0; j < Wd; ++j) {
        const Real xh = (zr[j] - mean) * rstd;
        const Real u = xh * g[j] + be[j];
        xr[j] = xh;
        zr[j] = u;
        hr[j] = Real(0.5) * u * (Real(1) + std::tanh(Real(gelu_k) * (u + Real(gelu_a) * u * u * u)));
      }
    }
    in = h_[i].data();
    fan_in = Wd;
  }
  // logits (into probs_), softmax and the cross-entropy per row.
  map<Real> logits(probs_.data(), B, C);
  logits.noalias() = cmap<Real>(in, B, fan_in) * cmap<Real>(p.Wo().data(), fan_in, C);
  const Real* bo = p.bo().data();
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int r = 0; r < B; ++r) {
    Real* lr = probs_.data() + std::size_t(r) * C;
    Real m = std::numeric_limits<Real>::lowest();
    for (int k = 0; k < C; ++k) {
      lr[k] += bo[k];
      m = std::max(m, lr[k]);
    }
    Real s = 0;
    for (int k = 0; k < C; ++k) s += std::exp(lr[k] - m);
    const Real lse = m + std::log(s);
    total += double(lse - lr[y[r]]);
    for (int k = 0; k < C; ++k) lr[k] = std::exp(lr[k] - lse);
  }
  return Real(total / B);
}

template <class Real>
Real trainer<Real>::loss(const parameters<Real>& p, const Real* x, const std::int32_t* y) {
  return forward(p, x, y);
}

template <class Real>
Real trainer<Real>::loss_and_gradients(const parameters<Real>& p, const Real* x, const std::int32_t* y,
                                       parameters<Real>& grads) {
  const Real L = forward(p, x, y);
  const int B = batch_, Wd = dims_.width, C = dims_.classes, N = dims_.layers;
  // dlogits = (softmax - onehot) / B, in place over probs_.
  for (int r = 0; r < B; ++r) {
    Real* pr = probs_.data() + std::size_t(r) * C;
    pr[y[r]] -= Real(1);
    for (int k = 0; k < C; ++k) pr[k] /= Real(B);
  }
  const cmap<Real> dlogits(probs_.data(), B, C);
  const Real* hN = N > 0 ? h_[N - 1].data() : x;
  const int fanN = N > 0 ? Wd : dims_.input;
  map<Real>(grads.Wo().data(), fanN, C).noalias() = cmap<Real>(hN, B, fanN).transpose() * dlogits;
  std::fill(grads.bo().begin(), grads.bo().end(), Real(0));
  add_column_sums(probs_.data(), B, C, grads.bo().data());
  if (N == 0) return L;
  map<Real>(dh_.data(), B, Wd).noalias() = dlogits * cmap<Real>(p.Wo().data(), Wd, C).transpose();

  for (int i = N - 1; i >= 0; --i) {
    const Real* g = p.gamma(i).data();
    Real* dgamma = grads.gamma(i).data();
    Real* dbeta = grads.beta(i).data();
    std::fill(dgamma, dgamma + Wd, Real(0));
    std::fill(dbeta, dbeta + Wd, Real(0));
    // Per row: du = dh * gelu'(u); dxhat = du * gamma; dz = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)).
    // dz_ holds du first (for the gamma/beta sums), then dz.
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B; ++r) {
      const Real* ur = u_[i].data() + std::size_t(r) * Wd;
      const Real* dhr = dh_.data() + std::size_t(r) * Wd;
      Real* dur = dz_.data() + std::size_t(r) * Wd;
      for (int j = 0; j < Wd; ++j) {
        const Real u = ur[j];
        const Real t = std::tanh(Real(gelu_k) * (u + Real(gelu_a) * u * u * u));
        const Real dgelu = Real(0.5) * (Real(1) + t) +
                           Real(0.5) * u * (Real(1) - t * t) * Real(gelu_k) * (Real(1) + Real(3 * gelu_a) * u * u);
        dur[j] = dhr[j] * dgelu;
      }
    }
    for (int r = 0; r < B; ++r) {
      const Real* dur = dz_.data() + std::size_t(r) * Wd;
      const Real* xr = xhat_[i].data() + std::size_t(r) * Wd;
      for (int j = 0; j < Wd; ++j) {
        dgamma[j] += dur[j] * xr[j];
        dbeta[j] += dur[j];
      }
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B; ++r) {
      Real* dzr = dz_.data() + std::size_t(r) * Wd;
      const Real* xr = xhat_[i].data() + std::size_t(r) * Wd;
      Real mean_d = 0, mean_dx = 0;
      for (int j = 0; j < Wd; ++j) {
        const Real dx = dzr[j] * g[j];
        mean_d += dx;
        mean_dx += dx * xr[j];
      }
      mean_d /= Real(Wd);
      mean_dx /= Real(Wd);
      const Real rstd = rstd_[i][r];
      for (int j = 0; j < Wd; ++j) dzr[j] = rstd * (dzr[j] * g[j] - mean_d - xr[j] * mean_dx);
    }
    const int fan_in = i == 0 ? dims_.input : Wd;
    const Real* in = i == 0 ? x : h_[i - 1].data();
    const cmap<Real> dz(dz_.data(), B, Wd);
    map<Real>(grads.W(i).data(), fan_in, Wd).noalias() = cmap<Real>(in, B, fan_in).transpose() * dz;
    std::fill(grads.b(i).begin(), grads.b(i).end(), Real(0));
    add_column_sums(dz_.data(), B, Wd, grads.b(i).data());
    if (i > 0) map<Real>(dh_.data(), B, Wd).noalias() = dz * cmap<Real>(p.W(i).data(), Wd, Wd).transpose();
  }
  return L;
}

template <class Real>
Real trainer<Real>::sgd_step(parameters<Real>& p, const Real* x, const std::int32_t* y, Real learning_rate) {
  const Real L = loss_and_gradients(p, x, y, grads_);
  for (std::size_t k = 0; k < p.tensors.size(); ++k) {
    Real* w = p.tensors[k].data();
    const Real* g = grads_.tensors[k].data();
    const std::size_t n = p.tensors[k].size();
#pragma omp parallel for simd schedule(static) if (n > 16384)
    for (std::size_t e = 0; e < n; ++e) w[e] -= learning_rate * g[e];
  }
  return L;
}

template struct parameters<float>;
template struct parameters<double>;
template class trainer<float>;
template class trainer<double>;

}  // namespace mlp_hand
