// Every elementwise op checked against a float64 reference computed here with <cmath>, on random
// inputs (fixed seeds), on the SIMD path (float/double, sizes that are not multiples of the packet
// width, large enough for the threaded path) and the scalar path (int32/int64/bool, ops without a
// packet form): arithmetic, unary functions, comparisons, where and casts. (Fused chains and
// broadcasting: elementwise_broadcast_test; IEEE special values: elementwise_ieee_test.)
//
// Compile time matters (every distinct expression type instantiates the fused evaluator), so the
// checks go through a few typed helpers that take the expression as a lambda and loop over sizes
// and data at run time.
#include "elementwise_support.hpp"

TEST(ElementwiseArithmetic, FloatTensorTensor) {
  check_binary<float>("a+b", [](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; }, -10, 10, -10, 10,
                      f32);
  check_binary<float>("a-b", [](auto a, auto b) { return a - b; }, [](double a, double b) { return a - b; }, -10, 10, -10, 10,
                      // a - b cancels: the float result is exact-rounded from exact inputs, so
                      // relative to the result it is still within 0.5 ulp.
                      f32);
  check_binary<float>("a*b", [](auto a, auto b) { return a * b; }, [](double a, double b) { return a * b; }, -10, 10, -10, 10,
                      f32);
  check_binary<float>("a/b", [](auto a, auto b) { return a / b; }, [](double a, double b) { return a / b; }, -10, 10, 0.25, 8,
                      f32, true);
}

TEST(ElementwiseArithmetic, DoubleTensorTensor) {
  check_binary<double>("a+b", [](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; }, -10, 10, -10, 10);
  check_binary<double>("a*b-a/b", [](auto a, auto b) { return a * b - a / b; },
                       [](double a, double b) { return a * b - a / b; }, 1, 10, 1, 10,
                       // two roundings feed a subtraction of positive terms: relative error stays
                       // a few ulps of the larger term, which is at most ~10x the result here
                       tolerance{1e-13, 0});
}

TEST(ElementwiseArithmetic, ScalarsOnEitherSide) {
  // Each op once with the scalar on the left and once on the right (one fused expression per op).
  // x in [1, 4] keeps every intermediate positive, so two roundings give at most ~1 ulp relative
  // each: the f32 tolerance holds with margin. Integer literals take the tensor's dtype.
  check_unary<float>("(2.5+x)+1.25", [](auto x) { return (2.5f + x) + 1.25f; }, [](double v) { return 2.5 + v + 1.25; }, 1, 4);
  check_unary<float>("(9-x)-3", [](auto x) { return (9.0f - x) - 3; }, [](double v) { return 9.0 - v - 3.0; }, 1, 4);
  check_unary<float>("(1.5*x)*0.75", [](auto x) { return (1.5f * x) * 0.75f; }, [](double v) { return 1.5 * v * 0.75; }, -4, 4);
  check_unary<float>("(2/x)/3", [](auto x) { return (2.0f / x) / 3; }, [](double v) { return 2.0 / v / 3.0; }, 0.25, 4, f32,
                     true);
  check_unary<double>("(1-x)*0.1/x", [](auto x) { return (1.0 - x) * 0.1 / x; }, [](double v) { return (1 - v) * 0.1 / v; },
                      2, 5, tolerance{4e-15, 0});
}

TEST(ElementwiseArithmetic, IntegersAreExact) {
  // Scalar path (no packets for integers): C++ integer semantics, division truncates toward zero.
  check_binary<std::int32_t>("a+b*a-b", [](auto a, auto b) { return a + b * a - b; },
                             [](double a, double b) { return a + b * a - b; }, -1000, 1000, -1000, 1000);
  check_binary<std::int32_t>("a/b", [](auto a, auto b) { return a / b; },
                             [](double a, double b) { return std::trunc(a / b); }, -100000, 100000, 1, 300, exact, true);
  check_unary<std::int32_t>("7-x/2", [](auto x) { return 7 - x / 2; }, [](double v) { return 7 - std::trunc(v / 2); },
                            -1000, 1000);
  // int64: products beyond the int32 range, still exact in double (< 2^53).
  check_binary<std::int64_t>("a*b-a/3", [](auto a, auto b) { return a * b - a / 3; },
                             [](double a, double b) { return a * b - std::trunc(a / 3); }, -3e9, 3e9, -1e5, 1e5);
}

// ---------------------------------------------------------------------------------------------
// Unary math, float (SIMD) and double. Domains keep clear of singularities and kinks.

TEST(ElementwiseUnary, NegSquareAbs) {
  check_unary<float>("-x", [](auto x) { return -x; }, [](double v) { return -v; }, -100, 100);
  check_unary<float>("neg", [](auto x) { return sf::neg(x); }, [](double v) { return -v; }, -100, 100);
  check_unary<float>("square", [](auto x) { return sf::square(x); }, [](double v) { return v * v; }, -100, 100);
  check_unary<float>("abs", [](auto x) { return sf::abs(x); }, [](double v) { return std::fabs(v); }, -100, 100);
  check_unary<double>("abs(square)", [](auto x) { return sf::abs(sf::square(x)); }, [](double v) { return v * v; }, -100, 100);
  check_unary<std::int32_t>("-abs(x)", [](auto x) { return -sf::abs(x); }, [](double v) { return -std::fabs(v); }, -1000, 1000);
  check_unary<std::int64_t>("square", [](auto x) { return sf::square(x); }, [](double v) { return v * v; }, -3e6, 3e6);
}

TEST(ElementwiseUnary, Sign) {
  // Inputs include exact zeros (integers from a small range, and zeros injected for floats).
  check_unary<std::int32_t>("sign", [](auto x) { return sf::sign(x); }, sign_ref, -3, 3);
  const auto x = sf::placeholder<"x", float, shape<dyn>>();
  auto g = rng(1);
  auto in = random_tensor<float, 1>({1001}, -2, 2, g);
  for (std::size_t i = 0; i < in.size(); i += 7) in[i] = (i % 2) ? 0.0f : -0.0f;
  const auto out = sf::eval(sf::sign(x), x = in);
  std::vector<double> want;
  for (float v : in) want.push_back(sign_ref(v));
  EXPECT_TRUE(all_close(out, want, exact));
}

TEST(ElementwiseUnary, Exp) {
  check_unary<float>("exp", [](auto x) { return sf::exp(x); }, [](double v) { return std::exp(v); }, -20, 20);
  check_unary<double>("exp", [](auto x) { return sf::exp(x); }, [](double v) { return std::exp(v); }, -50, 50);
}

TEST(ElementwiseUnary, Log) {
  // log crosses zero at 1: absolute slack of a few ulps of the result scale near there.
  check_unary<float>("log", [](auto x) { return sf::log(x); }, [](double v) { return std::log(v); }, 1e-3, 1e3,
                     zero_crossing_tolerance<float>(1));
  check_unary<double>("log", [](auto x) { return sf::log(x); }, [](double v) { return std::log(v); }, 1e-3, 1e3,
                      zero_crossing_tolerance<double>(1));
}

TEST(ElementwiseUnary, Log1p) {
  check_unary<float>("log1p", [](auto x) { return sf::log1p(x); }, [](double v) { return std::log1p(v); }, -0.9, 10);
}

TEST(ElementwiseUnary, SqrtRsqrt) {
  check_unary<float>("sqrt", [](auto x) { return sf::sqrt(x); }, [](double v) { return std::sqrt(v); }, 1e-3, 1e4);
  check_unary<float>("rsqrt", [](auto x) { return sf::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 1e-3, 1e4);
  check_unary<double>("sqrt", [](auto x) { return sf::sqrt(x); }, [](double v) { return std::sqrt(v); }, 1e-3, 1e4);
  check_unary<double>("rsqrt", [](auto x) { return sf::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 1e-3, 1e4);
}

TEST(ElementwiseUnary, SinCos) {
  // |x| <= 10: sin and cos cross zero, so a few ulps of |x| absolute slack (see zero_crossing_tolerance).
  check_unary<float>("sin", [](auto x) { return sf::sin(x); }, [](double v) { return std::sin(v); }, -10, 10,
                     zero_crossing_tolerance<float>(10));
  check_unary<float>("cos", [](auto x) { return sf::cos(x); }, [](double v) { return std::cos(v); }, -10, 10,
                     zero_crossing_tolerance<float>(10));
  check_unary<double>("sin", [](auto x) { return sf::sin(x); }, [](double v) { return std::sin(v); }, -10, 10,
                      zero_crossing_tolerance<double>(10));
}

TEST(ElementwiseUnary, Tanh) {
  check_unary<float>("tanh", [](auto x) { return sf::tanh(x); }, [](double v) { return std::tanh(v); }, -6, 6);
}

TEST(ElementwiseUnary, Sigmoid) {
  check_unary<float>("sigmoid", [](auto x) { return sf::sigmoid(x); }, sigmoid_ref, -15, 15);
  check_unary<double>("sigmoid", [](auto x) { return sf::sigmoid(x); }, sigmoid_ref, -30, 30);
}

TEST(ElementwiseUnary, Relu) {
  check_unary<float>("relu", [](auto x) { return sf::relu(x); }, [](double v) { return v > 0 ? v : 0.0; }, -5, 5);
  check_unary<std::int32_t>("relu", [](auto x) { return sf::relu(x); }, [](double v) { return v > 0 ? v : 0.0; }, -5, 5);
}

TEST(ElementwiseUnary, Softplus) {
  check_unary<float>("softplus", [](auto x) { return sf::softplus(x); }, softplus_ref, -20, 20);
  check_unary<double>("softplus", [](auto x) { return sf::softplus(x); }, softplus_ref, -20, 20);
}

TEST(ElementwiseUnary, Pow) {
  // No packet form: the scalar path, std::pow in float.
  check_binary<float>("pow(a,b)", [](auto a, auto b) { return sf::pow(a, b); }, [](double a, double b) { return std::pow(a, b); },
                      0.1, 4, -3, 3);
  check_unary<float>("pow(2,x)", [](auto x) { return sf::pow(2.0f, x); }, [](double v) { return std::exp2(v); }, -10, 10);
}

TEST(ElementwiseBinary, MaximumMinimum) {
  check_binary<float>("maximum", [](auto a, auto b) { return sf::maximum(a, b); },
                      [](double a, double b) { return std::max(a, b); }, -5, 5, -5, 5, exact);
  check_binary<float>("minimum", [](auto a, auto b) { return sf::minimum(a, b); },
                      [](double a, double b) { return std::min(a, b); }, -5, 5, -5, 5, exact);
  // Scalars on the right and on the left: a clamp to [-1, 1].
  check_unary<float>("minimum(1,maximum(x,-1))", [](auto x) { return sf::minimum(1.0f, sf::maximum(x, -1.0f)); },
                     [](double v) { return std::min(1.0, std::max(v, -1.0)); }, -2, 2, exact);
  check_binary<double>("maximum-minimum", [](auto a, auto b) { return sf::maximum(a, b) - sf::minimum(a, b); },
                       [](double a, double b) { return std::fabs(a - b); }, -5, 5, -5, 5);
  check_binary<std::int32_t>("maximum", [](auto a, auto b) { return sf::maximum(a, b); },
                             [](double a, double b) { return std::max(a, b); }, -5, 5, -5, 5);
}

TEST(ElementwiseBinary, MaximumMinimumWithTies) {
  const auto a = sf::placeholder<"a", float, shape<dyn>>();
  const auto b = sf::placeholder<"b", float, shape<dyn>>();
  auto g = rng(2);
  auto av = random_tensor<float, 1>({1003}, -3, 3, g), bv = random_tensor<float, 1>({1003}, -3, 3, g);
  for (std::size_t i = 0; i < av.size(); i += 3) bv[i] = av[i];
  const auto out = sf::eval(sf::maximum(a, b) * 2.0f + sf::minimum(a, b), a = av, b = bv);
  std::vector<double> want;
  for (std::size_t i = 0; i < av.size(); ++i)
    want.push_back(2.0 * std::max<double>(av[i], bv[i]) + std::min<double>(av[i], bv[i]));
  EXPECT_TRUE(all_close(out, want, f32));
}

// ---------------------------------------------------------------------------------------------
// Comparisons -> bool masks, where, cast.

namespace {
// Every comparison of a and b, where b equals a at every third element so ties are exercised.
template <class T, bool All = true>
void check_comparisons(double lo, double hi, std::size_t n) {
  const auto a = sf::placeholder<"a", T, shape<dyn>>();
  const auto b = sf::placeholder<"b", T, shape<dyn>>();
  auto g = rng(unsigned(n) + 11);
  const auto av = random_tensor<T, 1>({n}, lo, hi, g);
  auto bv = random_tensor<T, 1>({n}, lo, hi, g);
  for (std::size_t i = 0; i < n; i += 3) bv[i] = av[i];
  const auto feeds = std::tuple{a = av, b = bv};
  auto run = [&](const char* what, const auto& e, auto ref) {
    static_assert(std::is_same_v<sf::value_type_of<decltype(e)>, bool>);
    const auto out = std::apply([&](const auto&... f) { return sf::eval(e, f...); }, feeds);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = ref(static_cast<double>(av[i]), static_cast<double>(bv[i]));
    EXPECT_TRUE(all_close(out, want, exact)) << what << " on " << sf::dtype_name(sf::dtype_v<T>) << "[" << n << "]";
  };
  run("<=", a <= b, [](double x, double y) { return double(x <= y); });
  run("not_equal", sf::not_equal(a, b), [](double x, double y) { return double(x != y); });
  if constexpr (All) {
    run("<", a < b, [](double x, double y) { return double(x < y); });
    run(">", a > b, [](double x, double y) { return double(x > y); });
    run(">=", a >= b, [](double x, double y) { return double(x >= y); });
    run("equal", sf::equal(a, b), [](double x, double y) { return double(x == y); });
  }
}
}  // namespace

TEST(ElementwiseCompare, AllComparisonsAllDtypes) {
  check_comparisons<float>(-2, 2, 1000);
  check_comparisons<float>(-2, 2, 70001);
  check_comparisons<std::int32_t, false>(-3, 3, 1000);
  check_comparisons<double, false>(-2, 2, 1000);
  check_comparisons<std::int64_t, false>(-4e10, 4e10, 1000);
}

TEST(ElementwiseCompare, ScalarOperandsOnEitherSide) {
  check_unary<float>("0.25<x", [](auto x) { return 0.25f < x; }, [](double v) { return double(0.25 < v); }, -1, 1);
  check_unary<std::int32_t>("1>=x", [](auto x) { return 1 >= x; }, [](double v) { return double(1 >= v); }, -2, 2);
}

TEST(ElementwiseCompare, BoolMasks) {
  // bool dtype, scalar path: comparisons of masks and where on bool branches.
  const auto m = sf::placeholder<"m", bool, shape<dyn>>();
  const auto k = sf::placeholder<"k", bool, shape<dyn>>();
  auto g = rng(3);
  const auto mv = random_tensor<bool, 1>({1001}, 0, 1, g), kv = random_tensor<bool, 1>({1001}, 0, 1, g);
  const auto eq = sf::eval(sf::equal(m, k), m = mv, k = kv);
  const auto ne = sf::eval(sf::not_equal(m, true), m = mv);
  const auto sel = sf::eval(sf::where(m, k, false), m = mv, k = kv);  // m && k
  std::vector<double> want_eq, want_ne, want_sel;
  for (std::size_t i = 0; i < mv.size(); ++i) {
    want_eq.push_back(mv[i] == kv[i]);
    want_ne.push_back(!mv[i]);
    want_sel.push_back(mv[i] && kv[i]);
  }
  EXPECT_TRUE(all_close(eq, want_eq, exact));
  EXPECT_TRUE(all_close(ne, want_ne, exact));
  EXPECT_TRUE(all_close(sel, want_sel, exact));
}

TEST(ElementwiseWhere, SelectsPerElement) {
  // where has no packet form: the whole fused group takes the scalar path.
  check_binary<float>("where(a>b,a,b)", [](auto a, auto b) { return sf::where(a > b, a, b); },
                      [](double a, double b) { return a > b ? a : b; }, -1, 1, -1, 1, exact);
  check_binary<float>("where(a<0,b*2,1-b)", [](auto a, auto b) { return sf::where(a < 0.0f, b * 2.0f, 1.0f - b); },
                      [](double a, double b) { return a < 0 ? b * 2 : 1 - b; }, -1, 1, -1, 1, f32);
  check_unary<float>("where(x>0,-2,x)", [](auto x) { return sf::where(x > 0.0f, -2.0f, x); },
                     [](double v) { return v > 0 ? -2.0 : v; }, -1, 1, exact);
  check_binary<std::int32_t>("where(a==b,a,-b)", [](auto a, auto b) { return sf::where(sf::equal(a, b), a, -b); },
                             [](double a, double b) { return a == b ? a : -b; }, -2, 2, -2, 2);
  check_binary<double>("exp(where)", [](auto a, auto b) { return sf::exp(sf::where(a >= b, a, b)); },
                       [](double a, double b) { return std::exp(std::max(a, b)); }, -3, 3, -3, 3);
}

TEST(ElementwiseWhere, MaskFedAndBroadcast) {
  const auto m = sf::placeholder<"m", bool, shape<dyn, 1>>();
  const auto a = sf::placeholder<"a", float, shape<1, dyn>>();
  const auto e = sf::where(m, a, -1.0f);
  static_assert(std::is_same_v<sf::shape_of<decltype(e)>, shape<dyn, dyn>>);
  auto g = rng(4);
  const auto mv = random_tensor<bool, 2>({37, 1}, 0, 1, g);
  const auto av = random_tensor<float, 2>({1, 29}, -5, 5, g);
  const auto out = sf::eval(e, m = mv, a = av);
  ASSERT_EQ(out.extents(), (sf::extents_t<2>{37, 29}));
  std::vector<double> want;
  for (std::size_t i = 0; i < 37; ++i)
    for (std::size_t j = 0; j < 29; ++j) want.push_back(mv[i] ? double(av[j]) : -1.0);
  EXPECT_TRUE(all_close(out, want, exact));
}

TEST(ElementwiseCast, FloatToInt) {
  // Conversion truncates toward zero (values kept inside the int range).
  check_unary<float>("cast<i32>", [](auto x) { return sf::cast<std::int32_t>(x); }, [](double v) { return std::trunc(v); },
                     -1000, 1000);
}

TEST(ElementwiseCast, IntToFloatAndWidening) {
  // |v| < 2^24: every int32 value is exactly representable in float.
  check_unary<std::int32_t>("cast<f32>", [](auto x) { return sf::cast<float>(x); }, [](double v) { return v; }, -(1 << 24),
                            1 << 24);
  check_unary<std::int64_t>("cast<i32>", [](auto x) { return sf::cast<std::int32_t>(x); }, [](double v) { return v; },
                            -2e9, 2e9);
  check_unary<float>("cast<f64>", [](auto x) { return sf::cast<double>(x); }, [](double v) { return v; }, -1e6, 1e6);
  // Narrowing rounds to nearest: within half an ulp of float.
  check_unary<double>("cast<f32>", [](auto x) { return sf::cast<float>(x); }, [](double v) { return v; }, -1e6, 1e6,
                      tolerance{0x1p-24, 0});
}

TEST(ElementwiseCast, BoolConversions) {
  check_unary<std::int32_t>("cast<bool>", [](auto x) { return sf::cast<bool>(x); }, [](double v) { return double(v != 0); }, -2,
                            2);
  check_unary<bool>("cast<f32>", [](auto m) { return sf::cast<float>(m) * 3.0f; }, [](double v) { return 3 * v; }, 0, 1);
  // float -> bool: nonzero is true, including -0.0 -> false.
  const auto x = sf::placeholder<"x", float, shape<dyn>>();
  dyn_tensor<float, 1> in({8}, 0.0f);
  const float values[] = {0.0f, -0.0f, 1e-30f, -2.5f, 0.0f, 3.0f, 1e-45f, -0.0f};
  std::copy(std::begin(values), std::end(values), in.begin());
  const auto out = sf::eval(sf::cast<bool>(x), x = in);
  EXPECT_TRUE(all_close(out, {0, 0, 1, 1, 0, 1, 1, 0}, exact));
}

TEST(ElementwiseCast, MixedDtypeChain) {
  // cast inside a fused chain: int labels become float weights.
  const auto i = sf::placeholder<"i", std::int32_t, shape<dyn>>();
  const auto x = sf::placeholder<"x", float, shape<dyn>>();
  auto g = rng(5);
  const auto iv = random_tensor<std::int32_t, 1>({70001}, -100, 100, g);
  const auto xv = random_tensor<float, 1>({70001}, -1, 1, g);
  const auto out = sf::eval(sf::cast<float>(i) * x + 1.0f, i = iv, x = xv);
  std::vector<double> want;
  for (std::size_t k = 0; k < iv.size(); ++k) want.push_back(double(iv[k]) * xv[k] + 1.0);
  // two float roundings (product, sum) where the sum can cancel down to the size of the product's rounding:
  // bound by ulps of the product's magnitude (|i*x| <= 100).
  EXPECT_TRUE(all_close(out, want, tolerance{2e-6, 4 * 100 * 0x1p-24}));
}
