// CNN ops forward: conv2d and max/avg pooling against direct float64 loops written here, conv2d's
// shape errors, the max-pool adjoint's tie rule, and softmax cross-entropy against a stable float64
// reference and its label check. (Gradients: cnn_gradients_test; dropout and the graph value:
// cnn_dropout_graph_test.)
#include "cnn_support.hpp"

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
