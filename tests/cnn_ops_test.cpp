// CNN ops forward: conv2d (incl. dilation and groups) and max/avg pooling against direct float64
// loops written here, conv2d's two adjoint ops on batches that spread over threads (against the
// definition in float64, and bitwise the same on one thread as on two), conv2d's shape errors, the max-pool adjoint's tie rule, and softmax cross-entropy against a stable float64
// reference and its label check. (Gradients: cnn_gradients_test; dropout and the graph value:
// cnn_dropout_graph_test.)
#include "cnn_support.hpp"

#include <cstring>
#if defined(_OPENMP)
#include <omp.h>
#endif

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

namespace {
// conv2d's adjoints by their definition: every product x * w of the forward sum sent back, times
// the output's adjoint g, to the input element (dx) and to the filter element (dw), in float64.
template <class T>
void reference_conv_adjoints(const conv_case& k, const T* x, const T* w, const T* g, std::size_t s, bool same,
                             std::size_t groups, std::vector<double>& dx, std::vector<double>& dw) {
  const std::size_t oh = out_extent(k.h, k.kh, s, same), ow = out_extent(k.w, k.kw, s, same);
  const std::ptrdiff_t pt = pad_before(k.h, k.kh, s, same), pl = pad_before(k.w, k.kw, s, same);
  const std::size_t cg = k.c / groups, og = k.o / groups;
  dx.assign(k.n * k.h * k.w * k.c, 0.0);
  dw.assign(k.kh * k.kw * cg * k.o, 0.0);
  for (std::size_t n = 0; n < k.n; ++n)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t o = 0; o < k.o; ++o) {
          const double go = double(g[((n * oh + i) * ow + j) * k.o + o]);
          const std::size_t c0 = (o / og) * cg;
          for (std::size_t a = 0; a < k.kh; ++a)
            for (std::size_t b = 0; b < k.kw; ++b) {
              const std::ptrdiff_t r = std::ptrdiff_t(i * s + a) - pt, q = std::ptrdiff_t(j * s + b) - pl;
              if (r < 0 || q < 0 || r >= std::ptrdiff_t(k.h) || q >= std::ptrdiff_t(k.w)) continue;
              for (std::size_t c = 0; c < cg; ++c) {
                const std::size_t xi = ((n * k.h + std::size_t(r)) * k.w + std::size_t(q)) * k.c + c0 + c;
                const std::size_t wi = ((a * k.kw + b) * cg + c) * k.o + o;
                dx[xi] += go * double(w[wi]);
                dw[wi] += go * double(x[xi]);
              }
            }
        }
}

template <std::size_t S, padding P, std::size_t G>
void check_adjoints_on_threads(const conv_case& k, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "case " << k.n << "x" << k.h << "x" << k.w << "x" << k.c << " * " << k.kh << "x"
                                    << k.kw << "x" << k.o << ", stride " << S << ", groups " << G);
  const bool same = P == padding::same;
  const std::size_t oh = out_extent(k.h, k.kh, S, same), ow = out_extent(k.w, k.kw, S, same);
  const auto x = placeholder<"x", float, any4>();
  const auto w = placeholder<"w", float, any4>();
  const auto g = placeholder<"g", float, any4>();
  const auto xv = random_tensor<float, any4>({k.n, k.h, k.w, k.c}, -1, 1, seed);
  const auto wv = random_tensor<float, any4>({k.kh, k.kw, k.c / G, k.o}, -1, 1, seed + 1);
  const auto gv = random_tensor<float, any4>({k.n, oh, ow, k.o}, -1, 1, seed + 2);
  const auto adjoints = [&] {
    return std::pair{eval(conv2d_backprop_input<S, P, 1, G>(g, w, x), g = gv, w = wv, x = xv),
                     eval(conv2d_backprop_filter<S, P, 1, G>(x, g, w), g = gv, w = wv, x = xv)};
  };
  const auto [dx, dw] = adjoints();
  std::vector<double> want_dx, want_dw;
  reference_conv_adjoints(k, xv.data(), wv.data(), gv.data(), S, same, G, want_dx, want_dw);
  // Sums of up to a few thousand float products of values in [-1, 1].
  expect_near_all(dx, want_dx, 1e-4, "conv2d_backprop_input");
  expect_near_all(dw, want_dw, 1e-4, "conv2d_backprop_filter");
#if defined(_OPENMP)
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto [dx1, dw1] = adjoints();
  omp_set_num_threads(std::max(threads, 2));
  const auto [dx2, dw2] = adjoints();
  omp_set_num_threads(threads);
  EXPECT_EQ(std::memcmp(dx1.data(), dx2.data(), dx1.size() * sizeof(float)), 0) << "input adjoint, 1 vs 2 threads";
  EXPECT_EQ(std::memcmp(dw1.data(), dw2.data(), dw1.size() * sizeof(float)), 0) << "filter adjoint, 1 vs 2 threads";
#endif
}
}  // namespace

// Batches of images split into chunks that run on different threads, the filter adjoint summed in
// slices (several chunks each, the last ones uneven): conv2 and conv1 of the examples' CNN with odd
// batches, and two groups with stride 2.
TEST(Conv2D, AdjointsSpreadOverThreadsMatchFloat64AndDoNotDependOnTheThreadCount) {
  check_adjoints_on_threads<1, padding::same, 1>({11, 12, 12, 16, 5, 5, 32}, 900);
  check_adjoints_on_threads<1, padding::same, 1>({37, 28, 28, 1, 5, 5, 32}, 910);
  check_adjoints_on_threads<2, padding::valid, 2>({19, 17, 15, 16, 3, 3, 48}, 920);
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

// Dilation and groups (ONNX Conv's dilations and group, PyTorch's dilation and groups) against the
// float64 loop, odd sizes, both paddings, strides 1-3, depthwise (groups = C) with a multiplier.
TEST(Conv2D, DilationAndGroupsMatchDirectLoop) {
  unsigned seed = 700;
  const conv_case odd{2, 9, 7, 6, 3, 2, 6}, tall{1, 11, 5, 4, 2, 3, 8}, depthwise{2, 8, 9, 5, 3, 3, 10};
  check_conv_forward<1, padding::same, double, 2, 1>(odd, seed += 2, 1e-12);
  check_conv_forward<1, padding::valid, double, 3, 1>(odd, seed += 2, 1e-12);
  check_conv_forward<2, padding::same, double, 2, 2>(odd, seed += 2, 1e-12);
  check_conv_forward<2, padding::valid, double, 1, 2>(odd, seed += 2, 1e-12);
  check_conv_forward<3, padding::same, double, 1, 3>(odd, seed += 2, 1e-12);
  check_conv_forward<1, padding::same, double, 3, 4>(tall, seed += 2, 1e-12);
  check_conv_forward<2, padding::valid, double, 2, 4>(tall, seed += 2, 1e-12);
  check_conv_forward<1, padding::same, double, 1, 5>(depthwise, seed += 2, 1e-12);
  check_conv_forward<2, padding::same, double, 2, 5>(depthwise, seed += 2, 1e-12);
  check_conv_forward<1, padding::valid, double, 2, 5>(depthwise, seed += 2, 1e-12);
  // float32, several im2col chunks and threads: depthwise 32 channels and 2 groups of 16.
  check_conv_forward<1, padding::same, float, 2, 32>({3, 20, 20, 32, 3, 3, 32}, 720, 1e-5);
  check_conv_forward<1, padding::same, float, 1, 2>({3, 14, 14, 32, 3, 3, 64}, 721, 1e-4);
  // The doc string's example: a 2x2 window of ones with dilation 2 on 1..9.
  tensor<double, shape<1, 3, 3, 1>> xv({1, 3, 3, 1});
  for (std::size_t i = 0; i < 9; ++i) xv.data()[i] = double(i + 1);
  const auto x = placeholder<"x", double, shape<1, 3, 3, 1>>();
  const auto w = placeholder<"w", double, shape<2, 2, 1, 1>>();
  const auto y = eval(conv2d<1, padding::same, 2>(x, w), x = xv, w = tensor<double, shape<2, 2, 1, 1>>({2, 2, 1, 1}, 1.0));
  EXPECT_EQ(std::vector<double>(y.data(), y.data() + 9), (std::vector<double>{5, 10, 5, 10, 20, 10, 5, 10, 5}));
}

// A group reads its own input channels only: NaN/Inf in group 0's channels reach group 0's outputs
// and no others; -0 stays a zero.
TEST(Conv2D, GroupsKeepNonFiniteValuesInTheirGroup) {
  auto xv = random_tensor<double, any4>({1, 5, 5, 6}, -1, 1, 730);
  const auto wv = random_tensor<double, any4>({3, 3, 2, 6}, -1, 1, 731);
  xv.data()[(2 * 5 + 2) * 6 + 0] = NAN;       // group 0 (channels 0-1)
  xv.data()[(1 * 5 + 3) * 6 + 1] = INFINITY;  // group 0
  xv.data()[(3 * 5 + 1) * 6 + 4] = -0.0;      // group 2
  const auto x = placeholder<"x", double, any4>();
  const auto w = placeholder<"w", double, any4>();
  const auto y = eval(conv2d<1, padding::same, 1, 3>(x, w), x = xv, w = wv);
  const auto want = reference_conv({1, 5, 5, 6, 3, 3, 6}, xv.data(), wv.data(), 1, true, 1, 3);
  std::size_t non_finite = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::size_t o = i % 6;
    if (o >= 2) {
      EXPECT_TRUE(std::isfinite(y.data()[i])) << "output channel " << o << " of another group, element " << i;
      EXPECT_NEAR(y.data()[i], want[i], 1e-12) << i;
    } else if (!std::isfinite(want[i])) {
      ++non_finite;
      EXPECT_FALSE(std::isfinite(y.data()[i])) << i;
    }
  }
  EXPECT_GT(non_finite, 0u);
}

// Depthwise (one input channel per group) runs its own direct loop: NaN stays in its channel's
// outputs, and a padded position times an infinite weight is NaN, as in the GEMM path.
TEST(Conv2D, DepthwiseKeepsTheGemmPathsSpecialValues) {
  const auto x = placeholder<"x", double, any4>();
  const auto w = placeholder<"w", double, any4>();
  auto xv = random_tensor<double, any4>({1, 4, 5, 3}, -1, 1, 740);
  auto wv = random_tensor<double, any4>({3, 3, 1, 6}, -1, 1, 741);  // multiplier 2
  xv.data()[(2 * 5 + 2) * 3 + 1] = NAN;  // channel 1 feeds outputs 2 and 3
  auto y = eval(conv2d<1, padding::same, 1, 3>(x, w), x = xv, w = wv);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const std::size_t o = i % 6;
    if (o != 2 && o != 3) {
      EXPECT_TRUE(std::isfinite(y.data()[i])) << "output channel " << o << ", element " << i;
    }
  }
  EXPECT_TRUE(std::isnan(y.data()[(2 * 5 + 2) * 6 + 2]));
  xv.data()[(2 * 5 + 2) * 3 + 1] = 0.5;
  wv.data()[0 * 6 + 4] = INFINITY;  // tap (0, 0) of output 4: in the padding at output (0, 0)
  y = eval(conv2d<1, padding::same, 1, 3>(x, w), x = xv, w = wv);
  EXPECT_TRUE(std::isnan(y.data()[4])) << y.data()[4];
  EXPECT_TRUE(std::isinf(y.data()[(1 * 5 + 1) * 6 + 4])) << "inside, the infinite weight meets an input";
}

TEST(Conv2D, GroupAndDilationShapeErrorsSayWhatDoesNotFit) {
  const auto x = placeholder<"x", float, any4>();
  const auto w = placeholder<"w", float, any4>();
  auto message = [](auto&& run) -> std::string {
    try {
      run();
    } catch (const shape_error& e) {
      return e.what();
    }
    return "no shape error";
  };
  const tensor<float, any4> x6({1, 7, 7, 6}, 0.0f);
  // 6 channels in 2 groups need a filter of 3 input channels, not 2.
  std::string m = message([&] { eval(conv2d<1, padding::same, 1, 2>(x, w), x = x6, w = tensor<float, any4>({3, 3, 2, 4}, 0.0f)); });
  EXPECT_NE(m.find("2 groups"), std::string::npos) << m;
  EXPECT_NE(m.find("[1,7,7,6]"), std::string::npos) << m;
  // 5 output channels do not split into 3 groups.
  m = message([&] { eval(conv2d<1, padding::same, 1, 3>(x, w), x = x6, w = tensor<float, any4>({3, 3, 2, 5}, 0.0f)); });
  EXPECT_NE(m.find("output channels"), std::string::npos) << m;
  // A 3x3 window with dilation 4 spans 9 > 7 positions: no valid output.
  m = message([&] { eval(conv2d<1, padding::valid, 4>(x, w), x = x6, w = tensor<float, any4>({3, 3, 6, 1}, 0.0f)); });
  EXPECT_NE(m.find("dilated window (9x9)"), std::string::npos) << m;
  EXPECT_NO_THROW(eval(conv2d<1, padding::same, 4>(x, w), x = x6, w = tensor<float, any4>({3, 3, 6, 1}, 0.0f)));
  // Static shapes are checked at compile time (the same rules).
  using ops::conv_detail::static_shapes_fit;
  static_assert(static_shapes_fit<shape<1, 7, 7, 6>, shape<3, 3, 3, 4>, 1, padding::same, 1, 2>());
  static_assert(!static_shapes_fit<shape<1, 7, 7, 6>, shape<3, 3, 2, 4>, 1, padding::same, 1, 2>());
  static_assert(!static_shapes_fit<shape<1, 7, 7, 6>, shape<3, 3, 2, 5>, 1, padding::same, 1, 3>());
  static_assert(!static_shapes_fit<shape<1, 7, 7, 6>, shape<3, 3, 6, 1>, 1, padding::valid, 4, 1>());
  static_assert(std::is_same_v<shape_of<decltype(conv2d<2, padding::valid, 2, 2>(placeholder<"a", float, shape<dyn, 9, 8, 4>>(),
                                                                             variable<"b", float, shape<3, 2, 2, 6>>()))>,
                               shape<dyn, 3, 3, 6>>);
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
