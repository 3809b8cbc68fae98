// Gradients of models whose subexpressions are shared, computed by a runtime program
// (runtime/program_gradient.hpp: grad_by_program, value_and_grad): checked against float64 central differences, through second
// order (hvp, jvp of the gradient), with NaN and infinities in some rows, through to_graph, with a
// changing batch size and with leaves the loss does not read.
#include "reverse_sweep_support.hpp"

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>

namespace {

template <class E>
constexpr bool is_program_output = requires { std::remove_cvref_t<E>::op_type::name; } &&
                                   std::remove_cvref_t<E>::kind == node_kind::kernel &&
                                   std::remove_cvref_t<E>::op_type::name == std::string_view("program_output");

// Two hidden layers gelu(layer_norm(h W + b) * gamma), odd extents, shared subexpressions in each.
struct model {
  placeholder<"x", double, shape<dyn, 5>> x;
  placeholder<"y", std::int32_t, shape<dyn>> y;
  variable<"W1", double, shape<5, 4>> W1;
  variable<"b1", double, shape<4>> b1;
  variable<"g1", double, shape<4>> g1;
  variable<"W2", double, shape<4, 3>> W2;
  variable<"b2", double, shape<3>> b2;
  variable<"V", double, shape<3, 3>> V;

  template <class H, class W, class B>
  static auto layer(const H& h, const W& w, const B& b) {
    auto z = matmul(h, w) + b;
    auto c = z - mean(z, axes<-1>, keepdims);
    auto n = c * rsqrt(mean(c * c, axes<-1>, keepdims) + 1e-5);
    return 0.5 * n * (1.0 + tanh(0.7978845608 * (n + 0.044715 * n * n * n)));
  }
  auto loss() const {
    auto h1 = layer(x, W1, b1) * g1;
    auto h2 = layer(h1, W2, b2);
    return mean(softmax_cross_entropy(matmul(h2, V), y));
  }

  tensor<double, shape<dyn, 5>> xv = random_values<shape<dyn, 5>>({7, 5}, 1);
  tensor<std::int32_t, shape<dyn>> yv{extents_t<1>{7}, 0};
  tensor<double, shape<5, 4>> W1v = random_values<shape<5, 4>>({5, 4}, 2);
  tensor<double, shape<4>> b1v = random_values<shape<4>>({4}, 3);
  tensor<double, shape<4>> g1v = random_values<shape<4>>({4}, 4);
  tensor<double, shape<4, 3>> W2v = random_values<shape<4, 3>>({4, 3}, 5);
  tensor<double, shape<3>> b2v = random_values<shape<3>>({3}, 6);
  tensor<double, shape<3, 3>> Vv = random_values<shape<3, 3>>({3, 3}, 7);
  model() {
    for (std::size_t i = 0; i < yv.size(); ++i) yv[i] = std::int32_t((i * 5 + 1) % 3);
  }
  template <class... E>
  auto run(const E&... e) {
    return eval(e..., x = xv, y = yv, W1 = W1v, b1 = b1v, g1 = g1v, W2 = W2v, b2 = b2v, V = Vv);
  }
};

TEST(ProgramGradient, DeepModelMatchesFiniteDifferences) {
  model m;
  const auto loss = m.loss();
  const auto g = grad_by_program(loss, m.W1, m.b1, m.g1, m.W2, m.b2, m.V);
  static_assert(is_program_output<std::tuple_element_t<0, decltype(g)>>);
  // grad takes this route for such a model (the runtime tables are linked: every test target).
  static_assert(is_program_output<decltype(grad(loss, m.V))>);
  auto one = [&](const auto& e) { return m.run(e); };
  const auto [L, gW1, gb1, gg1, gW2, gb2, gV] =
      m.run(loss, std::get<0>(g), std::get<1>(g), std::get<2>(g), std::get<3>(g), std::get<4>(g), std::get<5>(g));
  EXPECT_NEAR(L[0], one(loss)[0], 1e-15);
  expect_close(gW1, finite_differences(loss, m.W1v, one));
  expect_close(gb1, finite_differences(loss, m.b1v, one));
  expect_close(gg1, finite_differences(loss, m.g1v, one));
  expect_close(gW2, finite_differences(loss, m.W2v, one));
  expect_close(gb2, finite_differences(loss, m.b2v, one));
  expect_close(gV, finite_differences(loss, m.Vv, one));
}

TEST(ProgramGradient, ValueAndGradRunTheModelOnce) {
  model m;
  const auto loss = m.loss();
  const auto [value, gb2, gV] = value_and_grad(loss, m.b2, m.V);
  static_assert(is_program_output<decltype(value)> && decltype(value)::rank == 0);
  cpu::counters().reset();
  const auto [L, b2_grad, V_grad] = m.run(value, gb2, gV);
  EXPECT_EQ(cpu::counters().kernels, 4u);  // one program run, three outputs of it
  EXPECT_NEAR(L[0], m.run(loss)[0], 1e-15);
  auto one = [&](const auto& e) { return m.run(e); };
  expect_close(b2_grad, finite_differences(loss, m.b2v, one));
  expect_close(V_grad, finite_differences(loss, m.Vv, one));
  // A small expression keeps its own value and the path walk's gradient.
  auto w = variable<"w", double, shape<3>>();
  const auto [small, gw] = value_and_grad(sum(w * w), w);
  tensor<double, shape<3>> wv({3}, 2.0);
  EXPECT_EQ(eval(small, w = wv)[0], 12.0);
  EXPECT_EQ(eval(gw, w = wv)[1], 4.0);
}

// The gradients an evaluation returns are written by the program's run straight into the result
// tensors (eval/output_destination.hpp). A gradient asked for twice, read again by another output,
// evaluated into reused tensors, or into a tensor the model reads while it runs, is the same value.
TEST(ProgramGradient, GradientsWrittenInPlaceAreTheGradients) {
  model m;
  const auto loss = m.loss();
  const auto [gW1, gV] = grad_by_program(loss, m.W1, m.V);
  auto one = [&](const auto& e) { return m.run(e); };
  const auto [a, b, a_again, doubled] = m.run(gW1, gV, gW1, 2.0 * gW1);
  expect_close(a, finite_differences(loss, m.W1v, one));
  expect_close(b, finite_differences(loss, m.Vv, one));
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a_again.data()[i], a.data()[i]) << i;
    EXPECT_EQ(doubled.data()[i], 2.0 * a.data()[i]) << i;
  }
  const auto single = m.run(gV);
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(single.data()[i], b.data()[i]) << i;

  tensor<double, shape<5, 4>> tW1;
  tensor<double, shape<3, 3>> tV;
  for (int step = 0; step < 2; ++step) {
    eval_into(std::tie(tW1, tV), gW1, gV, m.x = m.xv, m.y = m.yv, m.W1 = m.W1v, m.b1 = m.b1v, m.g1 = m.g1v,
              m.W2 = m.W2v, m.b2 = m.b2v, m.V = m.Vv);
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(tW1.data()[i], a.data()[i]) << step << " " << i;
    for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(tV.data()[i], b.data()[i]) << step << " " << i;
  }
  // x's result tensor is the x the model reads: x's gradient is computed first, and W1's reads x
  // after it; both are still those at the old x.
  const auto [gx, gW1_too] = grad_by_program(loss, m.x, m.W1);
  const auto x_grad = m.run(gx);
  tensor<double, shape<dyn, 5>> xt = m.xv;
  tensor<double, shape<5, 4>> w1;
  eval_into(std::tie(xt, w1), gx, gW1_too, m.x = xt, m.y = m.yv, m.W1 = m.W1v, m.b1 = m.b1v, m.g1 = m.g1v,
            m.W2 = m.W2v, m.b2 = m.b2v, m.V = m.Vv);
  for (std::size_t i = 0; i < x_grad.size(); ++i) EXPECT_EQ(xt.data()[i], x_grad.data()[i]) << i;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(w1.data()[i], a.data()[i]) << i;
}

// A training loop builds value_and_grad every step: the program (and its interpreter's storage) is
// reused for a model of the same structure, names and constants (runtime/program.hpp's
// cache), and not when a constant's data differs.
TEST(ProgramGradient, ProgramsAreReusedForTheSameModelOnly) {
  model m;
  const auto scaled_loss = [&](const tensor<double, shape<3>>& scale) {
    auto h1 = model::layer(m.x, m.W1, m.b1) * m.g1;
    auto h2 = model::layer(h1, m.W2, m.b2);
    return mean(softmax_cross_entropy(matmul(h2, m.V) * constant(scale), m.y));
  };
  tensor<double, shape<3>> s1 = random_values<shape<3>>({3}, 8), s2 = s1;
  s2[1] += 0.5;
  const auto first = grad_by_program(scaled_loss(s1), m.V);
  const auto again = grad_by_program(scaled_loss(s1), m.V);
  const auto other = grad_by_program(scaled_loss(s2), m.V);
  static_assert(is_program_output<decltype(first)>);
  EXPECT_EQ(first.op.program, again.op.program) << "the same model gets the same program";
  EXPECT_NE(first.op.program, other.op.program) << "another constant's data gets a program of its own";
  const auto g_first = m.run(first), g_again = m.run(again), g_other = m.run(other);
  auto one = [&](const auto& e) { return m.run(e); };
  expect_close(g_first, finite_differences(scaled_loss(s1), m.Vv, one));
  expect_close(g_other, finite_differences(scaled_loss(s2), m.Vv, one));
  for (std::size_t i = 0; i < g_first.size(); ++i) EXPECT_EQ(g_first.data()[i], g_again.data()[i]) << i;
}

// A loss rebuilt with the same values (a training loop's next step) finds its program by the key of
// what its lowering reads (ir/lowering_key.hpp), without a graph; one that differs in a literal's
// value, a scope name or how its nodes are shared lowers afresh, and its gradient is its own.
TEST(ProgramGradient, ARebuiltLossReusesItsProgramOnlyWhenItLowersAlike) {
  model m;
  const auto loss_with = [&](double epsilon) {
    auto z = matmul(m.x, m.W1) + m.b1;
    auto c = z - mean(z, axes<-1>, keepdims);
    auto n = c * rsqrt(mean(c * c, axes<-1>, keepdims) + epsilon);
    return mean(softmax_cross_entropy(matmul(tanh(n * m.g1), m.W2), m.y));
  };
  auto& hits = symflow::detail::program::program_memo::hits();
  const auto first = grad_by_program(loss_with(1e-5), m.W1);
  const std::size_t before = hits.load();
  const auto again = grad_by_program(loss_with(1e-5), m.W1);
  EXPECT_EQ(hits.load(), before + 1) << "the rebuilt loss is found by its key";
  EXPECT_EQ(first.op.program, again.op.program);

  // Another epsilon: the same type, another graph; then the first again, found in the graph cache.
  const auto other = grad_by_program(loss_with(0.25), m.W1);
  EXPECT_EQ(hits.load(), before + 1);
  EXPECT_NE(first.op.program, other.op.program);
  const auto back = grad_by_program(loss_with(1e-5), m.W1);
  EXPECT_EQ(first.op.program, back.op.program);
  auto one = [&](const auto& e) { return m.run(e); };
  expect_close(m.run(other), finite_differences(loss_with(0.25), m.W1v, one));
  expect_close(m.run(back), finite_differences(loss_with(1e-5), m.W1v, one));

  // Only a scope's name differs: the graph's node names do, so the program is another.
  const auto in_a = [&] { return scope("a", [&] { return loss_with(1e-5); }); };
  const auto in_b = [&] { return scope("b", [&] { return loss_with(1e-5); }); };
  static_assert(std::is_same_v<decltype(in_a()), decltype(in_b())>);
  const auto ga = grad_by_program(in_a(), m.W1);
  const auto gb = grad_by_program(in_b(), m.W1);
  EXPECT_NE(ga.op.program, gb.op.program);
  const std::size_t scoped = hits.load();
  EXPECT_EQ(grad_by_program(in_b(), m.W1).op.program, gb.op.program);
  EXPECT_EQ(hits.load(), scoped + 1);
  expect_close(m.run(ga), finite_differences(loss_with(1e-5), m.W1v, one));

  // One object used twice against two equal objects: the keys differ, the lowerings are equal.
  const auto twice = [&](bool shared) {
    auto z = matmul(m.x, m.W1);
    auto other_z = matmul(m.x, m.W1);
    return mean(softmax_cross_entropy(matmul(tanh(z) * (shared ? z : other_z), m.W2), m.y));
  };
  const auto shared = grad_by_program(twice(true), m.W1);
  const std::size_t split_before = hits.load();
  const auto split = grad_by_program(twice(false), m.W1);
  EXPECT_EQ(hits.load(), split_before) << "another sharing pattern is another key";
  EXPECT_EQ(shared.op.program, split.op.program) << "and the same graph";
  expect_close(m.run(split), finite_differences(twice(false), m.W1v, one));
}

TEST(ProgramGradient, EvalOfALargeScalarModelRunsAProgram) {
  model m;
  const auto loss = m.loss();
  static_assert(symflow::detail::evaluated_by_program<decltype(loss)>::value);
  // Not for values that are not scalars, nor for small expressions.
  static_assert(!symflow::detail::evaluated_by_program<decltype(matmul(m.x, m.W1))>::value);
  static_assert(!symflow::detail::evaluated_by_program<decltype(sum(m.b1 * m.b1))>::value);
  cpu::counters().reset();
  const auto routed = m.run(loss);
  EXPECT_EQ(cpu::counters().kernels, 2u);  // the program's run and the copy of its output
  // eval with two outputs stays typed: fused loops, an independent path to the same value.
  const auto [typed, twice] = m.run(loss, loss);
  EXPECT_NEAR(routed[0], typed[0], 1e-12 * std::abs(typed[0]));
  EXPECT_EQ(typed[0], twice[0]);
  tensor<double, shape<>> into;
  eval_into(into, loss, m.x = m.xv, m.y = m.yv, m.W1 = m.W1v, m.b1 = m.b1v, m.g1 = m.g1v, m.W2 = m.W2v,
            m.b2 = m.b2v, m.V = m.Vv);
  EXPECT_EQ(into[0], routed[0]);
  // A missing feed is still a compile error (tests/compile_fail); a NaN in the input reaches the
  // value; check_numerics names a node of the model.
  m.xv.data()[4] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(m.run(loss)[0]));
  check_numerics_scope on;
  try {
    (void)m.run(loss);
    ADD_FAILURE() << "no numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
}

TEST(ProgramGradient, InputsOfAnotherBatchSizeAndLeavesTheLossDoesNotRead) {
  model m;
  auto unused = variable<"unused", double, shape<2>>();
  const auto [gx, gV, gu] = grad_by_program(m.loss(), m.x, m.V, unused);
  static_assert(is_program_output<decltype(gx)>);
  for (std::size_t batch : {7u, 1u, 4u}) {
    m.xv = random_values<shape<dyn, 5>>({batch, 5}, unsigned(batch));
    m.yv = tensor<std::int32_t, shape<dyn>>({batch}, 1);
    tensor<double, shape<2>> uv({2}, 3.0);
    const auto [x_grad, V_grad, u_grad] = eval(gx, gV, gu, m.x = m.xv, m.y = m.yv, m.W1 = m.W1v, m.b1 = m.b1v,
                                               m.g1 = m.g1v, m.W2 = m.W2v, m.b2 = m.b2v, m.V = m.Vv, unused = uv);
    ASSERT_EQ(x_grad.extents()[0], batch);
    auto loss = m.loss();
    auto one = [&](const auto& e) { return m.run(e); };
    expect_close(x_grad, finite_differences(loss, m.xv, one));
    expect_close(V_grad, finite_differences(loss, m.Vv, one));
    EXPECT_EQ(u_grad[0], 0.0);
    EXPECT_EQ(u_grad[1], 0.0);
  }
}

TEST(ProgramGradient, NonFiniteRowsLeaveTheOthersAlone) {
  // Rows of x are independent up to the mean over the batch, whose adjoint is a constant: a NaN in
  // row 0 and an infinity in row 2 make those rows' gradients non-finite and no other row's.
  model m;
  const auto gx = grad_by_program(m.loss(), m.x);
  const auto clean = m.run(gx);
  m.xv.data()[3] = std::numeric_limits<double>::quiet_NaN();
  m.xv.data()[11] = std::numeric_limits<double>::infinity();
  m.xv.data()[12] = -0.0;
  const auto dirty = m.run(gx);
  for (std::size_t row = 0; row < 7; ++row)
    for (std::size_t col = 0; col < 5; ++col) {
      const double v = dirty.data()[row * 5 + col];
      if (row == 0 || row == 2) {
        EXPECT_TRUE(std::isnan(v)) << row << "," << col;
      } else {
        EXPECT_EQ(v, clean.data()[row * 5 + col]) << row << "," << col;
      }
    }
}

TEST(ProgramGradient, HessianVectorProductsMatchDifferencesOfTheGradient) {
  model m;
  const auto loss = m.loss();
  auto v = placeholder<"v", double, shape<4, 3>>();
  const auto vv = random_values<shape<4, 3>>({4, 3}, 11);
  const auto g = grad_by_program(loss, m.W2);
  static_assert(is_program_output<decltype(g)>);
  const auto hv = m.run(hvp(loss, m.W2, v), v = vv);  // grad of sum(grad * v): through the program's VJP
  const auto jv = eval(jvp(g, m.W2, v), m.x = m.xv, m.y = m.yv, m.W1 = m.W1v, m.b1 = m.b1v, m.g1 = m.g1v,
                       m.W2 = m.W2v, m.b2 = m.b2v, m.V = m.Vv, v = vv);  // forward over reverse: the JVP program
  const double h = 1e-5;
  auto up = m.W2v, down = m.W2v;
  for (std::size_t i = 0; i < up.size(); ++i) up.data()[i] += h * vv.data()[i], down.data()[i] -= h * vv.data()[i];
  auto at = [&](const auto& w2) {
    return eval(g, m.x = m.xv, m.y = m.yv, m.W1 = m.W1v, m.b1 = m.b1v, m.g1 = m.g1v, m.W2 = w2, m.b2 = m.b2v, m.V = m.Vv);
  };
  const auto gu = at(up), gd = at(down);
  for (std::size_t i = 0; i < vv.size(); ++i) {
    const double numeric = (gu.data()[i] - gd.data()[i]) / (2 * h);
    const double scale = std::max({1.0, std::abs(numeric)});
    EXPECT_LT(std::abs(hv.data()[i] - numeric) / scale, 1e-6) << "hvp element " << i;
    EXPECT_LT(std::abs(jv.data()[i] - numeric) / scale, 1e-6) << "jvp element " << i;
  }
}

TEST(ProgramGradient, ToGraphInlinesTheProgram) {
  model m;
  const auto loss = m.loss();
  const auto [gW1, gV] = grad_by_program(loss, m.W1, m.V);
  const graph lowered = to_graph(loss, gW1, gV);
  for (const auto& n : lowered.nodes) EXPECT_NE(n.op.rfind("program", 0), 0u) << n.op;
  runtime_feeds feeds;
  feeds.emplace("x", runtime_tensor(m.xv));
  feeds.emplace("y", runtime_tensor(m.yv));
  params store;
  store.set("W1", m.W1v);
  store.set("b1", m.b1v);
  store.set("g1", m.g1v);
  store.set("W2", m.W2v);
  store.set("b2", m.b2v);
  store.set("V", m.Vv);
  const auto out = interpreter(lowered).run(feeds, &store);
  const auto [L, a, b] = m.run(loss, gW1, gV);
  EXPECT_NEAR(out[0].data<double>()[0], L[0], 1e-12);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(out[1].data<double>()[i], a.data()[i], 1e-12);
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(out[2].data<double>()[i], b.data()[i], 1e-12);
}

}  // namespace
