// Runtime differentiation of reductions, views and kernels against the compile-time gradient, and
// of a variable-length recurrent cell against float64 central differences.
#include "runtime_grad_support.hpp"

TEST(RuntimeGrad, ReductionsViewsAndKernelsMatchCompileTimeGradient) {
  auto x = placeholder<"x", double, shape<2, 3, 4>>();
  auto w = placeholder<"w", double, shape<4, 5>>();
  auto v = placeholder<"v", double, shape<2, 5, 3>>();
  auto tx = random_tensor<double, shape<2, 3, 4>>({}, 8);
  auto tw = random_tensor<double, shape<4, 5>>({}, 9);
  auto tv = random_tensor<double, shape<2, 5, 3>>({}, 10);
  runtime_feeds rf;
  rf["x"] = runtime_tensor(tx);
  rf["w"] = runtime_tensor(tw);
  rf["v"] = runtime_tensor(tv);
  const params none;
  auto xw = matmul(x, w);                // [2,3,5]: batched by plain
  auto xwv = matmul(xw, v);              // [2,3,3]: batched by batched
  auto t = permute<2, 0, 1>(xwv);        // [3,2,3]
  auto r = reshape<shape<6, 3>>(t);      // [6,3]
  auto s = slice(r, 1, 5);               // [4,3]
  auto cat = concat<1>(s, s * 2.0);      // [4,6]
  auto loss = mean(square(cat)) + sum(max(xw, axes<2>) * mean(x, axes<2>)) + sum(logsumexp(x)) +
              sum(mean(sum(x, axes<1>, keepdims) * x, axes<0, 2>));
  expect_runtime_grad_matches(loss, std::tuple{x, w, v}, rf, none, 1e-10, x = tx, w = tw, v = tv);
}

namespace {
// A recurrent cell unrolled over one sequence's own length, built at run time:
// h_t = tanh(x_t Wx + h_{t-1} Wh + b), loss = mean over steps of sum(h_t * h_t) / 2.
graph recurrent_model(std::size_t length, std::size_t in, std::size_t hidden) {
  using namespace graph_ops;
  graph_builder b;
  const std::int64_t I = std::int64_t(in), H = std::int64_t(hidden), T = std::int64_t(length);
  auto xs = b.input("xs", dtype::f64, {T, I});
  auto Wx = b.parameter("Wx", dtype::f64, {I, H});
  auto Wh = b.parameter("Wh", dtype::f64, {H, H});
  auto bias = b.parameter("b", dtype::f64, {H});
  auto h0 = b.input("h0", dtype::f64, {1, H});
  graph_handle h = h0;
  std::optional<graph_handle> total;
  for (std::int64_t t = 0; t < T; ++t) {
    auto s = b.scope("step" + std::to_string(t));
    auto xt = slice(xs, 0, t, t + 1);
    h = tanh(matmul(xt, Wx) + matmul(h, Wh) + bias);
    auto e = sum(h * h) * 0.5;
    total = total ? *total + e : e;
  }
  return b.build({*total / double(T)});
}
}  // namespace

TEST(RuntimeGrad, VariableLengthRecurrentCellMatchesFiniteDifferences) {
  const std::size_t in = 3, hidden = 4;
  params p;
  p.set("Wx", random_tensor<double, shape<3, 4>>({}, 20));
  p.set("Wh", random_tensor<double, shape<4, 4>>({}, 21));
  p.set("b", random_tensor<double, shape<4>>({}, 22));
  for (std::size_t length : {1u, 3u, 6u}) {
    graph g = recurrent_model(length, in, hidden);
    EXPECT_EQ(scope_of_name(g.nodes.back().name), "");
    graph dg = differentiate(g, {"Wx", "Wh", "b", "xs"});
    runtime_feeds rf;
    rf["xs"] = runtime_tensor(random_tensor<double, shape<dyn, 3>>({length, in}, 30 + length));
    rf["h0"] = runtime_tensor(random_tensor<double, shape<1, 4>>({}, 40 + length));
    const interpreter run_loss(g), run_grad(dg);
    const auto analytic = run_grad.run(rf, &p);
    auto loss_at = [&](params& q, runtime_feeds& f) { return run_loss.run(f, &q)[0].data<double>()[0]; };
    EXPECT_DOUBLE_EQ(analytic[0].data<double>()[0], loss_at(p, rf));
    const double h = 1e-6;
    const std::vector<std::string> names{"Wx", "Wh", "b"};
    for (std::size_t k = 0; k < names.size(); ++k) {
      auto& entry = p.at(names[k]);
      double* w = reinterpret_cast<double*>(entry.bytes.data());
      const std::size_t n = entry.bytes.size() / sizeof(double);
      for (std::size_t i = 0; i < n; ++i) {
        const double saved = w[i];
        w[i] = saved + h;
        const double up = loss_at(p, rf);
        w[i] = saved - h;
        const double down = loss_at(p, rf);
        w[i] = saved;
        EXPECT_NEAR(analytic[1 + k].data<double>()[i], (up - down) / (2 * h), 1e-7)
            << names[k] << "[" << i << "], length " << length;
      }
    }
    // And with respect to the input sequence itself.
    double* xs = rf["xs"].data<double>();
    for (std::size_t i = 0; i < length * in; ++i) {
      const double saved = xs[i];
      xs[i] = saved + h;
      const double up = loss_at(p, rf);
      xs[i] = saved - h;
      const double down = loss_at(p, rf);
      xs[i] = saved;
      EXPECT_NEAR(analytic[4].data<double>()[i], (up - down) / (2 * h), 1e-7) << "xs[" << i << "]";
    }
  }
}
