// CNN ops forward: conv2d and max/avg pooling against direct float64 loops written here, conv2d's
// shape errors, the max-pool adjoint's tie rule, and softmax cross-entropy against a stable float64
// reference and its label check. (Gradients: cnn_gradients_test; dropout and the graph value:
// cnn_dropout_graph_test.)
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

TEST(Conv2D, ForwardMatchesDirectLoopForStridesAndPaddings) {
  const std::vector<conv_case> cases{{2, 7, 6, 3, 3, 3, 4}, {1, 5, 5, 1, 5, 5, 2}, {3, 8, 9, 2, 2, 3, 5},
                                     {2, 6, 6, 4, 1, 1, 3}, {1, 9, 4, 3, 4, 2, 2}};
  unsigned seed = 100;
  for (const auto& k : cases) {
    SCOPED_TRACE(::testing::Message() << "case " << k.n << "x" << k.h << "x" << k.w << "x" << k.c << " * " << k.kh << "x"
                                      << k.kw << "x" << k.o);
    check_conv_forward<1, padding::same, double>(k, seed += 2, 1e-12);
    check_conv_forward<1, padding::valid, double>(k, seed += 2, 1e-12);
    check_conv_forward<2, padding::same, double>(k, seed += 2, 1e-12);
    check_conv_forward<2, padding::valid, double>(k, seed += 2, 1e-12);
    check_conv_forward<3, padding::same, double>(k, seed += 2, 1e-12);
  }
  // The target model's layers in float32 (large enough to use several im2col chunks and threads).
  // Sums of up to 800 float products: a few 1e-6 of relative rounding.
  check_conv_forward<1, padding::same, float>({3, 28, 28, 1, 5, 5, 32}, 7, 1e-4);
  check_conv_forward<1, padding::same, float>({2, 14, 14, 32, 5, 5, 64}, 8, 1e-4);
}

TEST(Conv2D, ShapeErrorsNameTheOpAndShapes) {
  const auto x = placeholder<"x", float, any4>();
  const auto w = placeholder<"w", float, any4>();
  const tensor<float, any4> xv({1, 4, 4, 3}, 0.0f), w_channels({3, 3, 2, 1}, 0.0f), w_large({5, 5, 3, 1}, 0.0f);
  try {
    eval(conv2d<1, padding::same>(x, w), x = xv, w = w_channels);
    FAIL() << "no shape error";
  } catch (const shape_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("conv2d"), std::string::npos) << m;
    EXPECT_NE(m.find("[1,4,4,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[3,3,2,1]"), std::string::npos) << m;
  }
  EXPECT_THROW(eval(conv2d<1, padding::valid>(x, w), x = xv, w = w_large), shape_error);
  EXPECT_NO_THROW(eval(conv2d<1, padding::same>(x, w), x = xv, w = w_large));
}

TEST(Pool2D, ForwardMatchesDirectLoop) {
  const auto x = placeholder<"x", double, any4>();
  struct pool_case {
    std::size_t n, h, w, c;
  };
  unsigned seed = 200;
  for (const pool_case k : {pool_case{2, 6, 6, 3}, pool_case{1, 7, 5, 2}, pool_case{3, 4, 9, 1}}) {
    const auto xv = random_tensor<double, any4>({k.n, k.h, k.w, k.c}, -1, 1, seed++);
    expect_near_all(eval(max_pool2d<2>(x), x = xv), reference_pool(xv.data(), k.n, k.h, k.w, k.c, 2, 2, true), 0, "max 2/2");
    expect_near_all(eval(max_pool2d<3, 1>(x), x = xv), reference_pool(xv.data(), k.n, k.h, k.w, k.c, 3, 1, true), 0,
                    "max 3/1");
    expect_near_all(eval(avg_pool2d<2>(x), x = xv), reference_pool(xv.data(), k.n, k.h, k.w, k.c, 2, 2, false), 1e-15,
                    "avg 2/2");
    expect_near_all(eval(avg_pool2d<3, 2>(x), x = xv), reference_pool(xv.data(), k.n, k.h, k.w, k.c, 3, 2, false), 1e-15,
                    "avg 3/2");
  }
}

TEST(Pool2D, MaxPoolAdjointGoesToTheFirstMaximumOfEachWindow) {
  const auto x = placeholder<"x", float, shape<1, 2, 4, 1>>();
  const auto g = placeholder<"g", float, shape<1, 1, 2, 1>>();
  // Window 1: a tie between (0,1) and (1,0); window 2: a tie between all four.
  const tensor<float, shape<1, 2, 4, 1>> xv{{{{1}, {5}, {2}, {2}}, {{5}, {0}, {2}, {2}}}};
  const tensor<float, shape<1, 1, 2, 1>> gv{{{{3}, {7}}}};
  const auto dx = eval(max_pool2d_backward<2>(g, x), g = gv, x = xv);
  const std::vector<float> want{0, 3, 7, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::vector<float>(dx.begin(), dx.end()), want);
}

TEST(SoftmaxCrossEntropy, StableValuesAgainstReference) {
  const auto logits = placeholder<"logits", float, shape<dyn, 4>>();
  const auto labels = placeholder<"labels", std::int64_t, shape<dyn>>();
  // Logits of 1000 overflow exp in a naive evaluation.
  const tensor<float, shape<dyn, 4>> lv{{1000, 999, 998, -5}, {0.5f, -0.25f, 2, 1}, {-80, -90, -100, -120}, {1, 2, 3, 4}};
  const tensor<std::int64_t, shape<dyn>> yv{1, 2, 3, -1};  // -1: a padding example
  const auto got = eval(softmax_cross_entropy(logits, labels), logits = lv, labels = yv);
  std::vector<double> want;
  for (std::size_t n = 0; n < 4; ++n) {
    if (yv[n] < 0 || yv[n] >= 4) {
      want.push_back(0);
      continue;
    }
    double m = -INFINITY, s = 0;
    for (std::size_t k = 0; k < 4; ++k) m = std::max(m, double(lv(n, k)));
    for (std::size_t k = 0; k < 4; ++k) s += std::exp(double(lv(n, k)) - m);
    want.push_back(m + std::log(s) - double(lv(n, std::size_t(yv[n]))));
  }
  expect_near_all(got, want, 1e-6, "softmax_cross_entropy");
  // The composed expression it replaces agrees (it also gives 0 for the padding label).
  const auto composed = eval(-sum(one_hot<4>(labels) * log_softmax(logits), axes<-1>), logits = lv, labels = yv);
  expect_near_all(composed, want, 1e-6, "composed");
}

// A label of K or more is refused, naming the example, the label and K, in the compiled evaluation,
// its gradient and the interpreter alike.
TEST(SoftmaxCrossEntropy, ALabelOfKOrMoreIsAnErrorNamingTheExample) {
  const auto logits = placeholder<"logits", float, shape<dyn, 4>>();
  const auto labels = placeholder<"labels", std::int32_t, shape<dyn>>();
  const auto lv = random_tensor<float, shape<dyn, 4>>({3, 4}, -1, 1, 340);
  const tensor<std::int32_t, shape<dyn>> yv{0, 4, 1};
  const auto loss = mean(softmax_cross_entropy(logits, labels));
  const auto expect_names_example = [](auto&& run) {
    try {
      run();
      ADD_FAILURE() << "no value_error";
    } catch (const value_error& e) {
      EXPECT_NE(std::string(e.what()).find("label 4 of example 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[0, 4)"), std::string::npos) << e.what();
    }
  };
  expect_names_example([&] { (void)eval(loss, logits = lv, labels = yv); });
  expect_names_example([&] { (void)eval(grad(loss, logits), logits = lv, labels = yv); });
  const runtime_feeds feeds{{"logits", runtime_tensor(lv)}, {"labels", runtime_tensor(yv)}};
  expect_names_example([&] { (void)interpreter(to_graph(loss)).run(feeds); });
}
