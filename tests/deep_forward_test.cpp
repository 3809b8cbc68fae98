// A deep model's forward pass through every CPU evaluation entry point (eval with one and several
// outputs, eval_into, fused_update, check_numerics' report) against a float64 reference, and the
// plain_tuple the evaluators hold their operands in.
//
// Six LN+GELU layers, written as users write them (`auto` subexpressions used several times), make a
// type whose tree is exponentially larger than the model: before evaluators and eval's argument
// packs stopped using std::tuple (core/plain_tuple.hpp), g++ took minutes on this file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <symflow/symflow.hpp>
#include <symflow/train/fused_update.hpp>

using namespace symflow;

namespace {

constexpr std::size_t in = 5, width = 6, classes = 3, layers = 6;

// The same model in float64, from the parameters' float values.
struct reference_model {
  std::vector<std::vector<double>> W, b, gamma, beta;  // per layer; W row-major [fan_in, width]
  std::vector<double> Wo, bo;

  std::vector<double> logits(const std::vector<float>& x, std::size_t batch) const {
    std::vector<double> h(x.begin(), x.end());
    std::size_t fan_in = in;
    for (std::size_t l = 0; l < layers; ++l) {
      std::vector<double> next(batch * width);
      for (std::size_t r = 0; r < batch; ++r) {
        double z[width], mu = 0, var = 0;
        for (std::size_t j = 0; j < width; ++j) {
          z[j] = b[l][j];
          for (std::size_t k = 0; k < fan_in; ++k) z[j] += h[r * fan_in + k] * W[l][k * width + j];
          mu += z[j] / width;
        }
        for (std::size_t j = 0; j < width; ++j) var += (z[j] - mu) * (z[j] - mu) / width;
        for (std::size_t j = 0; j < width; ++j) {
          const double u = (z[j] - mu) / std::sqrt(var + 1e-5) * gamma[l][j] + beta[l][j];
          next[r * width + j] = 0.5 * u * (1 + std::tanh(0.7978845608 * (u + 0.044715 * u * u * u)));
        }
      }
      h = std::move(next);
      fan_in = width;
    }
    std::vector<double> out(batch * classes);
    for (std::size_t r = 0; r < batch; ++r)
      for (std::size_t j = 0; j < classes; ++j) {
        out[r * classes + j] = bo[j];
        for (std::size_t k = 0; k < width; ++k) out[r * classes + j] += h[r * width + k] * Wo[k * classes + j];
      }
    return out;
  }
  double loss(const std::vector<double>& logits, const std::vector<std::int32_t>& y) const {
    double total = 0;
    const std::size_t batch = y.size();
    for (std::size_t r = 0; r < batch; ++r) {
      double m = logits[r * classes];
      for (std::size_t j = 1; j < classes; ++j) m = std::max(m, logits[r * classes + j]);
      double s = 0;
      for (std::size_t j = 0; j < classes; ++j) s += std::exp(logits[r * classes + j] - m);
      total += m + std::log(s) - logits[r * classes + y[r]];
    }
    return total / batch;
  }
};

template <class S>
tensor<float, S> random_tensor(std::mt19937& rng, extents_t<S::rank> e, float scale, std::vector<double>& copy) {
  tensor<float, S> t(e, 0.f);
  std::normal_distribution<float> normal(0.f, scale);
  for (auto& v : t) v = normal(rng);
  copy.assign(t.begin(), t.end());
  return t;
}

// Layer l of the model: h = gelu(layer_norm(matmul(h, W) + b) * gamma + beta).
template <class H, class W, class B, class G, class Be>
auto layer(const H& h, const W& Wl, const B& bl, const G& gl, const Be& bel) {
  auto z = matmul(h, Wl) + bl;
  auto mu = mean(z, axes<-1>, keepdims);
  auto c = z - mu;
  auto var = mean(c * c, axes<-1>, keepdims);
  auto n = c * rsqrt(var + 1e-5f);
  auto u = n * gl + bel;
  return 0.5f * u * (1.f + tanh(0.7978845608f * (u + 0.044715f * u * u * u)));
}

}  // namespace

TEST(DeepForward, SixLayerLayerNormGeluMatchesFloat64) {
  auto x = placeholder<"x", float, shape<dyn, in>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W0 = variable<"W0", float, shape<in, width>>();
  auto W1 = variable<"W1", float, shape<width, width>>();
  auto W2 = variable<"W2", float, shape<width, width>>();
  auto W3 = variable<"W3", float, shape<width, width>>();
  auto W4 = variable<"W4", float, shape<width, width>>();
  auto W5 = variable<"W5", float, shape<width, width>>();
  auto b = variable<"b", float, shape<width>>();  // one bias, gamma, beta shared by every layer
  auto gamma = variable<"gamma", float, shape<width>>();
  auto beta = variable<"beta", float, shape<width>>();
  auto Wo = variable<"Wo", float, shape<width, classes>>();
  auto bo = variable<"bo", float, shape<classes>>();

  auto h0 = layer(x, W0, b, gamma, beta);
  auto h1 = layer(h0, W1, b, gamma, beta);
  auto h2 = layer(h1, W2, b, gamma, beta);
  auto h3 = layer(h2, W3, b, gamma, beta);
  auto h4 = layer(h3, W4, b, gamma, beta);
  auto h5 = layer(h4, W5, b, gamma, beta);
  auto logits = matmul(h5, Wo) + bo;
  auto loss = mean(softmax_cross_entropy(logits, y));

  std::mt19937 rng(11);
  reference_model ref;
  ref.W.resize(layers);
  ref.b.resize(layers);
  ref.gamma.resize(layers);
  ref.beta.resize(layers);
  params model;
  model.set("W0", random_tensor<shape<in, width>>(rng, {in, width}, 0.6f, ref.W[0]));
  model.set("W1", random_tensor<shape<width, width>>(rng, {width, width}, 0.5f, ref.W[1]));
  model.set("W2", random_tensor<shape<width, width>>(rng, {width, width}, 0.5f, ref.W[2]));
  model.set("W3", random_tensor<shape<width, width>>(rng, {width, width}, 0.5f, ref.W[3]));
  model.set("W4", random_tensor<shape<width, width>>(rng, {width, width}, 0.5f, ref.W[4]));
  model.set("W5", random_tensor<shape<width, width>>(rng, {width, width}, 0.5f, ref.W[5]));
  std::vector<double> bv, gv, bev;
  model.set("b", random_tensor<shape<width>>(rng, {width}, 0.3f, bv));
  model.set("gamma", random_tensor<shape<width>>(rng, {width}, 1.f, gv));
  model.set("beta", random_tensor<shape<width>>(rng, {width}, 0.3f, bev));
  for (std::size_t l = 0; l < layers; ++l) ref.b[l] = bv, ref.gamma[l] = gv, ref.beta[l] = bev;
  model.set("Wo", random_tensor<shape<width, classes>>(rng, {width, classes}, 0.5f, ref.Wo));
  model.set("bo", random_tensor<shape<classes>>(rng, {classes}, 0.3f, ref.bo));

  const std::size_t batch = 7;  // odd, and not a multiple of any SIMD width
  std::vector<double> xcopy;
  auto xv = random_tensor<shape<dyn, in>>(rng, {batch, in}, 1.f, xcopy);
  tensor<std::int32_t, shape<dyn>> yv({batch}, 0);
  std::vector<std::int32_t> ys(batch);
  for (std::size_t r = 0; r < batch; ++r) yv[r] = ys[r] = std::int32_t(rng() % classes);

  const std::vector<double> want_logits = ref.logits(std::vector<float>(xv.begin(), xv.end()), batch);
  const double want_loss = ref.loss(want_logits, ys);
  auto expect_logits = [&](const auto& got) {
    ASSERT_EQ(got.size(), want_logits.size());
    for (std::size_t i = 0; i < want_logits.size(); ++i) EXPECT_NEAR(got.data()[i], want_logits[i], 1e-4) << i;
  };

  // One output, then several in one evaluation.
  const auto L = eval(loss, x = xv, y = yv, model);
  EXPECT_NEAR(L[0], want_loss, 1e-5 * (1 + std::abs(want_loss)));
  const auto [L2, Z] = eval(loss, logits, x = xv, y = yv, model);
  EXPECT_NEAR(L2[0], want_loss, 1e-5 * (1 + std::abs(want_loss)));
  expect_logits(Z);

  // Into reused tensors: their memory is kept when the extents match.
  tensor<float, shape<>> Lout;
  tensor<float, shape<dyn, classes>> Zout({batch, classes}, 0.f);
  const float* kept = Zout.data();
  eval_into(std::tie(Lout, Zout), loss, logits, x = xv, y = yv, model);
  EXPECT_NEAR(Lout[0], want_loss, 1e-5 * (1 + std::abs(want_loss)));
  expect_logits(Zout);
  EXPECT_EQ(Zout.data(), kept);

  // fused_update writes an elementwise expression of the model into a view.
  tensor<float, shape<dyn, classes>> doubled({batch, classes}, 0.f);
  auto doubled_view = doubled.view();
  fused_update(std::tie(doubled_view), 2.f * logits, x = xv, y = yv, model);
  for (std::size_t i = 0; i < want_logits.size(); ++i) EXPECT_NEAR(doubled.data()[i], 2 * want_logits[i], 2e-4) << i;

  // check_numerics: a NaN input is reported as a numerics_error, not returned.
  auto bad = xv;
  bad.data()[3] = std::nanf("");
  set_check_numerics(true);
  EXPECT_THROW((void)eval(loss, logits, x = bad, y = yv, model), numerics_error);
  set_check_numerics(false);
  const auto [Lnan, Znan] = eval(loss, logits, x = bad, y = yv, model);
  EXPECT_TRUE(std::isnan(Lnan[0]));
  EXPECT_TRUE(std::isnan(Znan.data()[0]));  // row 0 holds the NaN
  EXPECT_FALSE(std::isnan(Znan.data()[classes]));
}

TEST(PlainTuple, HoldsValuesReferencesAndMoveOnlyTypes) {
  auto t = make_plain_tuple(1, 2.5, std::string("three"));
  static_assert(decltype(t)::size == 3);
  static_assert(std::is_same_v<plain_element_t<2, decltype(t)>, std::string>);
  EXPECT_EQ(get<0>(t), 1);
  EXPECT_EQ(get<1>(t), 2.5);
  EXPECT_EQ(get<2>(t), "three");
  get<0>(t) = 4;
  EXPECT_EQ(apply_plain([](int a, double b, const std::string& c) { return a + b + double(c.size()); }, t), 11.5);

  int a = 7;
  const std::string s = "seven";
  const auto refs = tie_plain(a, s);
  a = 8;
  EXPECT_EQ(get<0>(refs), 8);                  // a reference, not a copy
  EXPECT_EQ(&get<1>(refs), &s);

  auto owned = make_plain_tuple(std::make_unique<int>(5));
  auto moved = std::move(owned);
  ASSERT_NE(get<0>(moved), nullptr);
  EXPECT_EQ(*get<0>(moved), 5);
  EXPECT_EQ(get<0>(owned), nullptr);
}
