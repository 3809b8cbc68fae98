#pragma once
// Shared by the runtime differentiation tests (graph_runtime_grad*_test.cpp): the runtime gradient\n// of a compiled expression's graph, and its comparison with the compile-time gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

template <class T, class S>
tensor<T, S> random_tensor(const extents_t<S::rank>& e, std::uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  extents_t<S::rank> extents = e;
  if constexpr (S::is_static) extents = S::extents;
  tensor<T, S> t(extents, uninitialized);
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = T(u(rng));
  return t;
}

template <class T>
double max_abs_diff(const runtime_tensor& a, const T* b, std::size_t n) {
  EXPECT_EQ(a.size(), n);
  double m = 0;
  for (std::size_t i = 0; i < n && i < a.size(); ++i)
    m = std::max(m, std::abs(double(a.data<typename std::remove_const_t<T>>()[i]) - double(b[i])));
  return m;
}

// The runtime gradient of to_graph(loss) w.r.t. the named leaves equals grad(loss, leaves...).
template <class Loss, class... Leaf, class... Feeds>
void expect_runtime_grad_matches(const Loss& loss, std::tuple<Leaf...> leaves, const runtime_feeds& rf,
                                 const params& p, double tol, const Feeds&... feeds) {
  std::vector<std::string> names{std::string(Leaf::name.view())...};
  graph dg = differentiate(to_graph(loss), names);
  ASSERT_NO_THROW(validate(dg));
  auto out = interpreter(dg).run(rf, &p);
  ASSERT_EQ(out.size(), 1 + sizeof...(Leaf));
  std::size_t k = 1;
  std::apply(
      [&](const auto&... leaf) {
        (
            [&] {
              auto expected = eval(grad(loss, leaf), feeds..., p);
              EXPECT_LE(max_abs_diff(out[k], expected.data(), expected.size()), tol) << "gradient " << k << " of " << to_string(loss);
              ++k;
            }(),
            ...);
      },
      leaves);
}

}  // namespace
