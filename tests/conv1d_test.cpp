// conv1d (ops/conv1d.hpp) against direct float64 loops (valid and TensorFlow-same padding, strides
// 1 and 2, odd lengths, a dyn batch or a dyn length), its gradients against central differences,
// and the graph interpreter against compiled evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

constexpr std::size_t N = 2, L = 11, C = 3, K = 4, O = 5;

// y[n, t, o] = sum over k, c of x[n, t * stride + k - begin, c] w[k, c, o], zero outside x.
std::vector<double> direct(const std::vector<double>& x, const std::vector<double>& w, std::size_t length,
                           std::size_t stride, bool same, std::size_t& out_length) {
  std::size_t begin = 0;
  if (same) {
    out_length = (length + stride - 1) / stride;
    const long total = std::max<long>(long((out_length - 1) * stride + K) - long(length), 0);
    begin = std::size_t(total / 2);
  } else {
    out_length = (length - K) / stride + 1;
  }
  std::vector<double> y(N * out_length * O, 0.0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t t = 0; t < out_length; ++t)
      for (std::size_t o = 0; o < O; ++o) {
        double s = 0;
        for (std::size_t k = 0; k < K; ++k) {
          const long at = long(t * stride + k) - long(begin);
          if (at < 0 || at >= long(length)) continue;
          for (std::size_t c = 0; c < C; ++c) s += x[(n * length + std::size_t(at)) * C + c] * w[(k * C + c) * O + o];
        }
        y[(n * out_length + t) * O + o] = s;
      }
  return y;
}

template <class T, class S>
tensor<T, S> filled(extents_t<S::rank> e, unsigned seed) {
  tensor<T, S> t(e, T(0));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto& v : t) v = T(d(rng));
  return t;
}

template <std::size_t Stride, padding Padding, class XP>
void check(const XP& x) {
  SCOPED_TRACE("stride " + std::to_string(Stride) + (Padding == padding::same ? ", same" : ", valid"));
  const auto w = placeholder<"w", double, shape<K, C, O>>();
  const auto xv = filled<double, shape<dyn, dyn, C>>({N, L, C}, 7 + Stride);
  const auto wv = filled<double, shape<K, C, O>>({K, C, O}, 8 + Stride);
  const auto y = eval(conv1d<Stride, Padding>(x, w), x = xv, w = wv);
  std::size_t out_length = 0;
  const auto want = direct(std::vector<double>(xv.data(), xv.data() + xv.size()),
                           std::vector<double>(wv.data(), wv.data() + wv.size()), L, Stride, Padding == padding::same,
                           out_length);
  ASSERT_EQ(y.extent(0), N);
  ASSERT_EQ(y.extent(1), out_length);
  ASSERT_EQ(y.extent(2), O);
  for (std::size_t q = 0; q < want.size(); ++q) EXPECT_NEAR(y.data()[q], want[q], 1e-12) << q;

  // Gradients of sum(y * r) against central differences, for a few elements of x and of w.
  const auto r = placeholder<"r", double, shape<dyn, dyn, O>>();
  const auto rv = filled<double, shape<dyn, dyn, O>>({N, out_length, O}, 9);
  const auto loss = sum(conv1d<Stride, Padding>(x, w) * r);
  const auto gx = eval(grad(loss, x), x = xv, w = wv, r = rv);
  const auto gw = eval(grad(loss, w), x = xv, w = wv, r = rv);
  // d loss / d t[q] by central differences, t being x's or w's value.
  auto central = [&](auto t, std::size_t q, auto&& loss_at) {
    const double h = 1e-6, keep = t.data()[q];
    t.data()[q] = keep + h;
    const double up = loss_at(t);
    t.data()[q] = keep - h;
    return (up - loss_at(t)) / (2 * h);
  };
  for (std::size_t q : {std::size_t(0), std::size_t(13), xv.size() - 1})
    EXPECT_NEAR(gx.data()[q], central(xv, q, [&](const auto& p) { return eval(loss, x = p, w = wv, r = rv)(); }), 1e-7)
        << "x element " << q;
  for (std::size_t q : {std::size_t(0), std::size_t(17), wv.size() - 1})
    EXPECT_NEAR(gw.data()[q], central(wv, q, [&](const auto& p) { return eval(loss, x = xv, w = p, r = rv)(); }), 1e-7)
        << "w element " << q;

  // The graph interpreter runs the same composition.
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(xv));
  feeds.insert_or_assign("w", runtime_tensor(wv));
  const auto interpreted = interpreter(to_graph(conv1d<Stride, Padding>(x, w))).run(feeds)[0];
  for (std::size_t q = 0; q < want.size(); ++q) EXPECT_NEAR(interpreted.data<double>()[q], want[q], 1e-12) << q;
}

TEST(Conv1d, AgainstDirectLoops) {
  const auto x = placeholder<"x", double, shape<dyn, L, C>>();  // a dyn batch
  check<1, padding::valid>(x);
  check<2, padding::valid>(x);
  check<1, padding::same>(x);
  check<2, padding::same>(x);
  const auto xl = placeholder<"x", double, shape<N, dyn, C>>();  // a dyn length
  check<2, padding::same>(xl);
}

TEST(Conv1d, ShapesInTheType) {
  const auto x = placeholder<"x", float, shape<dyn, 100, 8>>();
  const auto w = variable<"w", float, shape<5, 8, 16>>();
  static_assert(std::is_same_v<shape_of<decltype(conv1d(x, w))>, shape<dyn, 96, 16>>);
  static_assert(std::is_same_v<shape_of<decltype(conv1d<2, padding::same>(x, w))>, shape<dyn, 50, 16>>);
}

}  // namespace
