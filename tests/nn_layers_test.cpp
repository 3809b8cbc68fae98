// Layer objects (nn/layers.hpp, nn/recurrent.hpp) and parameter sets (nn/parameters.hpp): variable
// names, seeded first values independent of layer order, the forward computation of each layer
// against its definition written out in loops (float64), and the GRU cell's gradients against
// central finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;

template <class T, class S>
tensor<T, S> random_values(std::array<std::size_t, S::rank> e, unsigned seed, double scale = 1) {
  tensor<T, S> t(e, uninitialized);
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, scale);
  for (auto& v : t) v = T(n(rng));
  return t;
}

template <class V>
auto stored(const params& p, const V&) {
  return p.view<typename V::value_type, typename V::shape_type>(std::string(V::name.view()));
}
template <class V>
auto stored(params& p, const V&) {
  return p.view<typename V::value_type, typename V::shape_type>(std::string(V::name.view()));
}
// The elements of a stored value, in storage order.
template <class View>
std::vector<double> elements(const View& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }

TEST(NnLayers, VariablesAreNamedAfterTheLayer) {
  nn::dense<"encoder", 3, 4> enc;
  nn::gru_cell<"rnn", 2, 5> cell;
  const auto vars = nn::variables_of(enc);
  EXPECT_EQ(std::get<0>(vars).name.view(), "encoder/W");
  EXPECT_EQ(std::get<1>(vars).name.view(), "encoder/b");
  const auto set = nn::parameters(enc, cell);
  static_assert(decltype(set)::size() == 6);
  std::vector<std::string> names;
  std::apply([&](const auto&... v) { (names.emplace_back(v.name.view()), ...); }, set.variables());
  EXPECT_EQ(names, (std::vector<std::string>{"encoder/W", "encoder/b", "rnn/W", "rnn/U", "rnn/b", "rnn/c"}));
}

TEST(NnLayers, FirstValuesDependOnTheSeedAndNameNotOnLayerOrder) {
  nn::dense<"a", 30, 20> a;
  nn::dense<"b", 20, 10> b({.weights = he_normal{}, .bias = constant_init{0.25}});
  const params ab = nn::parameters(a, b).initial_values(7);
  const params ba = nn::parameters(b, a).initial_values(7);
  const params other = nn::parameters(a, b).initial_values(8);
  for (const std::string name : {"a/W", "a/b", "b/W", "b/b"}) {
    const auto &x = ab.at(name), &y = ba.at(name);
    ASSERT_EQ(x.bytes.size(), y.bytes.size());
    EXPECT_EQ(std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()), 0) << name;
  }
  EXPECT_NE(std::memcmp(ab.at("a/W").bytes.data(), other.at("a/W").bytes.data(), ab.at("a/W").bytes.size()), 0);
  // Glorot-uniform within its limit sqrt(6 / (fan_in + fan_out)), zero biases, the chosen constant.
  const auto W = stored(ab, a.W.var);
  double largest = 0;
  for (double v : elements(W)) largest = std::max(largest, double(std::abs(v)));
  EXPECT_LE(largest, std::sqrt(6.0 / 50));
  EXPECT_GT(largest, 0.8 * std::sqrt(6.0 / 50));
  for (double v : elements(stored(ab, a.b.var))) EXPECT_EQ(v, 0.0);
  for (double v : elements(stored(ab, b.b.var))) EXPECT_EQ(v, 0.25);
  // Two variables of one layer do not share a stream: W and a same-shaped sibling differ.
  nn::gru_cell<"g", 4, 4> g;
  const params gp = nn::parameters(g).initial_values(1);
  EXPECT_NE(std::memcmp(gp.at("g/b").bytes.data(), gp.at("g/c").bytes.data(), gp.at("g/b").bytes.size()), 0);
}

TEST(NnLayers, HeNormalWeightsHaveTheirVariance) {
  nn::dense<"wide", 784, 256> wide({.weights = he_normal{}});
  const params p = nn::parameters(wide).initial_values(3);
  double sum = 0, squares = 0;
  const auto W = stored(p, wide.W.var);
  for (double v : elements(W)) sum += v, squares += v * v;
  const double n = double(W.size()), mean = sum / n, variance = squares / n - mean * mean;
  EXPECT_NEAR(mean, 0, 0.002);
  EXPECT_NEAR(variance / (2.0 / 784), 1, 0.02);
}

TEST(NnLayers, ListingAVariableTwiceIsAnError) {
  nn::dense<"a", 2, 2> a;
  nn::dense<"a", 2, 2> same_name;
  EXPECT_THROW((void)nn::parameters(a, a), value_error);
  EXPECT_THROW((void)nn::parameters(a, same_name), value_error);
}

TEST(NnLayers, ParametersOfListsEachVariableOfALossOnce) {
  auto x = placeholder<"x", double, shape<dyn, 3>>();
  nn::dense<"d1", 3, 3, double> d1;
  nn::dense<"d2", 3, 1, double> d2;
  const auto h = d1(x);
  const auto loss = sum(d2(h * h + d1(h)));  // d1's variables used twice
  const auto vars = nn::parameters_of(loss);
  static_assert(std::tuple_size_v<decltype(vars)> == 4);
  std::vector<std::string> names;
  std::apply([&](const auto&... v) { (names.emplace_back(v.name.view()), ...); }, vars);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"d1/W", "d1/b", "d2/W", "d2/b"}));
}

TEST(NnLayers, DenseLayerNormAndEmbeddingMatchTheirDefinitions) {
  auto x = placeholder<"x", double, shape<dyn, 5>>();
  auto ids = placeholder<"ids", std::int32_t, shape<dyn>>();
  nn::dense<"d", 5, 3, double> d({.bias = normal_init{0, 1}});
  nn::layer_norm<"ln", 3, double> ln({.scale = normal_init{1, 0.5}, .shift = normal_init{0, 0.5}});
  nn::embedding<"emb", 11, 5, double> emb;
  const params p = nn::parameters(d, ln, emb).initial_values(5);
  const auto xv = random_values<double, shape<dyn, 5>>({7, 5}, 1);
  tensor<std::int32_t, shape<dyn>> idv({4}, uninitialized);
  const std::int32_t picks[] = {10, 0, 3, 10};
  std::copy(std::begin(picks), std::end(picks), idv.begin());
  const auto y = eval(ln(d(x)), x = xv, p);
  const auto e = eval(emb(ids), ids = idv, p);
  const auto W = stored(p, d.W.var);
  const auto b = stored(p, d.b.var);
  const auto g = stored(p, ln.gamma.var);
  const auto be = stored(p, ln.beta.var);
  for (std::size_t r = 0; r < 7; ++r) {
    double z[3], mean = 0, var = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      z[j] = b(j);
      for (std::size_t k = 0; k < 5; ++k) z[j] += xv(r, k) * W(k, j);
      mean += z[j] / 3;
    }
    for (double v : z) var += (v - mean) * (v - mean) / 3;
    for (std::size_t j = 0; j < 3; ++j)
      EXPECT_NEAR(y(r, j), (z[j] - mean) / std::sqrt(var + 1e-5) * g(j) + be(j), 1e-12) << r << "," << j;
  }
  const auto table = stored(p, emb.table.var);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(e(i, j), table(std::size_t(picks[i]), j));
}

TEST(NnLayers, Conv2dLayerIsTheConvolutionPlusBias) {
  auto images = placeholder<"images", double, shape<dyn, 6, 5, 2>>();
  nn::conv2d<"conv", 3, 3, 2, 4> conv_f;  // float layer: only its types are checked here
  static_assert(std::is_same_v<value_type_of<decltype(conv_f(placeholder<"f", float, shape<1, 6, 5, 2>>()))>, float>);
  nn::conv2d<"conv", 3, 3, 2, 4, 1, padding::same, double> conv({.bias = normal_init{0, 1}});
  const params p = nn::parameters(conv).initial_values(9);
  const auto xv = random_values<double, shape<dyn, 6, 5, 2>>({2, 6, 5, 2}, 4);
  const auto got = eval(conv(images), images = xv, p);
  const auto W = stored(p, conv.W.var);
  const auto b = stored(p, conv.b.var);
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 5; ++j)
        for (std::size_t o = 0; o < 4; ++o) {
          double want = b(o);
          for (std::size_t di = 0; di < 3; ++di)
            for (std::size_t dj = 0; dj < 3; ++dj) {
              const long si = long(i + di) - 1, sj = long(j + dj) - 1;  // same padding: 1 on each side
              if (si < 0 || si >= 6 || sj < 0 || sj >= 5) continue;
              for (std::size_t c = 0; c < 2; ++c) want += xv(n, std::size_t(si), std::size_t(sj), c) * W(di, dj, c, o);
            }
          EXPECT_NEAR(got(n, i, j, o), want, 1e-12);
        }

  // Dilation 2 and 2 groups: output channels 0-1 read input channel 0, 2-3 read channel 1; the
  // dilated 3x3 window spans 5, so same padding puts 2 on each side.
  nn::conv2d<"gconv", 3, 3, 2, 4, 1, padding::same, double, 2, 2> grouped;
  static_assert(std::is_same_v<shape_of<decltype(grouped.W.var)>, shape<3, 3, 1, 4>>);
  const params pg = nn::parameters(grouped).initial_values(10);
  const auto gy = eval(grouped(images), images = xv, pg);
  const auto gW = stored(pg, grouped.W.var);
  const auto gb = stored(pg, grouped.b.var);
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 5; ++j)
        for (std::size_t o = 0; o < 4; ++o) {
          double want = gb(o);
          for (std::size_t di = 0; di < 3; ++di)
            for (std::size_t dj = 0; dj < 3; ++dj) {
              const long si = long(i + 2 * di) - 2, sj = long(j + 2 * dj) - 2;
              if (si < 0 || si >= 6 || sj < 0 || sj >= 5) continue;
              want += xv(n, std::size_t(si), std::size_t(sj), o / 2) * gW(di, dj, 0, o);
            }
          EXPECT_NEAR(gy(n, i, j, o), want, 1e-12);
        }
}

// The GRU and LSTM equations written out per element, PyTorch's gate order.
struct cell_reference {
  std::size_t batch, input, hidden;
  template <class V>
  double affine(const V& W, const double* x, std::size_t in, std::size_t col) const {
    double s = 0;
    for (std::size_t k = 0; k < in; ++k) s += x[k] * W(k, col);
    return s;
  }
};

TEST(NnRecurrent, GruCellMatchesItsEquations) {
  constexpr std::size_t n = 3, in = 4, H = 5;
  auto x = placeholder<"x", double, shape<dyn, in>>();
  auto h = placeholder<"h", double, shape<dyn, H>>();
  nn::gru_cell<"gru", in, H, double> cell;
  const params p = nn::parameters(cell).initial_values(11);
  const auto xv = random_values<double, shape<dyn, in>>({n, in}, 1);
  const auto hv = random_values<double, shape<dyn, H>>({n, H}, 2);
  const auto got = eval(cell(x, h), x = xv, h = hv, p);
  const auto W = stored(p, cell.W.var);
  const auto U = stored(p, cell.U.var);
  const auto b = stored(p, cell.b.var);
  const auto c = stored(p, cell.c.var);
  const cell_reference ref{n, in, H};
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < H; ++j) {
      const double* xr = &xv(r, 0);
      const double* hr = &hv(r, 0);
      const double rg = sigmoid_ref(ref.affine(W, xr, in, j) + b(j) + ref.affine(U, hr, H, j) + c(j));
      const double zg = sigmoid_ref(ref.affine(W, xr, in, H + j) + b(H + j) + ref.affine(U, hr, H, H + j) + c(H + j));
      const double ng = std::tanh(ref.affine(W, xr, in, 2 * H + j) + b(2 * H + j) +
                                  rg * (ref.affine(U, hr, H, 2 * H + j) + c(2 * H + j)));
      EXPECT_NEAR(got(r, j), (1 - zg) * ng + zg * hv(r, j), 1e-13) << r << "," << j;
    }
}

TEST(NnRecurrent, LstmCellMatchesItsEquations) {
  constexpr std::size_t n = 2, in = 3, H = 4;
  auto x = placeholder<"x", double, shape<dyn, in>>();
  auto h = placeholder<"h", double, shape<dyn, H>>();
  auto c = placeholder<"c", double, shape<dyn, H>>();
  nn::lstm_cell<"lstm", in, H, double> cell;
  const params p = nn::parameters(cell).initial_values(12);
  const auto xv = random_values<double, shape<dyn, in>>({n, in}, 3);
  const auto hv = random_values<double, shape<dyn, H>>({n, H}, 4);
  const auto cv = random_values<double, shape<dyn, H>>({n, H}, 5);
  const auto [next_h, next_c] = cell(x, h, c);
  const auto [gh, gc] = eval(next_h, next_c, x = xv, h = hv, c = cv, p);
  const auto W = stored(p, cell.W.var);
  const auto U = stored(p, cell.U.var);
  const auto b = stored(p, cell.b.var);
  const cell_reference ref{n, in, H};
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < H; ++j) {
      const auto gate = [&](std::size_t g) {
        return ref.affine(W, &xv(r, 0), in, g * H + j) + ref.affine(U, &hv(r, 0), H, g * H + j) + b(g * H + j);
      };
      const double cn = sigmoid_ref(gate(1)) * cv(r, j) + sigmoid_ref(gate(0)) * std::tanh(gate(2));
      EXPECT_NEAR(gc(r, j), cn, 1e-13);
      EXPECT_NEAR(gh(r, j), sigmoid_ref(gate(3)) * std::tanh(cn), 1e-13);
    }
}

// Two GRU steps (the state of the first feeds the second, so U and c are reached twice) against
// central differences of every weight, bias and input.
TEST(NnRecurrent, GruGradientsMatchFiniteDifferences) {
  constexpr std::size_t n = 2, in = 3, H = 4;
  auto x = placeholder<"x", double, shape<dyn, in>>();
  auto h0 = placeholder<"h0", double, shape<dyn, H>>();
  auto weights = placeholder<"weights", double, shape<dyn, H>>();
  nn::gru_cell<"gru", in, H, double> cell;
  params p = nn::parameters(cell).initial_values(13);
  const auto xv = random_values<double, shape<dyn, in>>({n, in}, 6);
  const auto hv = random_values<double, shape<dyn, H>>({n, H}, 7);
  const auto wv = random_values<double, shape<dyn, H>>({n, H}, 8);
  const auto loss = sum(cell(x, cell(x, h0)) * weights);
  const auto value = [&] { return eval(loss, x = xv, h0 = hv, weights = wv, p)[0]; };
  const auto check = [&](const auto& parameter) {
    const auto& var = parameter.var;
    const auto g = eval(grad(loss, var), x = xv, h0 = hv, weights = wv, p);
    auto w = stored(p, var);
    for (std::size_t i = 0; i < w.size(); ++i) {
      double* slot = w.data() + i;
      const double saved = *slot, step = 1e-6;
      *slot = saved + step;
      const double up = value();
      *slot = saved - step;
      const double down = value();
      *slot = saved;
      EXPECT_NEAR(g.data()[i], (up - down) / (2 * step), 1e-7) << var.name.view() << "[" << i << "]";
    }
  };
  check(cell.W);
  check(cell.U);
  check(cell.b);
  check(cell.c);
}

}  // namespace
