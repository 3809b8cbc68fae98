// Runtime graph control flow (ir/control_flow/): scan, cond and while as graph nodes holding
// sub-graphs. Results against float64 loops written here; gradients (scan_adjoint, the cond of the
// branches' gradients, while_adjoint) against central finite differences of the interpreter's own
// forward runs; JSON and binary round trips; malformed sub-graphs refused with the node named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <symflow/io/binary.hpp>
#include <symflow/io/json.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

runtime_tensor random_f64(runtime_extents e, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  runtime_tensor t(dtype::f64, std::move(e));
  for (std::size_t i = 0; i < t.size(); ++i) t.data<double>()[i] = u(rng);
  return t;
}

std::vector<std::int64_t> shape_of(const runtime_tensor& t) { return {t.extents().begin(), t.extents().end()}; }

// A GRU cell without the reset gate's bias: h' = (1 - z) n + z h, z = sigmoid(x Wz + h Uz + bz),
// r = sigmoid(x Wr + h Ur), n = tanh(x Wn + (r h) Un). Inputs (h, x, Wz, Uz, bz, Wr, Ur, Wn, Un).
graph gru_body(std::int64_t in, std::int64_t hidden) {
  graph_builder b;
  auto h = b.input("h", dtype::f64, {-1, hidden});
  auto x = b.input("x", dtype::f64, {-1, in});
  auto Wz = b.input("Wz", dtype::f64, {in, hidden});
  auto Uz = b.input("Uz", dtype::f64, {hidden, hidden});
  auto bz = b.input("bz", dtype::f64, {hidden});
  auto Wr = b.input("Wr", dtype::f64, {in, hidden});
  auto Ur = b.input("Ur", dtype::f64, {hidden, hidden});
  auto Wn = b.input("Wn", dtype::f64, {in, hidden});
  auto Un = b.input("Un", dtype::f64, {hidden, hidden});
  auto z = sigmoid(matmul(x, Wz) + matmul(h, Uz) + bz);
  auto r = sigmoid(matmul(x, Wr) + matmul(h, Ur));
  auto n = tanh(matmul(x, Wn) + matmul(r * h, Un));
  return b.build({(1.0 - z) * n + z * h});
}

struct gru_case {
  std::size_t steps = 5, batch = 3, in = 4, hidden = 6;
  std::vector<std::string> names{"h0", "xs", "Wz", "Uz", "bz", "Wr", "Ur", "Wn", "Un", "R"};
  runtime_feeds feeds;
  gru_case() {
    const std::size_t I = in, H = hidden;
    const std::vector<runtime_extents> e{{batch, H}, {steps, batch, I}, {I, H}, {H, H}, {H},
                                         {I, H},     {H, H},            {I, H}, {H, H}, {steps, batch, H}};
    for (std::size_t k = 0; k < names.size(); ++k) feeds.insert_or_assign(names[k], random_f64(e[k], 100 + k, k == 1 ? 1.0 : 0.6));
  }
  // loss = sum(scan(...) * R): every step's state reaches the loss.
  graph loss_graph() const {
    graph_builder b;
    std::vector<graph_handle> leaves;
    for (const auto& name : names) leaves.push_back(b.input(name, dtype::f64, shape_of(feeds.at(name))));
    auto states = scan(gru_body(std::int64_t(in), std::int64_t(hidden)), leaves[0], leaves[1],
                       std::vector<graph_handle>(leaves.begin() + 2, leaves.end() - 1));
    return b.build({sum(states * leaves.back()), states});
  }
};

// The same recurrence in plain float64 loops.
std::vector<double> gru_reference(const gru_case& c) {
  const std::size_t B = c.batch, I = c.in, H = c.hidden;
  auto at = [&](const char* name) { return c.feeds.at(name).data<double>(); };
  std::vector<double> h(at("h0"), at("h0") + B * H), out;
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (std::size_t t = 0; t < c.steps; ++t) {
    const double* x = at("xs") + t * B * I;
    std::vector<double> next(B * H);
    for (std::size_t i = 0; i < B; ++i) {
      std::vector<double> r(H), rh(H);
      for (std::size_t j = 0; j < H; ++j) {
        double a = 0;
        for (std::size_t k = 0; k < I; ++k) a += x[i * I + k] * at("Wr")[k * H + j];
        for (std::size_t k = 0; k < H; ++k) a += h[i * H + k] * at("Ur")[k * H + j];
        r[j] = sig(a);
        rh[j] = r[j] * h[i * H + j];
      }
      for (std::size_t j = 0; j < H; ++j) {
        double az = at("bz")[j], an = 0;
        for (std::size_t k = 0; k < I; ++k) az += x[i * I + k] * at("Wz")[k * H + j], an += x[i * I + k] * at("Wn")[k * H + j];
        for (std::size_t k = 0; k < H; ++k) az += h[i * H + k] * at("Uz")[k * H + j], an += rh[k] * at("Un")[k * H + j];
        const double z = sig(az), n = std::tanh(an);
        next[i * H + j] = (1 - z) * n + z * h[i * H + j];
      }
    }
    h = next;
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

// Central differences of output 0 (a scalar) of g with respect to every element of feed `name`.
std::vector<double> finite_differences(const graph& g, runtime_feeds feeds, const std::string& name, double step = 1e-6) {
  interpreter run(g);
  std::vector<double> out;
  runtime_tensor& x = feeds.at(name);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x.data<double>()[i];
    x.data<double>()[i] = saved + step;
    const double up = run.run(feeds)[0].data<double>()[0];
    x.data<double>()[i] = saved - step;
    const double down = run.run(feeds)[0].data<double>()[0];
    x.data<double>()[i] = saved;
    out.push_back((up - down) / (2 * step));
  }
  return out;
}

void expect_gradients_match_differences(const graph& g, const runtime_feeds& feeds, const std::vector<std::string>& wrt,
                                        double tolerance) {
  const graph dg = differentiate(g, wrt);
  const auto out = interpreter(dg).run(feeds);
  ASSERT_EQ(out.size(), g.outputs.size() + wrt.size());
  for (std::size_t k = 0; k < wrt.size(); ++k) {
    const runtime_tensor& got = out[g.outputs.size() + k];
    ASSERT_EQ(got.extents(), feeds.at(wrt[k]).extents()) << wrt[k];
    const auto want = finite_differences(g, feeds, wrt[k]);
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got.data<double>()[i], want[i], tolerance * (1 + std::abs(want[i]))) << wrt[k] << "[" << i << "]";
  }
}

graph scalar_graph(const std::function<graph_handle(graph_builder&, std::vector<graph_handle>&)>& make,
                   std::vector<std::pair<std::string, graph_type>> inputs) {
  graph_builder b;
  std::vector<graph_handle> in;
  for (auto& [name, t] : inputs) in.push_back(b.input(name, t.type, t.shape));
  return b.build({make(b, in)});
}

}  // namespace

TEST(ControlFlow, ScanRunsAGruCellAgainstAFloat64Loop) {
  gru_case c;
  const graph g = c.loss_graph();
  const auto out = interpreter(g).run(c.feeds);
  const auto want = gru_reference(c);
  ASSERT_EQ(out[1].extents(), (runtime_extents{c.steps, c.batch, c.hidden}));
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[1].data<double>()[i], want[i], 1e-13) << i;
}

TEST(ControlFlow, ScanGradientOfAGruMatchesFiniteDifferences) {
  gru_case c;
  const graph g = c.loss_graph();
  expect_gradients_match_differences(g, c.feeds, {"h0", "xs", "Wz", "Uz", "bz", "Wr", "Ur", "Wn", "Un"}, 1e-6);
}

TEST(ControlFlow, ScanOfNoStepsGivesAnEmptyResultAndZeroGradients) {
  gru_case c;
  c.steps = 0;
  c.feeds.insert_or_assign("xs", runtime_tensor(dtype::f64, runtime_extents{0, c.batch, c.in}));
  c.feeds.insert_or_assign("R", runtime_tensor(dtype::f64, runtime_extents{0, c.batch, c.hidden}));
  const graph dg = differentiate(c.loss_graph(), {"h0", "Wz"});
  const auto out = interpreter(dg).run(c.feeds);
  EXPECT_EQ(out[1].extents(), (runtime_extents{0, c.batch, c.hidden}));
  EXPECT_EQ(out[0].data<double>()[0], 0.0);
  for (std::size_t k : {2u, 3u})
    for (std::size_t i = 0; i < out[k].size(); ++i) EXPECT_EQ(out[k].data<double>()[i], 0.0);
}

TEST(ControlFlow, CondRunsOneBranchAndDifferentiatesThroughIt) {
  // cond(sum(x) > 0, x, w): then_branch(x, w) = sum(x * x * w), else_branch(x, w) = sum(exp(x) - w).
  const graph then_branch = scalar_graph([](graph_builder&, auto& in) { return sum(in[0] * in[0] * in[1]); },
                                         {{"x", {dtype::f64, {5}}}, {"w", {dtype::f64, {5}}}});
  const graph else_branch = scalar_graph([](graph_builder&, auto& in) { return sum(exp(in[0]) - in[1]); },
                                         {{"a", {dtype::f64, {5}}}, {"b", {dtype::f64, {5}}}});
  graph_builder b;
  auto x = b.input("x", dtype::f64, {5});
  auto w = b.input("w", dtype::f64, {5});
  const graph g = b.build({cond(sum(x) > 0.0, then_branch, else_branch, {x, w})});
  for (double sign : {1.0, -1.0}) {
    runtime_feeds feeds;
    runtime_tensor tx = random_f64({5}, 7);
    for (std::size_t i = 0; i < 5; ++i) tx.data<double>()[i] = sign * (std::abs(tx.data<double>()[i]) + 0.1);
    feeds.insert_or_assign("x", std::move(tx));
    feeds.insert_or_assign("w", random_f64({5}, 8));
    const double* xv = feeds.at("x").data<double>();
    const double* wv = feeds.at("w").data<double>();
    double want = 0;
    for (std::size_t i = 0; i < 5; ++i) want += sign > 0 ? xv[i] * xv[i] * wv[i] : std::exp(xv[i]) - wv[i];
    EXPECT_NEAR(interpreter(g).run(feeds)[0].data<double>()[0], want, 1e-13);
    expect_gradients_match_differences(g, feeds, {"x", "w"}, 1e-7);
  }
}

TEST(ControlFlow, WhileLoopsUntilItsConditionFailsOrItsLimit) {
  // cond(s, c) = s < 100, body(s, c) = s * c: from 3 with c = 2, 3 -> 6 -> ... -> 192.
  const graph cond_graph = scalar_graph([](graph_builder&, auto& in) { return in[0] < 100.0; },
                                        {{"s", {dtype::f64, {}}}, {"c", {dtype::f64, {}}}});
  const graph body = scalar_graph([](graph_builder&, auto& in) { return in[0] * in[1]; },
                                  {{"s", {dtype::f64, {}}}, {"c", {dtype::f64, {}}}});
  for (auto [limit, want] : {std::pair<std::int64_t, double>{100, 192}, {3, 24}, {0, 3}}) {
    graph_builder b;
    auto s = b.input("s", dtype::f64, {});
    auto c = b.input("c", dtype::f64, {});
    const graph g = b.build({while_loop(cond_graph, body, s, {c}, limit)});
    runtime_feeds feeds;
    runtime_tensor ts(dtype::f64, {}), tc(dtype::f64, {});
    ts.data<double>()[0] = 3;
    tc.data<double>()[0] = 2;
    feeds.insert_or_assign("s", ts);
    feeds.insert_or_assign("c", tc);
    EXPECT_EQ(interpreter(g).run(feeds)[0].data<double>()[0], want) << limit;
    // d/ds = c^n, d/dc = n s c^(n - 1) for n steps.
    const graph dg = differentiate(g, {"s", "c"});
    const auto out = interpreter(dg).run(feeds);
    const double n = std::log2(want / 3);
    EXPECT_NEAR(out[1].data<double>()[0], std::pow(2.0, n), 1e-12) << limit;
    EXPECT_NEAR(out[2].data<double>()[0], n * 3 * std::pow(2.0, n - 1), 1e-12) << limit;
  }
}

TEST(ControlFlow, WhileGradientOfAVectorStateMatchesFiniteDifferences) {
  // state v [4]: while sum(v * v) < 50: v = tanh(v W) * 3 + u  (W [4, 4], u [4]).
  const graph cond_graph = scalar_graph([](graph_builder&, auto& in) { return sum(in[0] * in[0]) < 50.0; },
                                        {{"v", {dtype::f64, {1, 4}}}, {"W", {dtype::f64, {4, 4}}}, {"u", {dtype::f64, {4}}}});
  const graph body = scalar_graph([](graph_builder&, auto& in) { return tanh(matmul(in[0], in[1])) * 3.0 + in[2]; },
                                  {{"v", {dtype::f64, {1, 4}}}, {"W", {dtype::f64, {4, 4}}}, {"u", {dtype::f64, {4}}}});
  graph_builder b;
  auto v = b.input("v", dtype::f64, {1, 4});
  auto W = b.input("W", dtype::f64, {4, 4});
  auto u = b.input("u", dtype::f64, {4});
  auto r = b.input("r", dtype::f64, {1, 4});
  const graph g = b.build({sum(while_loop(cond_graph, body, v, {W, u}, 20) * r)});
  runtime_feeds feeds;
  feeds.insert_or_assign("v", random_f64({1, 4}, 1));
  feeds.insert_or_assign("W", random_f64({4, 4}, 2));
  feeds.insert_or_assign("u", random_f64({4}, 3, 0.5));
  feeds.insert_or_assign("r", random_f64({1, 4}, 4));
  expect_gradients_match_differences(g, feeds, {"v", "W", "u"}, 1e-6);
}

TEST(ControlFlow, NestedControlFlowRunsAndRoundTripsThroughBothFormats) {
  // A scan whose body holds a cond: state' = cond(sum(x) > 0, state + x, state * 0.5).
  const graph add_branch = scalar_graph([](graph_builder&, auto& in) { return in[0] + in[1]; },
                                        {{"s", {dtype::f64, {3}}}, {"x", {dtype::f64, {3}}}});
  const graph halve_branch = scalar_graph([](graph_builder&, auto& in) { return in[0] * 0.5; },
                                          {{"s", {dtype::f64, {3}}}, {"x", {dtype::f64, {3}}}});
  const graph body = scalar_graph(
      [&](graph_builder&, auto& in) { return cond(sum(in[1]) > 0.0, add_branch, halve_branch, {in[0], in[1]}); },
      {{"s", {dtype::f64, {3}}}, {"x", {dtype::f64, {3}}}});
  graph_builder b;
  auto s = b.input("s", dtype::f64, {3});
  auto xs = b.input("xs", dtype::f64, {-1, 3});
  const graph g = b.build({sum(scan(body, s, xs)), scan(body, s, xs)});
  runtime_feeds feeds;
  feeds.insert_or_assign("s", random_f64({3}, 5));
  feeds.insert_or_assign("xs", random_f64({7, 3}, 6));
  const auto out = interpreter(g).run(feeds);
  std::vector<double> state(feeds.at("s").data<double>(), feeds.at("s").data<double>() + 3);
  for (std::size_t t = 0; t < 7; ++t) {
    const double* x = feeds.at("xs").data<double>() + 3 * t;
    const bool add = x[0] + x[1] + x[2] > 0;
    for (std::size_t i = 0; i < 3; ++i) {
      state[i] = add ? state[i] + x[i] : state[i] * 0.5;
      EXPECT_EQ(out[1].data<double>()[3 * t + i], state[i]);
    }
  }
  const graph dg = differentiate(g, {"s", "xs"});
  for (const graph& each : {g, dg}) {
    EXPECT_EQ(load_graph_json(save_graph_json(each)), each);
    EXPECT_EQ(load_graph_binary(save_graph_binary(each)), each);
    EXPECT_EQ(save_graph_json(load_graph_json(save_graph_json(each))), save_graph_json(each));
  }
  expect_gradients_match_differences(g, feeds, {"s", "xs"}, 1e-7);
}

TEST(ControlFlow, MalformedSubGraphsAreRefusedNamingTheNode) {
  const graph body = scalar_graph([](graph_builder&, auto& in) { return in[0] + in[1]; },
                                  {{"s", {dtype::f64, {3}}}, {"x", {dtype::f64, {3}}}});
  graph_builder b;
  auto s = b.input("s", dtype::f64, {3});
  auto xs = b.input("xs", dtype::f64, {-1, 3});
  auto wrong = b.input("w", dtype::f32, {-1, 3});
  EXPECT_THROW(scan(body, s, wrong), graph_error);             // x is f32, the body takes f64
  EXPECT_THROW(scan(body, s, xs, {s}), graph_error);           // one operand too many
  EXPECT_THROW(scan(body, s, s), graph_error);                 // a step of [3] is a scalar, not [3]
  const graph g = b.build({scan(body, s, xs)});
  auto expect_refused = [](graph bad, const std::string& words) {
    try {
      validate(bad, "test");
      ADD_FAILURE() << "accepted: " << words;
    } catch (const graph_error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  {  // the body's state output changes dtype
    graph bad = g;
    graph changed = body;
    changed.nodes.back().type.type = dtype::f32;
    bad.nodes.back().attributes[0].value = subgraph{std::make_shared<const graph>(changed)};
    expect_refused(bad, "scan");
  }
  {  // the body has parameters
    graph bad = g;
    graph changed = body;
    changed.parameters.push_back(graph_leaf{"p", "", {dtype::f64, {3}}, {}, std::nullopt});
    bad.nodes.back().attributes[0].value = subgraph{std::make_shared<const graph>(changed)};
    expect_refused(bad, "parameters");
  }
  {  // the graph attribute holds a number
    graph bad = g;
    bad.nodes.back().attributes[0].value = 1.5;
    expect_refused(bad, "must be a graph");
  }
  {  // no max_iterations
    graph_builder w;
    auto v = w.input("v", dtype::f64, {});
    const graph c = scalar_graph([](graph_builder&, auto& in) { return in[0] < 1.0; }, {{"v", {dtype::f64, {}}}});
    const graph step = scalar_graph([](graph_builder&, auto& in) { return in[0] + 1.0; }, {{"v", {dtype::f64, {}}}});
    graph bad = w.build({while_loop(c, step, v, {}, 5)});
    bad.nodes.back().attributes.pop_back();
    expect_refused(bad, "max_iterations");
  }
  // Sub-graphs nested past the limit: refused by validate and by both readers.
  graph nested = body;
  for (std::size_t depth = 0; depth <= graph_max_nesting; ++depth) {
    graph_builder n;
    auto a = n.input("s", dtype::f64, {3});
    auto x = n.input("x", dtype::f64, {3});
    nested = n.build({cond(sum(x) > 0.0, nested, body, {a, x})});
  }
  expect_refused(nested, "nest deeper");
  EXPECT_THROW(load_graph_json(save_graph_json(nested)), graph_error);
  EXPECT_THROW(load_graph_binary(save_graph_binary(nested)), graph_error);
}
