// nn::trainer (nn/trainer.hpp): one step against the closed-form gradient of a least-squares loss in
// float64, clipping to a global norm, NaN gradients, per-step seeds for a loss with dropout, extra
// outputs evaluated in the step's pass, and restoring a saved model and optimiser state.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

namespace {
using namespace symflow;

constexpr std::size_t rows = 9, in = 5, out = 3;

template <class S>
tensor<double, S> random_values(std::array<std::size_t, S::rank> e, unsigned seed) {
  tensor<double, S> t(e, uninitialized);
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, 1);
  for (auto& v : t) v = n(rng);
  return t;
}

struct regression {
  placeholder<"x", double, shape<dyn, in>> x;
  placeholder<"t", double, shape<dyn, out>> t;
  nn::dense<"fit", in, out, double> layer{{.bias = normal_init{0, 1}}};
  tensor<double, shape<dyn, in>> xv = random_values<shape<dyn, in>>({rows, in}, 1);
  tensor<double, shape<dyn, out>> tv = random_values<shape<dyn, out>>({rows, out}, 2);
  auto loss() const { return mean(square(layer(x) - t)); }

  // d/dW and d/db of mean((xW + b - t)^2) over rows * out elements, from the stored values.
  void closed_form(const params& p, std::vector<double>& dW, std::vector<double>& db) const {
    const auto W = p.view<double, shape<in, out>>("fit/W");
    const auto b = p.view<double, shape<out>>("fit/b");
    dW.assign(in * out, 0);
    db.assign(out, 0);
    const double scale = 2.0 / double(rows * out);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < out; ++j) {
        double residual = b(j) - tv(r, j);
        for (std::size_t k = 0; k < in; ++k) residual += xv(r, k) * W(k, j);
        for (std::size_t k = 0; k < in; ++k) dW[k * out + j] += scale * residual * xv(r, k);
        db[j] += scale * residual;
      }
  }
};

std::vector<double> values(const params& p, const std::string& name) {
  const auto& e = p.at(name);
  std::vector<double> v(e.bytes.size() / sizeof(double));
  std::memcpy(v.data(), e.bytes.data(), e.bytes.size());
  return v;
}

TEST(NnTrainer, SgdStepIsTheClosedFormGradientStep) {
  regression m;
  nn::trainer train(m.loss(), nn::parameters(m.layer), sgd({.learning_rate = 0.1}), {.seed = 5, .keep_gradients = true});
  const params before = train.model();
  std::vector<double> dW, db;
  m.closed_form(before, dW, db);
  const double loss = train.step(m.x = m.xv, m.t = m.tv);
  EXPECT_NEAR(loss, eval(m.loss(), m.x = m.xv, m.t = m.tv, before)[0], 1e-14);
  const auto W0 = values(before, "fit/W"), W1 = values(train.model(), "fit/W");
  const auto b0 = values(before, "fit/b"), b1 = values(train.model(), "fit/b");
  for (std::size_t i = 0; i < W0.size(); ++i) EXPECT_NEAR(W1[i], W0[i] - 0.1 * dW[i], 1e-14) << i;
  for (std::size_t i = 0; i < b0.size(); ++i) EXPECT_NEAR(b1[i], b0[i] - 0.1 * db[i], 1e-14) << i;
  double norm = 0;
  for (double g : dW) norm += g * g;
  for (double g : db) norm += g * g;
  EXPECT_NEAR(train.last_gradient_norm(), std::sqrt(norm), 1e-12);
  EXPECT_EQ(train.step_count(), 1u);
}

// A dense layer's weight is updated inside its gradient's product unless the gradients are kept:
// SGD adds -lr times the product in its GEMM, Adam and momentum run their rule over each block of
// rows of the product as it is computed. The same parameters and optimiser state, bit for bit after
// every step (the GEMM's accumulator is the gradient either way, and the rules are elementwise, the
// blocks aligned to the SIMD lanes), float and double, odd extents (packet tails), a -0 input. The
// hidden layer's weight gradient (301 x 1031) is five blocks of rows (64, 64, 64, 64, 45) spread over the
// threads; the output layer's one block. The batch (64) lies within one depth block of Eigen's GEMM, where the
// blocks' sums are the whole product's (matmul::run_cpu_rows).
template <class T>
struct two_layer {
  static constexpr std::size_t inputs = 301, hidden = 1031, classes = 5, batch = 64;
  placeholder<"x", T, shape<dyn, inputs>> x;
  placeholder<"y", std::int32_t, shape<dyn>> y;
  nn::dense<"hidden", inputs, hidden, T> first;
  nn::dense<"out", hidden, classes, T> second;
  auto loss() const { return mean(softmax_cross_entropy(second(relu(first(x))), y)); }
};

std::size_t differing_elements(const params& a, const params& b, const std::string& name, std::size_t size) {
  const auto& ea = a.at(name);
  const auto& eb = b.at(name);
  if (ea.bytes.size() != eb.bytes.size()) return std::size_t(-1);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ea.bytes.size(); i += size) differ += std::memcmp(ea.bytes.data() + i, eb.bytes.data() + i, size) != 0;
  return differ;
}

template <class T, class Optimizer>
void expect_folded_update_equals_kept(const Optimizer& optimizer, std::vector<std::string> state_names) {
  two_layer<T> m;
  tensor<T, shape<dyn, two_layer<T>::inputs>> xv(extents_t<2>{two_layer<T>::batch, two_layer<T>::inputs}, uninitialized);
  tensor<std::int32_t, shape<dyn>> yv(extents_t<1>{two_layer<T>::batch}, uninitialized);
  std::mt19937 rng(9);
  std::normal_distribution<double> n(0, 1);
  for (auto& v : xv) v = T(n(rng));
  for (auto& v : yv) v = std::int32_t(rng() % two_layer<T>::classes);
  xv.data()[7] = T(-0.0);
  const auto parameters = nn::parameters(m.first, m.second);
  nn::trainer folded(m.loss(), parameters, optimizer, {.seed = 3});
  nn::trainer kept(m.loss(), parameters, optimizer, {.seed = 3, .keep_gradients = true});
  for (int step = 0; step < 4; ++step) {
    const double a = folded.step(m.x = xv, m.y = yv), b = kept.step(m.x = xv, m.y = yv);
    EXPECT_EQ(a, b) << "loss at step " << step;
    for (const char* name : {"hidden/W", "hidden/b", "out/W", "out/b"})
      EXPECT_EQ(differing_elements(folded.model(), kept.model(), name, sizeof(T)), 0u) << name << " after step " << step;
    for (const auto& name : state_names)
      EXPECT_EQ(differing_elements(folded.state(), kept.state(), name, sizeof(T)), 0u) << name << " after step " << step;
  }
  EXPECT_EQ(folded.step_count(), 4u);
  // The folded trainer kept no weight gradients, and says how to get them.
  EXPECT_THROW((void)folded.gradients(), value_error);
  try {
    (void)folded.last_gradient_norm();
    ADD_FAILURE() << "last_gradient_norm after a folded step";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("keep_gradients"), std::string::npos) << e.what();
  }
  EXPECT_GT(kept.last_gradient_norm(), 0);
}

TEST(NnTrainer, SgdAddsWeightGradientsInTheirProductsBitForBit) {
  expect_folded_update_equals_kept<float>(sgd({.learning_rate = 0.05}), {});
  expect_folded_update_equals_kept<double>(sgd({.learning_rate = 0.05}), {});
}

TEST(NnTrainer, AdamAndMomentumUpdateWeightsInsideTheirGradientsProductsBitForBit) {
  const std::vector<std::string> moments{"m/hidden/W", "v/hidden/W", "m/out/W", "v/out/W", "m/hidden/b", "v/out/b"};
  expect_folded_update_equals_kept<float>(adam({.learning_rate = 1e-2}), moments);
  expect_folded_update_equals_kept<double>(adam({.learning_rate = 1e-2}), moments);
  expect_folded_update_equals_kept<float>(momentum({.learning_rate = 0.05, .momentum = 0.9}),
                                          {"velocity/hidden/W", "velocity/out/W"});
}

TEST(NnTrainer, ClipsGradientsTogetherToTheGlobalNorm) {
  regression m;
  const double limit = 1e-2;
  nn::trainer train(m.loss(), nn::parameters(m.layer), sgd({.learning_rate = 1.0}),
                    {.seed = 5, .clip_global_norm = limit});
  const params before = train.model();
  std::vector<double> dW, db;
  m.closed_form(before, dW, db);
  train.step(m.x = m.xv, m.t = m.tv);
  double norm = 0;
  for (double g : dW) norm += g * g;
  for (double g : db) norm += g * g;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, limit);
  EXPECT_NEAR(train.last_gradient_norm(), norm, 1e-12);
  const auto W0 = values(before, "fit/W"), W1 = values(train.model(), "fit/W");
  for (std::size_t i = 0; i < W0.size(); ++i) EXPECT_NEAR(W1[i], W0[i] - dW[i] * (limit / norm), 1e-15) << i;
  const auto& [gW, gb] = train.gradients();
  double clipped = 0;
  for (double g : gW) clipped += g * g;
  for (double g : gb) clipped += g * g;
  EXPECT_NEAR(std::sqrt(clipped), limit, 1e-15);
  EXPECT_THROW(nn::trainer(m.loss(), nn::parameters(m.layer), sgd({}), {.clip_global_norm = -1}), value_error);
  EXPECT_THROW(nn::trainer(m.loss(), nn::parameters(m.layer), sgd({}),
                           {.clip_global_norm = std::numeric_limits<double>::infinity()}),
               value_error);
}

TEST(NnTrainer, ANanGradientIsReportedNotClippedAway) {
  regression m;
  m.tv(2, 1) = std::numeric_limits<double>::quiet_NaN();
  nn::trainer train(m.loss(), nn::parameters(m.layer), sgd({.learning_rate = 0.1}), {.clip_global_norm = 1});
  const double loss = train.step(m.x = m.xv, m.t = m.tv);
  EXPECT_TRUE(std::isnan(loss));
  EXPECT_TRUE(std::isnan(train.last_gradient_norm()));
  EXPECT_TRUE(std::isnan(values(train.model(), "fit/b")[1]));
}

TEST(NnTrainer, ExtraOutputsComeFromTheSamePass) {
  regression m;
  nn::trainer train(m.loss(), nn::parameters(m.layer), adam({.learning_rate = 1e-2}));
  const params before = train.model();
  tensor<double, shape<dyn, out>> prediction;
  train.step_into(std::tie(prediction), m.layer(m.x), m.x = m.xv, m.t = m.tv);
  const auto want = eval(m.layer(m.x), m.x = m.xv, before);
  ASSERT_EQ(prediction.extents(), want.extents());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(prediction.data()[i], want.data()[i]);
}

TEST(NnTrainer, ALossFunctionGetsAFreshSeedEveryStepTheSameForTheSameRun) {
  regression m;
  std::vector<std::uint64_t> seen_a, seen_b;
  const auto run = [&](std::vector<std::uint64_t>& seen, std::uint64_t seed) {
    const auto loss = [&seen, &m](std::uint64_t step_seed) {
      seen.push_back(step_seed);
      return mean(square(dropout(m.layer(m.x), 0.5, step_seed) - m.t));
    };
    nn::trainer train(loss, nn::parameters(m.layer), sgd({.learning_rate = 0.05}), {.seed = seed});
    for (int i = 0; i < 3; ++i) train.step(m.x = m.xv, m.t = m.tv);
    return values(train.model(), "fit/W");
  };
  const auto a = run(seen_a, 1), b = run(seen_b, 1);
  EXPECT_EQ(a, b);
  EXPECT_EQ(seen_a, seen_b);
  std::vector<std::uint64_t> seen_c;
  (void)run(seen_c, 2);
  ASSERT_GE(seen_a.size(), 3u);
  EXPECT_NE(seen_a[0], seen_a.back());
  EXPECT_NE(seen_a, seen_c);
}

TEST(NnTrainer, RestoredRunContinuesBitForBit) {
  regression m;
  const auto make = [&] { return nn::trainer(m.loss(), nn::parameters(m.layer), adam({.learning_rate = 1e-2}), {.seed = 3}); };
  auto straight = make();
  for (int i = 0; i < 4; ++i) straight.step(m.x = m.xv, m.t = m.tv);
  auto first = make();
  for (int i = 0; i < 2; ++i) first.step(m.x = m.xv, m.t = m.tv);
  nn::trainer resumed(m.loss(), nn::parameters_of(m.loss()), adam({.learning_rate = 1e-2}), params(first.model()));
  resumed.restore(first.model(), first.state());
  EXPECT_EQ(resumed.step_count(), 2u);
  for (int i = 0; i < 2; ++i) resumed.step(m.x = m.xv, m.t = m.tv);
  EXPECT_EQ(values(resumed.model(), "fit/W"), values(straight.model(), "fit/W"));
  EXPECT_EQ(values(resumed.model(), "fit/b"), values(straight.model(), "fit/b"));
  // A model without one of the variables is refused, naming it.
  params missing;
  missing.set("fit/W", tensor<double, shape<in, out>>());
  EXPECT_THROW(nn::trainer(m.loss(), nn::parameters_of(m.loss()), sgd({}), missing), value_error);
}

// nn::batch_norm in a training step: the running averages follow PyTorch's rule (momentum 0.1,
// unbiased variance) from the values before each step, they are stored with the parameters but
// not trained, and inference reads them.
TEST(NnTrainer, BatchNormRunningAveragesFollowTheBatchStatistics) {
  const auto x = placeholder<"x", double, shape<dyn, 4>>();
  const auto t = placeholder<"t", double, shape<dyn, out>>();
  nn::batch_norm<"bn", 4, double> bn;
  nn::dense<"fit", 4, out, double> layer;
  const auto loss = mean(square(layer(bn(x)) - t));
  nn::trainer train(nn::with_updates(loss, bn.updates(x)), nn::parameters(bn, layer), sgd({.learning_rate = 0.05}));
  EXPECT_EQ(nn::parameters(bn, layer).size(), 4u);  // gamma, beta, W, b: the running values are not trained
  EXPECT_EQ(values(train.model(), "bn/running_mean"), std::vector<double>(4, 0.0));
  EXPECT_EQ(values(train.model(), "bn/running_var"), std::vector<double>(4, 1.0));

  std::vector<double> running_mean(4, 0.0), running_var(4, 1.0);
  unsigned seed = 40;
  for (std::size_t batch : {7u, 2u, 9u}) {
    auto xv = random_values<shape<dyn, 4>>({batch, 4}, ++seed);
    for (std::size_t i = 0; i < xv.size(); ++i) xv.data()[i] = 3 * xv.data()[i] + double(i % 4);  // channel means 0..3
    const auto tv = random_values<shape<dyn, out>>({batch, out}, ++seed);
    for (std::size_t c = 0; c < 4; ++c) {
      double m = 0, ss = 0;
      for (std::size_t r = 0; r < batch; ++r) m += xv(r, c) / double(batch);
      for (std::size_t r = 0; r < batch; ++r) ss += (xv(r, c) - m) * (xv(r, c) - m);
      running_mean[c] = 0.9 * running_mean[c] + 0.1 * m;
      running_var[c] = 0.9 * running_var[c] + 0.1 * ss / double(batch - 1);
    }
    const double l = train.step(x = xv, t = tv);
    EXPECT_TRUE(std::isfinite(l));
    const auto got_mean = values(train.model(), "bn/running_mean"), got_var = values(train.model(), "bn/running_var");
    for (std::size_t c = 0; c < 4; ++c) {
      EXPECT_NEAR(got_mean[c], running_mean[c], 1e-12) << "batch of " << batch << ", channel " << c;
      EXPECT_NEAR(got_var[c], running_var[c], 1e-12) << "batch of " << batch << ", channel " << c;
    }
  }
  EXPECT_NE(values(train.model(), "bn/gamma"), std::vector<double>(4, 1.0));  // trained

  // Inference: (x - running mean) / sqrt(running var + eps) * gamma + beta.
  const auto xv = random_values<shape<dyn, 4>>({5, 4}, 90);
  const auto served = eval(bn.inference(x), x = xv, train.model());
  const auto gamma = values(train.model(), "bn/gamma"), beta = values(train.model(), "bn/beta");
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 0; c < 4; ++c)
      EXPECT_NEAR(served(r, c), (xv(r, c) - running_mean[c]) / std::sqrt(running_var[c] + 1e-5) * gamma[c] + beta[c], 1e-12);

  // A model whose store lacks the running values (a checkpoint of another model) is refused at the
  // step, naming the value.
  params without;
  for (const auto& name : train.model().names())
    if (name != "bn/running_var") without.set_entry(name, train.model().at(name));
  nn::trainer other(nn::with_updates(loss, bn.updates(x)), nn::parameters(bn, layer), sgd({}), without);
  try {
    other.step(x = xv, t = random_values<shape<dyn, out>>({5, out}, 91));
    ADD_FAILURE() << "no error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("bn/running_var"), std::string::npos) << e.what();
  }
}

}  // namespace
