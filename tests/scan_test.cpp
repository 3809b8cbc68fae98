// scan (nn/scan.hpp): a GRU run over a sequence against the GRU equations written out in float64
// loops, one type for every sequence length, backpropagation through time against central finite
// differences (weights, biases, h0 and xs), its graph form (the graph value's scan) against the typed
// forms, and an empty sequence refused. scan_body_leaves_test.cpp has integer inputs and outer
// placeholders in the body, scan_lstm_test.cpp an LSTM (a test program of its own: with it this one
// needed 2.9 GB to compile).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/ir/to_graph.hpp>
#include <symflow/nn/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

#include "scan_support.hpp"

namespace {
using namespace symflow;
using namespace scan_testing;

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }

template <class Cell>
std::vector<double> gru_reference(const Cell& cell, const params& p, const tensor<double, shape<dyn, batch, in>>& xs,
                                  const tensor<double, shape<batch, H>>& h0) {
  const auto W = p.view<double, shape<in, 3 * H>>(std::string(decltype(cell.W.var)::name.view()));
  const auto U = p.view<double, shape<H, 3 * H>>(std::string(decltype(cell.U.var)::name.view()));
  const auto b = p.view<double, shape<3 * H>>(std::string(decltype(cell.b.var)::name.view()));
  const auto c = p.view<double, shape<3 * H>>(std::string(decltype(cell.c.var)::name.view()));
  const std::size_t steps = xs.extents()[0];
  std::vector<double> h(h0.begin(), h0.end()), out;
  for (std::size_t t = 0; t < steps; ++t) {
    std::vector<double> next(batch * H);
    for (std::size_t r = 0; r < batch; ++r)
      for (std::size_t j = 0; j < H; ++j) {
        double gi[3], gh[3];
        for (std::size_t g = 0; g < 3; ++g) {
          gi[g] = b(g * H + j);
          gh[g] = c(g * H + j);
          for (std::size_t k = 0; k < in; ++k) gi[g] += xs(t, r, k) * W(k, g * H + j);
          for (std::size_t k = 0; k < H; ++k) gh[g] += h[r * H + k] * U(k, g * H + j);
        }
        const double rg = sigmoid_ref(gi[0] + gh[0]), zg = sigmoid_ref(gi[1] + gh[1]);
        const double ng = std::tanh(gi[2] + rg * gh[2]);
        next[r * H + j] = (1 - zg) * ng + zg * h[r * H + j];
      }
    h = next;
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

TEST(Scan, GruOverASequenceMatchesItsEquationsWithOneTypeForEveryLength) {
  auto xs = placeholder<"xs", double, shape<dyn, batch, in>>();
  auto h0 = placeholder<"h0", double, shape<batch, H>>();
  nn::gru_cell<"gru", in, H, double> cell;
  const params p = nn::parameters(cell).initial_values(21);
  const auto states = scan(cell, h0, xs);
  static_assert(std::is_same_v<shape_of<decltype(states)>, shape<dyn, batch, H>>);
  const auto hv = random_values<shape<batch, H>>({batch, H}, 2);
  for (std::size_t steps : {1u, 2u, 7u}) {
    const auto xv = random_values<shape<dyn, batch, in>>({steps, batch, in}, unsigned(steps));
    const auto got = eval(states, xs = xv, h0 = hv, p);
    const auto want = gru_reference(cell, p, xv, hv);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data()[i], want[i], 1e-13) << steps << ":" << i;
  }
}

TEST(Scan, BackpropagationThroughTimeMatchesFiniteDifferences) {
  constexpr std::size_t steps = 5;
  auto xs = placeholder<"xs", double, shape<dyn, batch, in>>();
  auto h0 = placeholder<"h0", double, shape<batch, H>>();
  auto weights = placeholder<"weights", double, shape<dyn, batch, H>>();
  nn::gru_cell<"gru", in, H, double> cell;
  params p = nn::parameters(cell).initial_values(22);
  auto xv = random_values<shape<dyn, batch, in>>({steps, batch, in}, 3);
  auto hv = random_values<shape<batch, H>>({batch, H}, 4);
  const auto wv = random_values<shape<dyn, batch, H>>({steps, batch, H}, 5);
  // Every step's state reaches the loss, and the last one twice (through sum and square).
  const auto states = scan(cell, h0, xs);
  const auto loss = sum(states * weights) + sum(square(narrow<0>(states, steps - 1, steps)));
  const auto value = [&] { return eval(loss, xs = xv, h0 = hv, weights = wv, p)[0]; };
  const auto [dW, dU, db, dc, dh0, dxs] =
      std::apply([&](const auto&... g) { return eval(g..., xs = xv, h0 = hv, weights = wv, p); },
                 grad(loss, cell.W.var, cell.U.var, cell.b.var, cell.c.var, h0, xs));
  const auto check_stored = [&](const auto& gradient, const auto& var, const char* what) {
    expect_stored_gradient(p, gradient, var, value, what);
  };
  check_stored(dW, cell.W.var, "W");
  check_stored(dU, cell.U.var, "U");
  check_stored(db, cell.b.var, "b");
  check_stored(dc, cell.c.var, "c");
  for (std::size_t i = 0; i < hv.size(); ++i)
    EXPECT_NEAR(dh0.data()[i], central_difference(hv.data() + i, value), 1e-7) << "h0[" << i << "]";
  for (std::size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR(dxs.data()[i], central_difference(xv.data() + i, value), 1e-7) << "xs[" << i << "]";
}

// to_graph writes the typed scan as the graph value's scan, its body lowered as a sub-graph: the
// interpreter runs it as eval does, differentiate gives grad's gradient, and the file round trips.
TEST(Scan, LowersToTheGraphScanWhichRunsAndDifferentiatesAsTheTypedOne) {
  constexpr std::size_t steps = 4;
  auto xs = placeholder<"xs", double, shape<dyn, batch, in>>();
  auto h0 = placeholder<"h0", double, shape<batch, H>>();
  auto weights = placeholder<"weights", double, shape<dyn, batch, H>>();
  nn::gru_cell<"gru", in, H, double> cell;
  const params p = nn::parameters(cell).initial_values(23);
  const auto xv = random_values<shape<dyn, batch, in>>({steps, batch, in}, 6);
  const auto hv = random_values<shape<batch, H>>({batch, H}, 7);
  const auto wv = random_values<shape<dyn, batch, H>>({steps, batch, H}, 8);
  const auto loss = sum(scan(cell, h0, xs) * weights);
  const graph g = load_graph_binary(save_graph_binary(to_graph(loss)));
  ASSERT_EQ(g, to_graph(loss));
  std::size_t scans = 0;
  for (const auto& n : g.nodes) scans += n.op == "scan";
  EXPECT_EQ(scans, 1u);
  runtime_feeds feeds;
  feeds.insert_or_assign("xs", runtime_tensor(xv));
  feeds.insert_or_assign("h0", runtime_tensor(hv));
  feeds.insert_or_assign("weights", runtime_tensor(wv));
  const std::vector<std::string> names{std::string(decltype(cell.W.var)::name.view()),
                                       std::string(decltype(cell.U.var)::name.view()),
                                       std::string(decltype(cell.b.var)::name.view()),
                                       std::string(decltype(cell.c.var)::name.view()), "h0", "xs"};
  const auto out = interpreter(differentiate(g, names)).run(feeds, &p);
  EXPECT_NEAR(out[0].data<double>()[0], eval(loss, xs = xv, h0 = hv, weights = wv, p)[0], 1e-12);
  const auto want = std::apply([&](const auto&... d) { return eval(d..., xs = xv, h0 = hv, weights = wv, p); },
                               grad(loss, cell.W.var, cell.U.var, cell.b.var, cell.c.var, h0, xs));
  std::size_t k = 1;
  std::apply(
      [&](const auto&... d) {
        ([&] {
           ASSERT_EQ(out[k].size(), d.size()) << names[k - 1];
           for (std::size_t i = 0; i < d.size(); ++i)
             EXPECT_NEAR(out[k].data<double>()[i], d.data()[i], 1e-11) << names[k - 1] << "[" << i << "]";
           ++k;
         }(),
         ...);
      },
      want);
}

TEST(Scan, AnEmptySequenceIsAShapeError) {
  auto xs = placeholder<"xs", double, shape<dyn, batch, in>>();
  auto h0 = placeholder<"h0", double, shape<batch, H>>();
  nn::gru_cell<"gru", in, H, double> cell;
  const params p = nn::parameters(cell).initial_values(1);
  const tensor<double, shape<dyn, batch, in>> none({0, batch, in}, 0.0);
  const auto hv = random_values<shape<batch, H>>({batch, H}, 2);
  try {
    (void)eval(scan(cell, h0, xs), xs = none, h0 = hv, p);
    FAIL() << "no error";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("scan"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

}  // namespace
