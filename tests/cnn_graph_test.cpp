// A small CNN through the graph value: binary round trip, interpreter and runtime differentiation
// against compiled evaluation, and the CNN adjoint ops differentiated at run time like their types.
#include <cmath>
#include <random>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/graph/runtime/grad.hpp>
#include <symflow/graph/runtime/interpreter.hpp>

#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;

namespace {

using any4 = shape<dyn, dyn, dyn, dyn>;

// The model's first layer has its shape fixed at compile time, batch aside.
using fashion_conv = decltype(conv2d<1, padding::same>(placeholder<"x", float, shape<dyn, 28, 28, 1>>(),
                                                        variable<"W", float, shape<5, 5, 1, 32>>()));
static_assert(std::is_same_v<shape_of<fashion_conv>, shape<dyn, 28, 28, 32>>);
static_assert(std::is_same_v<shape_of<decltype(max_pool2d<2>(std::declval<fashion_conv>()))>, shape<dyn, 14, 14, 32>>);
static_assert(std::is_same_v<shape_of<decltype(conv2d<2, padding::valid>(placeholder<"x", float, shape<4, 9, 8, 3>>(),
                                                                        variable<"W", float, shape<3, 2, 3, 5>>()))>,
                             shape<4, 4, 4, 5>>);
static_assert(std::is_same_v<shape_of<decltype(conv2d<3, padding::same>(placeholder<"x", float, shape<4, 10, 7, 3>>(),
                                                                       variable<"W", float, shape<dyn, dyn, 3, 5>>()))>,
                             shape<4, 4, 3, 5>>);

// --- float64 references: the definitions, written out directly ---

struct conv_case {
  std::size_t n, h, w, c, kh, kw, o;
};

std::size_t out_extent(std::size_t in, std::size_t k, std::size_t s, bool same) {
  return same ? (in + s - 1) / s : (in - k) / s + 1;
}
std::ptrdiff_t pad_before(std::size_t in, std::size_t k, std::size_t s, bool same) {
  if (!same) return 0;
  const std::ptrdiff_t total = std::ptrdiff_t((out_extent(in, k, s, same) - 1) * s + k) - std::ptrdiff_t(in);
  return std::max<std::ptrdiff_t>(total, 0) / 2;
}

template <class T>
std::vector<double> reference_conv(const conv_case& k, const T* x, const T* w, std::size_t s, bool same) {
  const std::size_t oh = out_extent(k.h, k.kh, s, same), ow = out_extent(k.w, k.kw, s, same);
  const std::ptrdiff_t pt = pad_before(k.h, k.kh, s, same), pl = pad_before(k.w, k.kw, s, same);
  std::vector<double> y(k.n * oh * ow * k.o, 0.0);
  for (std::size_t n = 0; n < k.n; ++n)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t o = 0; o < k.o; ++o) {
          double acc = 0;
          for (std::size_t a = 0; a < k.kh; ++a)
            for (std::size_t b = 0; b < k.kw; ++b) {
              const std::ptrdiff_t r = std::ptrdiff_t(i * s + a) - pt, q = std::ptrdiff_t(j * s + b) - pl;
              if (r < 0 || q < 0 || r >= std::ptrdiff_t(k.h) || q >= std::ptrdiff_t(k.w)) continue;
              for (std::size_t c = 0; c < k.c; ++c)
                acc += double(x[((n * k.h + std::size_t(r)) * k.w + std::size_t(q)) * k.c + c]) *
                       double(w[((a * k.kw + b) * k.c + c) * k.o + o]);
            }
          y[((n * oh + i) * ow + j) * k.o + o] = acc;
        }
  return y;
}

template <class T>
std::vector<double> reference_pool(const T* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c, std::size_t k,
                                   std::size_t s, bool max) {
  const std::size_t oh = (h - k) / s + 1, ow = (w - k) / s + 1;
  std::vector<double> y;
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t ch = 0; ch < c; ++ch) {
          double acc = max ? -INFINITY : 0.0;
          for (std::size_t a = 0; a < k; ++a)
            for (std::size_t d = 0; d < k; ++d) {
              const double v = x[((b * h + i * s + a) * w + j * s + d) * c + ch];
              acc = max ? std::max(acc, v) : acc + v;
            }
          y.push_back(max ? acc : acc / double(k * k));
        }
  return y;
}

template <class T, class S>
void expect_near_all(const tensor<T, S>& got, const std::vector<double>& want, double tolerance, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(double(got.data()[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, tolerance) << what << ": element " << at << " is " << got.data()[at] << ", expected " << want[at];
}

template <std::size_t S, padding P, class T>
void check_conv_forward(const conv_case& k, unsigned seed, double tolerance) {
  const auto x = placeholder<"x", T, any4>();
  const auto w = placeholder<"w", T, any4>();
  const auto xv = random_tensor<T, any4>({k.n, k.h, k.w, k.c}, -1, 1, seed);
  const auto wv = random_tensor<T, any4>({k.kh, k.kw, k.c, k.o}, -1, 1, seed + 1);
  const auto y = eval(conv2d<S, P>(x, w), x = xv, w = wv);
  const bool same = P == padding::same;
  const extents_t<4> want_extents{k.n, out_extent(k.h, k.kh, S, same), out_extent(k.w, k.kw, S, same), k.o};
  EXPECT_EQ(y.extents(), want_extents);
  expect_near_all(y, reference_conv(k, xv.data(), wv.data(), S, same), tolerance, "conv2d");
}

}  // namespace


// --- dropout ---

namespace {
// The documented mask, written out again from the comment in dropout.hpp.
bool documented_keep(std::uint64_t seed, std::uint64_t i, double rate) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return std::ldexp(double(z >> 11), -53) >= rate;
}
}  // namespace


// --- a small CNN through the graph value ---

namespace {
struct small_cnn {
  placeholder<"x", float, shape<dyn, 8, 8, 1>> x;
  placeholder<"labels", std::int32_t, shape<dyn>> labels;
  variable<"W1", float, shape<3, 3, 1, 4>> W1;
  variable<"b1", float, shape<4>> b1;
  variable<"W2", float, shape<2, 2, 4, 6>> W2;
  variable<"W3", float, shape<24, 10>> W3;
  variable<"b3", float, shape<10>> b3;

  auto loss() const {
    const auto h1 = relu(conv2d<1, padding::same>(x, W1) + b1);           // [N,8,8,4]
    const auto p1 = avg_pool2d<2, 1>(max_pool2d<2>(h1));                    // [N,3,3,4]
    const auto h2 = tanh(conv2d<2, padding::same>(p1, W2));                 // [N,2,2,6]
    const auto flat = dropout(reshape<shape<dyn, 24>>(h2), 0.25, 77);      // [N,24]
    return mean(softmax_cross_entropy(matmul(flat, W3) + b3, labels));
  }
};

double relative_difference(const runtime_tensor& got, const float* want, std::size_t n) {
  EXPECT_EQ(got.size(), n);
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(double(want[i])));
  for (std::size_t i = 0; i < n && i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got.data<float>()[i]) - double(want[i])));
  return worst / std::max(scale, 1e-30);
}
}  // namespace

TEST(CnnGraph, BinaryRoundTripRunsAndDifferentiatesLikeTheType) {
  const small_cnn m;
  params store;
  store.set("W1", random_tensor<float, shape<3, 3, 1, 4>>({3, 3, 1, 4}, -0.5, 0.5, 500));
  store.set("b1", random_tensor<float, shape<4>>({4}, -0.1, 0.1, 501));
  store.set("W2", random_tensor<float, shape<2, 2, 4, 6>>({2, 2, 4, 6}, -0.5, 0.5, 502));
  store.set("W3", random_tensor<float, shape<24, 10>>({24, 10}, -0.5, 0.5, 503));
  store.set("b3", random_tensor<float, shape<10>>({10}, -0.1, 0.1, 504));
  const auto xv = random_tensor<float, shape<dyn, 8, 8, 1>>({5, 8, 8, 1}, 0, 1, 505);
  const tensor<std::int32_t, shape<dyn>> yv{3, 9, 0, 4, 4};

  const auto loss = m.loss();
  const auto [dW1, db1, dW2, dW3, db3] = grad(loss, m.W1, m.b1, m.W2, m.W3, m.b3);
  const auto compiled = eval(loss, dW1, db1, dW2, dW3, db3, m.x = xv, m.labels = yv, store);
  const std::vector<const float*> want{std::get<0>(compiled).data(), std::get<1>(compiled).data(),
                                       std::get<2>(compiled).data(), std::get<3>(compiled).data(),
                                       std::get<4>(compiled).data(), std::get<5>(compiled).data()};
  const std::vector<std::size_t> sizes{1, 36, 4, 96, 240, 10};
  const runtime_feeds feeds{{"x", runtime_tensor(xv)}, {"labels", runtime_tensor(yv)}};
  auto expect_matches = [&](const std::vector<runtime_tensor>& got, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_LT(relative_difference(got[k], want[k], sizes[k]), 1e-5) << what << ", output " << k;
  };

  // The compile-time gradients lowered with the model: every backward kernel runs in the interpreter.
  expect_matches(interpreter(to_graph(loss, dW1, db1, dW2, dW3, db3)).run(feeds, &store), "lowered gradients");

  graph saved = to_graph(loss);
  embed_parameters(saved, store);
  const graph loaded = load_graph_binary(save_graph_binary(saved, {.embed_parameters = true}));
  EXPECT_EQ(loaded, saved);
  const auto run = interpreter(loaded).run(feeds);
  ASSERT_EQ(run.size(), 1u);
  EXPECT_LT(relative_difference(run[0], want[0], 1), 1e-6);
  expect_matches(interpreter(differentiate(loaded, {"W1", "b1", "W2", "W3", "b3"})).run(feeds), "differentiated at run time");
}

// Second order at run time: the adjoint ops' runtime rules against their compile-time rules.
TEST(CnnGraph, AdjointOpsDifferentiateAtRunTimeLikeTheirTypes) {
  const auto g = placeholder<"g", float, shape<2, 3, 2, 2>>();
  const auto w = variable<"w", float, shape<3, 3, 3, 2>>();
  const auto x = placeholder<"x", float, shape<2, 5, 4, 3>>();
  const auto gp = placeholder<"gp", float, shape<2, 2, 2, 3>>();
  const auto logits = placeholder<"logits", float, shape<4, 5>>();
  const auto labels = placeholder<"labels", std::int32_t, shape<4>>();
  const auto gl = placeholder<"gl", float, shape<4>>();
  const auto loss = sum(sin(conv2d_backprop_input<2, padding::same>(g, w, x))) +
                    sum(sin(conv2d_backprop_filter<2, padding::same>(x, g, w))) +
                    sum(sin(avg_pool2d_backward<2>(gp, x))) + sum(sin(softmax_cross_entropy_backward(gl, logits, labels)));
  const auto [dg, dw, dx, dgp, dl, dgl] = grad(loss, g, w, x, gp, logits, gl);

  const auto gv = random_tensor<float, shape<2, 3, 2, 2>>({2, 3, 2, 2}, -1, 1, 600);
  const auto wv = random_tensor<float, shape<3, 3, 3, 2>>({3, 3, 3, 2}, -1, 1, 601);
  const auto xv = random_tensor<float, shape<2, 5, 4, 3>>({2, 5, 4, 3}, -1, 1, 602);
  const auto gpv = random_tensor<float, shape<2, 2, 2, 3>>({2, 2, 2, 3}, -1, 1, 603);
  const auto lv = random_tensor<float, shape<4, 5>>({4, 5}, -2, 2, 604);
  const tensor<std::int32_t, shape<4>> yv{1, -1, 4, 0};
  const auto glv = random_tensor<float, shape<4>>({4}, -1, 1, 605);
  params store;
  store.set("w", wv);
  const auto compiled = eval(loss, dg, dw, dx, dgp, dl, dgl, g = gv, x = xv, gp = gpv, logits = lv, labels = yv,
                             gl = glv, store);
  const runtime_feeds feeds{{"g", runtime_tensor(gv)},   {"x", runtime_tensor(xv)},      {"gp", runtime_tensor(gpv)},
                            {"logits", runtime_tensor(lv)}, {"labels", runtime_tensor(yv)}, {"gl", runtime_tensor(glv)}};
  const auto got = interpreter(differentiate(to_graph(loss), {"g", "w", "x", "gp", "logits", "gl"})).run(feeds, &store);
  ASSERT_EQ(got.size(), 7u);
  std::size_t k = 0;
  auto expect_matches = [&](const auto& want) {
    EXPECT_LT(relative_difference(got[k], want.data(), want.size()), 1e-5) << "output " << k;
    ++k;
  };
  std::apply([&](const auto&... want) { (expect_matches(want), ...); }, compiled);
}
