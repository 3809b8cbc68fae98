// train/: optimisers against float64 references written out by hand, initialisers against the
// moments their distributions should have, schedules, metrics, a small training run, and resuming
// from a checkpoint giving bit-identical parameters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>
#include <symflow/train/checkpoint.hpp>
#include <symflow/train/graph_training.hpp>
#include <vector>

#include <symflow/data/batches.hpp>

using namespace symflow;

namespace {

// Big enough (> 2^15 elements) that the update runs on several threads where OpenMP has them.
using big_shape = shape<240, 160>;
using bias_shape = shape<7>;

template <class T, class S>
std::vector<double> as_doubles(const tensor_view<T, S>& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

template <class T, class S>
void fill_normal(tensor<T, S>& t, std::mt19937_64& engine, double scale) {
  portable_sampler s(engine);
  for (auto& x : t) x = static_cast<T>(scale * s.normal());
}

// Checks every element against the reference within float rounding of the update's inputs.
void expect_close(const std::vector<double>& reference, const float* got, const char* what, int step) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < reference.size(); ++i)
    if (!(std::abs(double(got[i]) - reference[i]) <= 2e-6 * (1 + std::abs(reference[i])))) {
      if (bad++ < 3)
        ADD_FAILURE() << what << " step " << step << " element " << i << ": " << got[i] << " vs reference " << reference[i];
    }
  EXPECT_EQ(bad, 0u) << what << " step " << step;
}

const auto W = variable<"W", float, big_shape>();
const auto b = variable<"b", float, bias_shape>();

struct random_problem {
  params model;
  std::vector<tensor<float, big_shape>> gW;
  std::vector<tensor<float, bias_shape>> gb;
  explicit random_problem(int steps) {
    std::mt19937_64 engine(2026);
    initialize(model, W, normal_init{0, 1}, engine);
    initialize(model, b, uniform_init{-1, 1}, engine);
    for (int s = 0; s < steps; ++s) {
      gW.emplace_back();
      gb.emplace_back();
      fill_normal(gW.back(), engine, 0.5);
      fill_normal(gb.back(), engine, 2.0);
    }
  }
};

constexpr int steps = 4;

// The reference optimisers: textbook formulas in double, applied to the same starting values and
// gradients.
struct reference_state {
  std::vector<double> w, a, b;
};

TEST(Optimizers, SgdMatchesReference) {
  random_problem p(steps);
  const learning_rate_schedule rate = step_decay(0.1, 0.5, 2);
  sgd opt({.learning_rate = rate});
  params state = opt.initial_state(p.model, W, b);
  std::vector<double> w = as_doubles(p.model.view<float, big_shape>("W"));
  for (int s = 0; s < steps; ++s) {
    opt.step(p.model, state, std::tie(W, b), std::tie(p.gW[s], p.gb[s]));
    const double lr = s < 2 ? 0.1 : 0.05;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * p.gW[s].data()[i];
    expect_close(w, p.model.view<float, big_shape>("W").data(), "W", s);
  }
  EXPECT_EQ(optimizer_step(state), std::uint64_t(steps));
}

TEST(Optimizers, MomentumMatchesReference) {
  random_problem p(steps);
  momentum opt({.learning_rate = 0.05, .momentum = 0.8});
  params state = opt.initial_state(p.model, W, b);
  reference_state r{as_doubles(p.model.view<float, bias_shape>("b")), std::vector<double>(7, 0.0), {}};
  for (int s = 0; s < steps; ++s) {
    opt.step(p.model, state, std::tie(W, b), std::tie(p.gW[s], p.gb[s]));
    for (std::size_t i = 0; i < r.w.size(); ++i) {
      r.a[i] = 0.8 * r.a[i] + p.gb[s].data()[i];
      r.w[i] -= 0.05 * r.a[i];
    }
    expect_close(r.w, p.model.view<float, bias_shape>("b").data(), "b", s);
    expect_close(r.a, state.view<float, bias_shape>("velocity/b").data(), "velocity/b", s);
  }
}

TEST(Optimizers, AdamMatchesReferenceWithBiasCorrection) {
  random_problem p(steps);
  const double lr = 0.01, b1 = 0.85, b2 = 0.995, eps = 1e-6;
  adam opt({.learning_rate = lr, .beta1 = b1, .beta2 = b2, .epsilon = eps});
  params state = opt.initial_state(p.model, W, b);
  const std::size_t n = big_shape::extents[0] * big_shape::extents[1];
  reference_state r{as_doubles(p.model.view<float, big_shape>("W")), std::vector<double>(n, 0.0),
                    std::vector<double>(n, 0.0)};
  for (int s = 0; s < steps; ++s) {
    cpu::counters().reset();
    opt.step(p.model, state, std::tie(W, b), std::tie(p.gW[s], p.gb[s]));
    EXPECT_EQ(cpu::counters().fused_passes.load(), 2u) << "one pass per parameter";
    const int t = s + 1;
    for (std::size_t i = 0; i < n; ++i) {
      const double g = p.gW[s].data()[i];
      r.a[i] = b1 * r.a[i] + (1 - b1) * g;
      r.b[i] = b2 * r.b[i] + (1 - b2) * g * g;
      const double m_hat = r.a[i] / (1 - std::pow(b1, t)), v_hat = r.b[i] / (1 - std::pow(b2, t));
      r.w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
    expect_close(r.w, p.model.view<float, big_shape>("W").data(), "W", s);
    expect_close(r.a, state.view<float, big_shape>("m/W").data(), "m/W", s);
    expect_close(r.b, state.view<float, big_shape>("v/W").data(), "v/W", s);
  }
}

// A weight whose gradient turns to zero: its moments decay and, once the first falls below the
// smallest normal float, are stored as zero instead of lingering as subnormals (update_rules.hpp);
// until then they follow the float64 recursion. Tiny but normal gradients keep Adam's scale
// invariance (a steady gradient of 1e-15 still moves its weight by about lr a step).
TEST(Optimizers, AdamStoresNegligibleMomentsAsZero) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999;
  adam opt({.learning_rate = lr, .beta1 = b1, .beta2 = b2, .epsilon = 1e-30});
  params model;
  std::mt19937_64 engine(3);
  initialize(model, b, uniform_init{-1, 1}, engine);
  params state = opt.initial_state(model, b);
  tensor<float, bias_shape> g;
  const std::array<float, 7> first{1.f, -3.f, 0.5f, 1e-15f, -2e-15f, 1e-15f, 0.f};
  std::copy(first.begin(), first.end(), g.begin());
  std::array<double, 7> m{}, v{};
  const float w5_before = model.view<float, bias_shape>("b").data()[5];
  bool flushed = false;
  for (int t = 1; t <= 1200; ++t) {
    opt.step(model, state, std::tie(b), std::tie(g));
    for (std::size_t i = 0; i < 7; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g.data()[i];
      v[i] = b2 * v[i] + (1 - b2) * double(g.data()[i]) * g.data()[i];
    }
    const float* ms = state.view<float, bias_shape>("m/b").data();
    const float* vs = state.view<float, bias_shape>("v/b").data();
    for (std::size_t i = 0; i < 7; ++i) {
      ASSERT_TRUE(ms[i] == 0 || std::fpclassify(ms[i]) == FP_NORMAL) << "m[" << i << "] = " << ms[i] << " at step " << t;
      ASSERT_TRUE(vs[i] == 0 || std::fpclassify(vs[i]) == FP_NORMAL) << "v[" << i << "] = " << vs[i] << " at step " << t;
      if (std::abs(m[i]) >= 2 * std::numeric_limits<float>::min())
        ASSERT_NEAR(ms[i], m[i], 1e-3 * std::abs(m[i])) << "m[" << i << "] at step " << t;
      if (v[i] >= 2 * std::numeric_limits<float>::min())
        ASSERT_NEAR(vs[i], v[i], 1e-3 * v[i]) << "v[" << i << "] at step " << t;
      flushed = flushed || (i < 3 && ms[i] == 0);
    }
    if (t == 1) std::fill(g.begin(), g.begin() + 5, 0.f);  // 0..4 get zero gradients from now on
  }
  EXPECT_TRUE(flushed) << "after 1200 steps the decayed first moments of weights 0..2 are zero";
  const float* ms = state.view<float, bias_shape>("m/b").data();
  EXPECT_GT(ms[5], 0.f) << "a steady gradient of 1e-15 keeps its moment";
  const float moved = w5_before - model.view<float, bias_shape>("b").data()[5];
  EXPECT_NEAR(moved, 1200 * lr, 0.05 * 1200 * lr) << "and its weight moves by about lr a step";
}

TEST(Optimizers, RejectBadOptionsAndMismatchedState) {
  EXPECT_THROW(adam({.beta1 = 1.0}), value_error);
  EXPECT_THROW(adam({.epsilon = 0}), value_error);
  EXPECT_THROW(momentum({.momentum = -0.1}), value_error);
  EXPECT_THROW(sgd({.learning_rate = -1.0}), value_error);
  random_problem p(1);
  adam opt({});
  params state = opt.initial_state(p.model, W, b);
  params other = state;
  other.set("m/b", tensor<float, shape<8>>{});
  EXPECT_THROW(opt.step(p.model, other, std::tie(W, b), std::tie(p.gW[0], p.gb[0])), shape_error);
  params missing = sgd({}).initial_state(p.model, W, b);
  EXPECT_THROW(opt.step(p.model, missing, std::tie(W, b), std::tie(p.gW[0], p.gb[0])), value_error);
  p.model.set("b", tensor<double, bias_shape>{});
  EXPECT_THROW(opt.step(p.model, state, std::tie(W, b), std::tie(p.gW[0], p.gb[0])), value_error);
}

// The update rules run over a parameter's elements as one flat run: a gradient of other extents
// (possible with a dynamic shape) must be refused by name, not read past its end, and a strided
// gradient view must be read element by element in the variable's order.
TEST(Optimizers, GradientExtentsAreCheckedAndStridedGradientsRead) {
  const auto d = variable<"d", float, shape<dyn, 3>>();
  params model;
  model.set("d", tensor<float, shape<dyn, 3>>(extents_t<2>{4, 3}, 1.0f));
  sgd opt({.learning_rate = 0.5});
  params state = opt.initial_state(model, d);
  tensor<float, shape<dyn, 3>> short_gradient(extents_t<2>{2, 3}, 1.0f);
  try {
    opt.step(model, state, std::tie(d), std::tie(short_gradient));
    ADD_FAILURE() << "a gradient of extents [2, 3] for a [4, 3] variable was accepted";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("'d'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,3]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(optimizer_step(state), 0u);

  // The transpose of a [3, 4] tensor, as a [4, 3] view with strides (1, 4).
  tensor<float, shape<3, 4>> stored;
  for (std::size_t i = 0; i < stored.size(); ++i) stored.data()[i] = float(i);
  const tensor_view<float, shape<dyn, 3>> transposed(stored.data(), {4, 3}, {1, 4});
  ASSERT_FALSE(transposed.is_contiguous());
  opt.step(model, state, std::tie(d), std::tie(transposed));
  const auto after = model.view<float, shape<dyn, 3>>("d");
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 3; ++c)
      EXPECT_EQ(after.data()[r * 3 + c], 1.0f - 0.5f * float(c * 4 + r)) << r << ", " << c;
}

// --- initialisers

template <class Init>
void expect_moments(const Init& init, double mean, double variance, double low, double high) {
  tensor<float, shape<400, 300>> t(extents_t<2>{400, 300}, 0.f);
  std::mt19937_64 engine(11);
  fill_initial(t, init, engine);
  double sum = 0, squares = 0, lo = 1e300, hi = -1e300;
  for (float v : t) sum += v, lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  const double n = double(t.size()), m = sum / n;
  for (float v : t) squares += (v - m) * (v - m);
  const double var = squares / (n - 1);
  // Five standard errors: of the mean sqrt(var/n); of the variance about var*sqrt(2/n) (normal) or
  // less (uniform).
  EXPECT_NEAR(m, mean, 5 * std::sqrt(variance / n));
  EXPECT_NEAR(var, variance, 5 * variance * std::sqrt(2 / n));
  EXPECT_GE(lo, low);
  EXPECT_LE(hi, high);
}

TEST(Initializers, MomentsMatchTheory) {
  const double fan_in = 400, fan_out = 300, inf = 1e300;
  const double glorot_limit = std::sqrt(6 / (fan_in + fan_out)), he_limit = std::sqrt(6 / fan_in);
  expect_moments(glorot_uniform{}, 0, glorot_limit * glorot_limit / 3, -glorot_limit, glorot_limit);
  expect_moments(glorot_normal{}, 0, 2 / (fan_in + fan_out), -inf, inf);
  expect_moments(he_uniform{}, 0, he_limit * he_limit / 3, -he_limit, he_limit);
  expect_moments(he_normal{}, 0, 2 / fan_in, -inf, inf);
  expect_moments(uniform_init{2, 5}, 3.5, 9.0 / 12, 2, 5);
  expect_moments(normal_init{-1, 3}, -1, 9, -inf, inf);
}

TEST(Initializers, FansAndDeterminism) {
  const std::vector<std::size_t> conv{3, 3, 16, 32}, dense{784, 256}, bias{10};
  EXPECT_EQ(fans_of(conv).in, 144);
  EXPECT_EQ(fans_of(conv).out, 288);
  EXPECT_EQ(fans_of(dense).in, 784);
  EXPECT_EQ(fans_of(dense).out, 256);
  EXPECT_EQ(fans_of(bias).in, 10);

  params a, b2, c;
  initialize(a, W, he_normal{}, 5);
  initialize(b2, W, he_normal{}, 5);
  initialize(c, W, he_normal{}, 6);
  const auto bytes = [](const params& p) { return p.at("W").bytes.size(); };
  ASSERT_EQ(bytes(a), bytes(b2));
  EXPECT_EQ(std::memcmp(a.at("W").bytes.data(), b2.at("W").bytes.data(), bytes(a)), 0);
  EXPECT_NE(std::memcmp(a.at("W").bytes.data(), c.at("W").bytes.data(), bytes(a)), 0);

  // The uniform draw is the top 53 bits of the engine's word: an independent engine shows it.
  std::mt19937_64 engine(99), copy(99);
  portable_sampler s(engine);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.uniform(), std::ldexp(double(copy() >> 11), -53));
}

// --- schedules and metrics

TEST(Schedules, Values) {
  const learning_rate_schedule steps_ = step_decay(1.0, 0.1, 10);
  EXPECT_DOUBLE_EQ(steps_(9), 1.0);
  EXPECT_DOUBLE_EQ(steps_(10), 0.1);
  EXPECT_NEAR(steps_(25), 0.01, 1e-15);
  const learning_rate_schedule cosine = cosine_decay(0.2, 110, 0.02, 10);
  EXPECT_DOUBLE_EQ(cosine(0), 0.02);  // warm-up: (step + 1) / warmup of the initial rate
  EXPECT_DOUBLE_EQ(cosine(9), 0.2);
  EXPECT_DOUBLE_EQ(cosine(10), 0.2);
  EXPECT_NEAR(cosine(60), 0.11, 1e-12);  // half way: the mean of initial and final
  EXPECT_DOUBLE_EQ(cosine(110), 0.02);
  EXPECT_DOUBLE_EQ(learning_rate_schedule(0.3)(12345), 0.3);
  EXPECT_THROW(step_decay(1, 0.5, 0), value_error);
  EXPECT_THROW(cosine_decay(1, 10, 0, 10), value_error);
}

TEST(Metrics, AccuracyAndRunningMean) {
  const float nan = std::nanf("");
  const tensor<float, shape<dyn, 3>> scores{{0.f, 2.f, 1.f}, {5.f, 5.f, 1.f}, {nan, 9.f, 0.f}, {1.f, 0.f, 3.f}};
  const tensor<std::int32_t, shape<dyn>> labels{1, 0, 1, 0};
  EXPECT_EQ(correct_predictions(scores, labels), 2u);  // a tie goes to the first; NaN never counts
  EXPECT_DOUBLE_EQ(accuracy(scores, labels), 0.5);
  EXPECT_THROW(correct_predictions(scores, tensor<std::int32_t, shape<dyn>>{1, 0}), shape_error);
  running_mean loss;
  loss.add(2.0, 3);
  loss.add(1.0, 1);
  EXPECT_DOUBLE_EQ(loss.mean(), 7.0 / 4);
}

// --- training: softmax regression on synthetic, linearly separable data

constexpr std::size_t features = 6, classes = 4;
const auto x = placeholder<"x", float, shape<dyn, features>>();
const auto y = placeholder<"y", std::int32_t, shape<dyn>>();
const auto V = variable<"V", float, shape<features, classes>>();
const auto c = variable<"c", float, shape<classes>>();
const auto logits = matmul(x, V) + c;
const auto loss = -mean(sum(log_softmax(logits) * one_hot<classes>(y), axes<1>));
const auto gradients = grad(loss, V, c);

struct synthetic_data {
  tensor<float, shape<dyn, features>> inputs;
  tensor<std::int32_t, shape<dyn>> labels;
};

// Labels are the argmax of a fixed random linear map, so a linear model can fit them exactly.
synthetic_data make_data(std::size_t n) {
  std::mt19937_64 engine(404);
  portable_sampler s(engine);
  std::vector<double> truth(features * classes);
  for (double& t : truth) t = s.normal();
  synthetic_data d{tensor<float, shape<dyn, features>>(extents_t<2>{n, features}, 0.f),
                   tensor<std::int32_t, shape<dyn>>(extents_t<1>{n}, 0)};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t f = 0; f < features; ++f) d.inputs(i, f) = float(s.normal());
    double best = -1e300;
    for (std::size_t k = 0; k < classes; ++k) {
      double score = 0;
      for (std::size_t f = 0; f < features; ++f) score += d.inputs(i, f) * truth[f * classes + k];
      if (score > best) best = score, d.labels(i) = std::int32_t(k);
    }
  }
  return d;
}

constexpr std::size_t batch_size = 32;
constexpr std::uint64_t run_seed = 77;

// Steps [from, to) of a run whose epoch e visits the data in batch_plan(n, batch, epoch_seed(run_seed, e))
// order: which batch a step takes follows from the step number alone, so a resumed run picks up
// mid-epoch exactly where the interrupted one stopped.
void train_steps(const synthetic_data& d, const adam& opt, params& model, params& state, std::uint64_t from,
                 std::uint64_t to) {
  const std::size_t per_epoch = batch_plan(d.labels.size(), batch_size).batch_count();
  tensor<float, shape<dyn, features>> xb;
  tensor<std::int32_t, shape<dyn>> yb;
  tensor<float, shape<features, classes>> gV;
  tensor<float, shape<classes>> gc;
  for (std::uint64_t step = from; step < to; ++step) {
    const batch_plan plan(d.labels.size(), batch_size, epoch_seed(run_seed, step / per_epoch));
    gather_rows(d.inputs, plan.batch(step % per_epoch), xb);
    gather_rows(d.labels, plan.batch(step % per_epoch), yb);
    eval_into(std::tie(gV, gc), std::get<0>(gradients), std::get<1>(gradients), x = xb, y = yb, model);
    opt.step(model, state, std::tie(V, c), std::tie(gV, gc));
  }
}

params initial_model() {
  params model;
  std::mt19937_64 engine(3);
  initialize(model, V, glorot_uniform{}, engine);
  initialize(model, c, zeros, engine);
  return model;
}

constexpr std::uint64_t total_steps = 150;
adam make_optimizer() { return adam({.learning_rate = cosine_decay(0.05, total_steps, 0.0, 5)}); }

TEST(Training, SoftmaxRegressionLearnsSeparableData) {
  const synthetic_data d = make_data(600);
  const adam opt = make_optimizer();
  params model = initial_model();
  params state = opt.initial_state(model, V, c);
  const double before = accuracy(eval(logits, x = d.inputs, model), d.labels);
  train_steps(d, opt, model, state, 0, total_steps);
  const double after = accuracy(eval(logits, x = d.inputs, model), d.labels);
  EXPECT_GE(after, 0.95) << "accuracy before training " << before;
  EXPECT_LT(eval(loss, x = d.inputs, y = d.labels, model)[0], 0.3f);
}

TEST(Training, ResumingFromACheckpointIsBitIdentical) {
  const synthetic_data d = make_data(600);  // 19 batches per epoch: step 47 is inside epoch 2
  const adam opt = make_optimizer();
  params model = initial_model();
  params state = opt.initial_state(model, V, c);
  train_steps(d, opt, model, state, 0, total_steps);

  params first_model = initial_model();
  params first_state = opt.initial_state(first_model, V, c);
  const std::uint64_t interrupted_at = 47;
  train_steps(d, opt, first_model, first_state, 0, interrupted_at);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("symflow_train_test_" + std::to_string(::getpid()) + ".safetensors")).string();
  save_checkpoint(path, {{"model/", first_model}, {"optimizer/", first_state}}, {{"step", std::to_string(interrupted_at)}});

  const checkpoint restored = load_checkpoint(path);
  std::filesystem::remove(path);
  params resumed_model = restored.part("model/");
  params resumed_state = restored.part("optimizer/");
  ASSERT_EQ(std::stoull(restored.metadata.at("step")), interrupted_at);
  ASSERT_EQ(optimizer_step(resumed_state), interrupted_at);
  train_steps(d, opt, resumed_model, resumed_state, interrupted_at, total_steps);

  for (const params* p : {&model, &state}) {
    const params& other = p == &model ? resumed_model : resumed_state;
    ASSERT_EQ(p->names(), other.names());
    for (const std::string& name : p->names()) {
      const auto& a = p->at(name).bytes;
      const auto& b = other.at(name).bytes;
      ASSERT_EQ(a.size(), b.size()) << name;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << name << " differs after resuming";
    }
  }
}

// Two stores hold the same entries with the same bytes.
void expect_same_bytes(const params& a, const params& b, const std::string& what) {
  ASSERT_EQ(a.names(), b.names()) << what;
  for (const std::string& name : a.names()) {
    const auto& x = a.at(name).bytes;
    const auto& y = b.at(name).bytes;
    ASSERT_EQ(x.size(), y.size()) << what << " " << name;
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size()), 0) << what << ": " << name << " differs";
  }
}

template <class T, class S>
named_gradient named(std::string name, const tensor<T, S>& g) {
  return {std::move(name), dtype_v<T>, std::vector<std::size_t>(g.extents().begin(), g.extents().end()), g.data()};
}

// A runtime graph model's step (parameters named at run time) is the typed step: the same bits in
// the parameters and the optimiser state, for each optimiser, over several steps of a schedule.
TEST(Optimizers, NamedParametersStepAsTypedVariablesDo) {
  const sgd plain({.learning_rate = step_decay(0.1, 0.5, 2)});
  const momentum heavy({.learning_rate = 0.05, .momentum = 0.8});
  const adam adaptive({.learning_rate = 0.01, .beta1 = 0.85, .beta2 = 0.995, .epsilon = 1e-6});
  auto check = [](const auto& opt, const char* what) {
    random_problem typed(steps), by_name(steps);
    params typed_state = opt.initial_state(typed.model, W, b);
    params named_state = opt.initial_state(by_name.model, std::vector<std::string>{"W", "b"});
    expect_same_bytes(typed_state, named_state, std::string(what) + " initial state");
    for (int s = 0; s < steps; ++s) {
      opt.step(typed.model, typed_state, std::tie(W, b), std::tie(typed.gW[s], typed.gb[s]));
      opt.step(by_name.model, named_state, {named("W", by_name.gW[s]), named("b", by_name.gb[s])});
    }
    expect_same_bytes(typed.model, by_name.model, std::string(what) + " parameters");
    expect_same_bytes(typed_state, named_state, std::string(what) + " state");
  };
  check(plain, "sgd");
  check(heavy, "momentum");
  check(adaptive, "adam");
}

// Every gradient is checked (dtype, extents, state entries) before anything is written.
TEST(Optimizers, NamedStepsCheckEveryGradientBeforeWriting) {
  random_problem p(1);
  const adam opt({});
  params state = opt.initial_state(p.model, std::vector<std::string>{"W", "b"});
  const params before = p.model;
  const tensor<float, shape<6>> short_bias({6}, 1.f);
  const tensor<double, bias_shape> double_bias({7}, 1.0);
  EXPECT_THROW(opt.step(p.model, state, {named("W", p.gW[0]), named("b", short_bias)}), shape_error);
  EXPECT_THROW(opt.step(p.model, state, {named("W", p.gW[0]), named("b", double_bias)}), value_error);
  EXPECT_THROW(opt.step(p.model, state, {named("W", p.gW[0]), named("nothing", p.gb[0])}), value_error);
  params no_moments = sgd({}).initial_state(p.model, std::vector<std::string>{"W", "b"});
  EXPECT_THROW(opt.step(p.model, no_moments, {named("W", p.gW[0])}), value_error);  // no m/W, v/W
  params counts;
  counts.set("n", tensor<std::int32_t, shape<2>>({2}, 1));
  params count_state = sgd({}).initial_state(counts, std::vector<std::string>{"n"});
  try {
    sgd({}).step(counts, count_state, {named("n", tensor<std::int32_t, shape<2>>({2}, 1))});
    ADD_FAILURE() << "an integer parameter was updated";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("'n' holds i32"), std::string::npos) << e.what();
  }
  expect_same_bytes(before, p.model, "parameters after refused steps");
  EXPECT_EQ(optimizer_step(state), 0u);
}

// A model that exists only as a graph value (as an imported ONNX model does): its embedded values
// become a params store, the loss is built onto it, and Adam fits y = 2 x0 - x1 + 0.5; the store
// round-trips through a checkpoint and the interpreter reads the trained values from it.
TEST(Training, AGraphModelTrainsWithTheOptimisersAndCheckpoints) {
  using namespace graph_ops;
  graph_builder b;
  const graph_handle in = b.input("x", dtype::f32, {unknown_extent, 2});
  const graph_tensor w0{dtype::f32, {2, 1}, std::vector<unsigned char>(8, 0)};
  const graph_tensor b0{dtype::f32, {1}, std::vector<unsigned char>(4, 0)};
  const graph_handle weight = b.parameter("dense/W", dtype::f32, {2, 1}, w0);
  const graph_handle bias = b.parameter("dense/b", dtype::f32, {1}, b0);
  const graph model = b.build({matmul(in, weight) + bias});
  params weights = parameter_values(model);
  ASSERT_EQ(parameter_names(model), (std::vector<std::string>{"dense/W", "dense/b"}));

  graph_builder with_loss(model);
  const graph_handle target = with_loss.input("t", dtype::f32, {unknown_extent, 1});
  const graph_handle error = with_loss.handle(with_loss.outputs().at(0).id) - target;
  graph_training_step step(with_loss.build({reduce_value(ops::mean_op{}, error * error, {}, false)}), parameter_names(model));

  const std::size_t n = 64;
  runtime_tensor xs(dtype::f32, {n, 2}), ts(dtype::f32, {n, 1});
  std::mt19937_64 engine(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::size_t i = 0; i < n; ++i) {
    xs.data<float>()[2 * i] = u(engine);
    xs.data<float>()[2 * i + 1] = u(engine);
    ts.data<float>()[i] = 2 * xs.data<float>()[2 * i] - xs.data<float>()[2 * i + 1] + 0.5f;
  }
  const runtime_feeds feeds{{"x", xs}, {"t", ts}};
  const adam opt({.learning_rate = 0.05});
  params state = opt.initial_state(weights, step.parameters());
  const double first = step.run(feeds, weights);
  double last = first;
  for (int k = 0; k < 400; ++k) {
    last = step.run(feeds, weights);
    opt.step(weights, state, step.gradients());
  }
  EXPECT_LT(last, 1e-3 * first) << first << " -> " << last;
  const float* w = reinterpret_cast<const float*>(weights.at("dense/W").bytes.data());
  EXPECT_NEAR(w[0], 2.0, 0.02);
  EXPECT_NEAR(w[1], -1.0, 0.02);

  const std::string path =
      (std::filesystem::temp_directory_path() / ("symflow_graph_train_" + std::to_string(::getpid()) + ".safetensors")).string();
  save_checkpoint(path, {{"model/", weights}, {"optimizer/", state}}, {});
  const checkpoint restored = load_checkpoint(path);
  std::filesystem::remove(path);
  expect_same_bytes(weights, restored.part("model/"), "restored parameters");
  expect_same_bytes(state, restored.part("optimizer/"), "restored state");
  const params restored_weights = restored.part("model/");
  const runtime_tensor predicted = run_graph(model, {{"x", xs}}, &restored_weights).at(0);
  EXPECT_NEAR(predicted.data<float>()[0], ts.data<float>()[0], 0.05);
  graph_builder unset;
  const graph_handle p = unset.parameter("p", dtype::f32, {1});
  EXPECT_THROW((void)parameter_values(unset.build({p})), value_error);  // a parameter without a value
}

}  // namespace
