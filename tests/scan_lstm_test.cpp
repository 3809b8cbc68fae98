// scan (nn/scan.hpp) over an LSTM cell on its packed state [h, c]: the states against the cell's
// equations unrolled by hand in float64, backpropagation through time against central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>

#include "scan_support.hpp"

namespace {
using namespace symflow;
using namespace scan_testing;

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }

// An LSTM under scan, on its packed state [h, c]: the states match the cell's equations unrolled
// by hand, and backpropagation through time matches central differences.
TEST(Scan, LstmOnAPackedStateMatchesItsEquationsAndFiniteDifferences) {
  constexpr std::size_t steps = 4;
  auto xs = placeholder<"xs", double, shape<dyn, batch, in>>();
  auto hc0 = placeholder<"hc0", double, shape<batch, 2 * H>>();
  auto weights = placeholder<"weights", double, shape<dyn, batch, 2 * H>>();
  nn::lstm_cell<"lstm", in, H, double> cell;
  params p = nn::parameters(cell).initial_values(23);
  auto xv = random_values<shape<dyn, batch, in>>({steps, batch, in}, 6);
  auto hv = random_values<shape<batch, 2 * H>>({batch, 2 * H}, 7);
  const auto wv = random_values<shape<dyn, batch, 2 * H>>({steps, batch, 2 * H}, 8);
  const auto states = scan(cell, hc0, xs);
  static_assert(std::is_same_v<shape_of<decltype(states)>, shape<dyn, batch, 2 * H>>);
  const auto got = eval(states, xs = xv, hc0 = hv, p);
  const auto W = p.view<double, shape<in, 4 * H>>(std::string(decltype(cell.W.var)::name.view()));
  const auto U = p.view<double, shape<H, 4 * H>>(std::string(decltype(cell.U.var)::name.view()));
  const auto b = p.view<double, shape<4 * H>>(std::string(decltype(cell.b.var)::name.view()));
  std::vector<double> h(batch * H), c(batch * H);
  for (std::size_t r = 0; r < batch; ++r)
    for (std::size_t j = 0; j < H; ++j) h[r * H + j] = hv(r, j), c[r * H + j] = hv(r, H + j);
  for (std::size_t t = 0; t < steps; ++t) {
    std::vector<double> nh(batch * H), nc(batch * H);
    for (std::size_t r = 0; r < batch; ++r)
      for (std::size_t j = 0; j < H; ++j) {
        double gate[4];
        for (std::size_t g = 0; g < 4; ++g) {
          gate[g] = b(g * H + j);
          for (std::size_t k = 0; k < in; ++k) gate[g] += xv(t, r, k) * W(k, g * H + j);
          for (std::size_t k = 0; k < H; ++k) gate[g] += h[r * H + k] * U(k, g * H + j);
        }
        nc[r * H + j] = sigmoid_ref(gate[1]) * c[r * H + j] + sigmoid_ref(gate[0]) * std::tanh(gate[2]);
        nh[r * H + j] = sigmoid_ref(gate[3]) * std::tanh(nc[r * H + j]);
      }
    h = nh, c = nc;
    for (std::size_t r = 0; r < batch; ++r)
      for (std::size_t j = 0; j < H; ++j) {
        EXPECT_NEAR(got(t, r, j), h[r * H + j], 1e-13) << t << "," << r << "," << j;
        EXPECT_NEAR(got(t, r, H + j), c[r * H + j], 1e-13) << t << "," << r << "," << j;
      }
  }
  const auto loss = sum(states * weights);
  const auto value = [&] { return eval(loss, xs = xv, hc0 = hv, weights = wv, p)[0]; };
  const auto [dW, dU, db, dhc0] = std::apply([&](const auto&... g) { return eval(g..., xs = xv, hc0 = hv, weights = wv, p); },
                                             grad(loss, cell.W.var, cell.U.var, cell.b.var, hc0));
  const auto check_stored = [&](const auto& gradient, const auto& var, const char* what) {
    expect_stored_gradient(p, gradient, var, value, what);
  };
  check_stored(dW, cell.W.var, "W");
  check_stored(dU, cell.U.var, "U");
  check_stored(db, cell.b.var, "b");
  for (std::size_t i = 0; i < hv.size(); ++i)
    EXPECT_NEAR(dhc0.data()[i], central_difference(hv.data() + i, value), 1e-7) << "hc0[" << i << "]";
}

}  // namespace
