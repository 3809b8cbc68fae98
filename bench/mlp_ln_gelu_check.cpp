// Checks the hand-written LN+GELU MLP step (mlp_ln_gelu_hand.hpp):
//  1. float64 gradients against float64 central finite differences, every parameter entry, on tiny
//     instances with odd sizes;
//  2. the float32 gradients against the float64 ones on the same parameters and data;
//  3. the SGD step: p - lr * g, and the loss goes down for a small rate.
// Prints the maximum relative errors; exit status 0 when all are within their bounds.
//
//   g++ -O2 -std=c++20 -fopenmp -I/usr/include/eigen3 bench/mlp_ln_gelu_check.cpp bench/mlp_ln_gelu_hand.cpp
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "mlp_ln_gelu_hand.hpp"

using namespace mlp_hand;

namespace {

struct data {
  std::vector<double> x;
  std::vector<std::int32_t> y;
};

data random_data(const sizes& s, int batch, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  data d;
  d.x.resize(std::size_t(batch) * s.input);
  for (auto& v : d.x) v = normal(engine);
  for (int r = 0; r < batch; ++r) d.y.push_back(std::int32_t(engine() % std::uint64_t(s.classes)));
  return d;
}

// |a - b| / max(|a|, |b|, floor): relative where the gradient is not tiny, absolute (scaled by floor) where it is.
double rel(double a, double b, double floor) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), floor}); }

bool check(const sizes& s, int batch) {
  std::printf("instance: layers %d, input %d, width %d, classes %d, batch %d\n", s.layers, s.input, s.width,
              s.classes, batch);
  parameters<double> p(s);
  p.init(11);
  p.perturb(12, 0.3);  // gamma, beta and biases away from 1 / 0
  const data d = random_data(s, batch, 13);
  trainer<double> t(s, batch);
  parameters<double> g(s);
  const double L = t.loss_and_gradients(p, d.x.data(), d.y.data(), g);
  std::printf("  loss (float64) %.10f\n", L);

  // 1. central differences, h = 1e-5 (truncation error ~h^2, rounding ~1e-16/h).
  const double h = 1e-5, floor = 1e-6;
  double worst = 0, worst_norm = 0;
  std::string worst_name;
  for (std::size_t k = 0; k < p.tensors.size(); ++k) {
    double diff2 = 0, ref2 = 0;
    for (std::size_t e = 0; e < p.tensors[k].size(); ++e) {
      const double keep = p.tensors[k][e];
      p.tensors[k][e] = keep + h;
      const double up = t.loss(p, d.x.data(), d.y.data());
      p.tensors[k][e] = keep - h;
      const double down = t.loss(p, d.x.data(), d.y.data());
      p.tensors[k][e] = keep;
      const double fd = (up - down) / (2 * h);
      const double r = rel(g.tensors[k][e], fd, floor);
      if (r > worst) worst = r, worst_name = p.name(k) + "[" + std::to_string(e) + "]";
      diff2 += (g.tensors[k][e] - fd) * (g.tensors[k][e] - fd);
      ref2 += fd * fd;
    }
    worst_norm = std::max(worst_norm, std::sqrt(diff2 / std::max(ref2, 1e-300)));
  }
  std::printf("  float64 vs central differences: max elementwise rel. error %.3e (at %s), max per-tensor "
              "||g - fd|| / ||fd|| %.3e\n", worst, worst_name.c_str(), worst_norm);

  // 2. float32 against float64.
  parameters<float> pf(s);
  for (std::size_t k = 0; k < p.tensors.size(); ++k)
    for (std::size_t e = 0; e < p.tensors[k].size(); ++e) pf.tensors[k][e] = float(p.tensors[k][e]);
  std::vector<float> xf(d.x.begin(), d.x.end());
  trainer<float> tf(s, batch);
  parameters<float> gf(s);
  const float Lf = tf.loss_and_gradients(pf, xf.data(), d.y.data(), gf);
  double worst32 = 0, worst32_norm = 0;
  for (std::size_t k = 0; k < p.tensors.size(); ++k) {
    double diff2 = 0, ref2 = 0, gmax = 0;
    for (double v : g.tensors[k]) gmax = std::max(gmax, std::abs(v));
    for (std::size_t e = 0; e < p.tensors[k].size(); ++e) {
      worst32 = std::max(worst32, rel(gf.tensors[k][e], g.tensors[k][e], 1e-3 * gmax + 1e-7));
      diff2 += (gf.tensors[k][e] - g.tensors[k][e]) * (gf.tensors[k][e] - g.tensors[k][e]);
      ref2 += g.tensors[k][e] * g.tensors[k][e];
    }
    worst32_norm = std::max(worst32_norm, std::sqrt(diff2 / std::max(ref2, 1e-300)));
  }
  std::printf("  float32 vs float64: loss rel. error %.3e, max elementwise rel. error %.3e, max per-tensor "
              "norm rel. error %.3e\n", std::abs(Lf - L) / std::abs(L), worst32, worst32_norm);

  // 3. the SGD step.
  parameters<double> q = p;
  const double lr = 1e-2;
  const double L0 = t.sgd_step(q, d.x.data(), d.y.data(), lr);
  double step_err = 0;
  for (std::size_t k = 0; k < p.tensors.size(); ++k)
    for (std::size_t e = 0; e < p.tensors[k].size(); ++e)
      step_err = std::max(step_err, std::abs(q.tensors[k][e] - (p.tensors[k][e] - lr * g.tensors[k][e])));
  const double L1 = t.loss(q, d.x.data(), d.y.data());
  std::printf("  SGD step (lr %.0e): max |p' - (p - lr g)| %.1e, loss %.8f -> %.8f\n", lr, step_err, L0, L1);

  return worst < 1e-6 && worst_norm < 1e-7 && worst32_norm < 1e-4 && step_err < 1e-15 && L1 < L0 && L0 == L;
}

}  // namespace

int main() {
  bool ok = true;
  ok &= check(sizes{.layers = 2, .input = 12, .width = 8, .classes = 10}, 5);
  ok &= check(sizes{.layers = 3, .input = 7, .width = 9, .classes = 3}, 3);
  ok &= check(sizes{.layers = 1, .input = 5, .width = 13, .classes = 7}, 1);
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
