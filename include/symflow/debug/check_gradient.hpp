#pragma once
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "../eval/cpu/eval.hpp"
#include "../symbolic/gradient.hpp"
#include "../symbolic/retype.hpp"

namespace symflow {

struct gradient_check {
  double max_relative_error = 0;  // max over elements of |symbolic - numeric| / max(1, |symbolic|, |numeric|)
  double max_absolute_error = 0;
  std::size_t worst_element = 0;  // linear (row-major) index into the leaf
  double symbolic_at_worst = 0, numeric_at_worst = 0;
  std::vector<double> symbolic, numeric;
};

namespace detail {
// A float64 copy of a fed floating value (other dtypes are kept as they are), owning its memory.
template <class Binding>
auto widened_copy(const Binding& b) {
  using T = typename Binding::value_type;
  using V = float_as<double, T>;
  tensor<V, dyn_shape<Binding::rank>> copy(b.value.extents(), uninitialized);
  std::size_t i = 0;
  tensor<V, dyn_shape<Binding::rank>>::for_each_index(b.value.extents(), [&](const auto& idx) {
    std::size_t off = 0;
    for (std::size_t a = 0; a < Binding::rank; ++a) off += idx[a] * b.value.strides()[a];
    copy[i++] = V(b.value.data()[off]);
  });
  return copy;
}
}  // namespace detail

// Compares the symbolic gradient of a scalar expression with respect to `leaf` against central
// finite differences, both computed in float64 (the expression is re-typed with retype<double>).
// Every leaf must be fed through `feeds` (x = tensor, W = tensor).
template <expression E, expression Leaf, class... Feeds>
gradient_check check_gradient(const E& expr, const Leaf& leaf, const Feeds&... feeds) {
  static_assert(E::rank == 0, "symflow: check_gradient needs a scalar expression");
  static_assert(((is_feed_binding_v<Feeds>) && ...), "symflow: check_gradient takes feeds (name = tensor)");
  const auto f = retype<double>(expr);
  const auto x = retype<double>(leaf);
  const auto df = grad(f, x);

  auto copies = std::tuple{detail::widened_copy(feeds)...};
  auto run = [&](const auto& e) {
    return std::apply([&](const auto&... c) { return eval(e, feed<Feeds::name>(c)...); }, copies);
  };
  constexpr std::size_t index = cpu::eval_context<Feeds...>::template feed_index<Leaf::name>();
  static_assert(index != std::size_t(-1), "symflow: check_gradient needs the leaf to be fed");
  auto& leaf_value = std::get<index>(copies);

  gradient_check result;
  const auto symbolic = run(df);
  result.symbolic.assign(symbolic.begin(), symbolic.end());
  for (std::size_t i = 0; i < leaf_value.size(); ++i) {
    const double original = leaf_value[i];
    const double h = 1e-6 * std::max(1.0, std::abs(original));
    leaf_value[i] = original + h;
    const double up = run(f)[0];
    leaf_value[i] = original - h;
    const double down = run(f)[0];
    leaf_value[i] = original;
    const double numeric = (up - down) / (2 * h);
    result.numeric.push_back(numeric);
    const double s = result.symbolic[i];
    const double abs_err = std::abs(s - numeric);
    const double rel_err = abs_err / std::max({1.0, std::abs(s), std::abs(numeric)});
    result.max_absolute_error = std::max(result.max_absolute_error, abs_err);
    if (rel_err > result.max_relative_error || i == 0) {
      result.max_relative_error = std::max(result.max_relative_error, rel_err);
      result.worst_element = i;
      result.symbolic_at_worst = s;
      result.numeric_at_worst = numeric;
    }
  }
  return result;
}

}  // namespace symflow
