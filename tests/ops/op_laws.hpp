#pragma once
// The laws every listed op obeys, checked for each entry of the op list (include/symflow/ops/list.hpp)
// with no list of ops here: an op gets every law by being listed. Each op_laws_*_test.cpp checks
// one range of the list (so that no translation unit grows with the list).
//
// For an elementwise op, with each operand dtype combination its rule accepts (f32, f64, i32, bool),
// on operands of extents [3, 37] (a row is whole SIMD packets and a scalar tail whatever the
// packet width) holding random values and NaN, ±Inf, ±0, ±1, tiny and huge values:
//  1. compiled (typed) evaluation equals the graph interpreter's, fused and unfused, bit for bit;
//  2. the op's graph survives a JSON and a binary round trip unchanged and prints back like its type;
//  3. simplification preserves values: simplify(e) evaluates to the same bits as e for e = op(x..),
//     op(x..) * 1, op(x..) / 1, op(-(-x0), ..) and 1 * op(x..) (run by the interpreter);
// and for operands in float64 (magnitudes in [0.3, 2] with random signs, or positive values in
// [0.3, 2] where the op is not finite on all of those: away from every kink and pole):
//  4. the compile-time gradient of sum(op(x..) * w) agrees with central finite differences;
//  5. the graph's runtime gradient (differentiate) agrees with the compile-time gradient;
// both again for binary ops with the second operand broadcast along the rows.
// A reduction obeys the same laws over axis 1, over axis 0 with kept dimensions, and over all axes;
// law 1 is bitwise where its op is order independent (max, min) or the dtype an integer, and within
// the documented reordering bound for floating sums and means (no ±max among their specials).
// A view or kernel takes its attributes as template arguments, so its laws run on the instance its
// own file gives (`law_example`, ops/law_example.hpp; a listed view or kernel without one does not
// compile here), in f32 and f64, with law 4-5's loss sum(e * e) / 2 + 0.3 sum(e): law 5 checks the
// op's one derivative rule (expr/derivative_rule.hpp) run on graph nodes against the same rule run
// on types. Integer operands (labels) take no gradient.
// Scalar against packet functions, bit for bit, is op_ieee_law_test.cpp (also over the list).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <type_traits>

#include <symflow/io/json.hpp>
#include <symflow/runtime/grad.hpp>

#include "../graph_interpreter_support.hpp"

namespace op_laws {
using namespace symflow;

constexpr std::size_t rows = 3, cols = 37;
using law_shape = shape<dyn, cols>;

template <class T>
void set_special_int(T& v, std::size_t k) {
  const T list[] = {T(0), T(1), T(-1), T(2), T(-2)};  // no overflow: these laws compare, not probe UB
  v = list[k % std::size(list)];
}

// Operand values: random in [lo, hi]; with `specials`, every fifth element (from a position that
// depends on the seed) is a special value instead, so that operands meet specials and each other.
template <class T>
tensor<T, law_shape> law_input(unsigned seed, bool specials, double lo = -3, double hi = 3, bool huge = true) {
  std::mt19937 rng(seed);
  tensor<T, law_shape> t({rows, cols}, uninitialized);
  if constexpr (std::is_same_v<T, bool>) {
    for (auto& v : t) v = rng() & 1;
  } else if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int> d(-50, 50);
    for (auto& v : t) v = T(d(rng));
    if (specials)
      for (std::size_t i = seed % 5; i < t.size(); i += 5) set_special_int(t.data()[i], i / 5 + seed);
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& v : t) v = T(d(rng));
    if (specials) {
      using L = std::numeric_limits<T>;
      const T list[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0),   -T(0),
                        T(1),           T(-1),         L::denorm_min(), L::min(), L::max(),
                        -L::max(),      T(0.5),        T(1e-30)};
      // A sum of +max and -max depends on the order of its terms: the order-dependent laws take the
      // specials before max.
      const std::size_t n = huge ? std::size(list) : 9;
      for (std::size_t i = seed % 5, k = seed; i < t.size(); i += 5, ++k) t.data()[i] = list[k % n];
    }
  }
  return t;
}

template <std::size_t K, class T>
auto law_placeholder() {
  if constexpr (K == 0) return placeholder<"x0", T, law_shape>();
  else if constexpr (K == 1) return placeholder<"x1", T, law_shape>();
  else return placeholder<"x2", T, law_shape>();
}

// `x0 = value0, x1 = value1, ..` as a tuple of bindings.
template <class... P, class... V>
auto bind_all(const std::tuple<P...>& placeholders, const std::tuple<V...>& values) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple{(std::get<K>(placeholders) = std::get<K>(values))...};
  }(std::index_sequence_for<P...>{});
}
template <class... E, class Bindings>
auto eval_bound(const Bindings& bindings, const E&... e) {
  return std::apply([&](const auto&... b) { return eval(e..., b...); }, bindings);
}

// Operand dtype combinations an op of arity N may accept, per element type T.
template <class T, std::size_t N>
auto dtype_candidates() {
  if constexpr (N == 1) return std::tuple<std::tuple<T>>{};
  else if constexpr (N == 2) return std::tuple<std::tuple<T, T>>{};
  else return std::tuple<std::tuple<T, T, T>, std::tuple<bool, T, T>>{};
}

template <class... Ts>
auto law_inputs(bool specials, double lo = -3, double hi = 3) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple{law_input<Ts>(unsigned(11 + 7 * K), specials, lo, hi)...};
  }(std::index_sequence_for<Ts...>{});
}
// Magnitudes in [0.3, 2] with random signs (away from the kinks of abs, relu, sign and maximum).
template <class T>
tensor<T, law_shape> signed_magnitudes(unsigned seed) {
  auto t = law_input<T>(seed, false, 0.3, 2.0);
  if constexpr (std::is_floating_point_v<T>) {
    std::mt19937 rng(seed + 1);
    for (auto& v : t)
      if (rng() & 1) v = -v;
  }
  return t;
}
// Operands for the gradient laws: signed magnitudes where the op is finite on all of them, else
// (log, sqrt, pow..) positive values in [0.3, 2].
template <class E, class P, class... Ts>
auto gradient_inputs(const E& e, const P& placeholders) {
  auto signed_values = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple{signed_magnitudes<Ts>(unsigned(11 + 7 * K))...};
  }(std::index_sequence_for<Ts...>{});
  const auto y = eval_bound(bind_all(placeholders, signed_values), e);
  const bool finite = std::all_of(y.data(), y.data() + y.size(), [](auto v) { return std::isfinite(v); });
  return finite ? signed_values : law_inputs<Ts...>(false, 0.3, 2.0);
}

// Laws 1-3 on one expression `e` of `placeholders` fed `values`.
// An order-dependent reduction (a floating sum) evaluated compiled and by the interpreter: the same
// NaNs and infinities, and finite values within 8 eps times the sum of the operand's magnitudes
// (docs/graph.md, "Reductions").
// A reduction whose rounding is relative to its result (a product: op declares relative_rounding)
// is within 4 eps per combined element of the result instead (plus the smallest normal number, for
// partial products that went subnormal).
template <class T>
void expect_within_reordering(const T* want, const T* got, std::size_t n, long double magnitude, const std::string& what,
                              bool relative = false) {
  using L = std::numeric_limits<T>;
  for (std::size_t i = 0; i < n; ++i) {
    const T a = want[i], b = got[i];
    const long double bound = relative ? 4 * L::epsilon() * (rows * cols + 1) * std::abs((long double)b) + L::min()
                                       : 8 * L::epsilon() * magnitude;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b))
      EXPECT_EQ(ulp_distance(a, b), 0u) << what << " at " << i << ": compiled " << a << ", interpreter " << b;
    else
      EXPECT_LE(std::abs((long double)a - (long double)b), bound) << what << " at " << i << ": compiled " << a << ", interpreter " << b;
  }
}

template <class E, class P, class V>
void value_laws(const E& e, const P& placeholders, const V& values, const std::string& what, bool exact = true,
                bool relative_rounding = false) {
  SCOPED_TRACE(what);
  const auto bindings = bind_all(placeholders, values);
  if (exact) {
    std::apply([&](const auto&... b) { expect_bitwise(std::tuple{e}, b...); }, bindings);
  } else if constexpr (std::is_floating_point_v<value_type_of<E>>) {
    const auto r = std::apply([&](const auto&... b) { return evaluate_both_ways(std::tuple{e}, b...); }, bindings);
    long double magnitude = 0;
    const auto& x = std::get<0>(values);
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::isfinite(x.data()[i])) magnitude += std::abs((long double)x.data()[i]);
    using T = value_type_of<E>;
    const auto& want = std::get<0>(r.compiled);
    ASSERT_EQ(r.fused[0].size(), want.size());
    expect_within_reordering(want.data(), r.fused[0].template data<T>(), want.size(), magnitude, "fused",
                             relative_rounding);
    expect_within_reordering(want.data(), r.unfused[0].template data<T>(), want.size(), magnitude, "unfused",
                             relative_rounding);
  }
  // Both serialised forms round-trip exactly, and the graph prints back like the type.
  expect_graph_prints_like(e);
  const graph g = to_graph(e);
  // Through the interpreter (law 1 ties it to compiled evaluation): a graph costs less to compile.
  const auto sources = std::apply([&](const auto&... b) { return sources_for(g, b...); }, bindings);
  const runtime_tensor plain = interpreter(g).run(sources.feeds, &sources.store).at(0);
  auto simplified_same = [&](const auto& variant, const char* form) {
    const graph sg = to_graph(simplify(variant));
    const auto s_sources = std::apply([&](const auto&... b) { return sources_for(sg, b...); }, bindings);
    const difference d = compare(plain, interpreter(sg).run(s_sources.feeds, &s_sources.store).at(0));
    EXPECT_EQ(d.max_ulps, 0u) << "simplify " << form << ": " << d.what;
  };
  simplified_same(e, "e");
  if constexpr (std::is_floating_point_v<value_type_of<E>>) {
    simplified_same(e * 1, "e * 1");
    simplified_same(1 * e, "1 * e");
    simplified_same(e / 1, "e / 1");
  }
}

template <class Loss, class... P, class Bindings>
void loss_gradient_laws(const Loss& loss, const std::tuple<P...>& placeholders, const Bindings& bindings, const std::string& what);

// Laws 4-5 on a float64 expression of `placeholders`: d sum(e * w) / d x_k for each float64 x_k.
template <class E, class... P, class V>
void gradient_laws(const E& e, const std::tuple<P...>& placeholders, const V& values, const std::string& what) {
  const auto w = placeholder<"w", double, law_shape>();
  const auto wv = law_input<double>(5, false, -1, 1);
  loss_gradient_laws(sum(e * w), placeholders, std::tuple_cat(bind_all(placeholders, values), std::tuple{w = wv}), what);
}

// Laws 4-5 for a scalar float64 loss of `placeholders`, fed by `bindings`.
template <class Loss, class... P, class Bindings>
void loss_gradient_laws(const Loss& loss, const std::tuple<P...>& placeholders, const Bindings& bindings, const std::string& what) {
  SCOPED_TRACE(what + ", gradient");
  std::vector<std::string> names;
  ((std::is_same_v<value_type_of<P>, double> ? void(names.emplace_back(P::name.view())) : void()), ...);
  if (names.empty()) return;
  // Every gradient runs through the interpreter (law 1 ties it to compiled evaluation): graphs cost
  // less to compile than typed evaluations.
  const graph lg = to_graph(loss);
  const graph dg = differentiate(lg, names);
  const auto sources = std::apply([&](const auto&... b) { return sources_for(dg, b...); }, bindings);
  const auto runtime = interpreter(dg).run(sources.feeds, &sources.store);
  interpreter loss_run(lg);
  auto loss_at = [&](const runtime_feeds& feeds) { return loss_run.run(feeds, &sources.store).at(0).template data<double>()[0]; };
  std::size_t k = 1;
  auto check = [&](const auto& x) {
    using X = std::remove_cvref_t<decltype(x)>;
    if constexpr (std::is_same_v<value_type_of<X>, double>) {
      const std::string name(X::name.view());
      const graph cg = to_graph(grad(loss, x));
      interpreter_options unused_feeds_allowed;  // a gradient may not read every operand
      unused_feeds_allowed.allow_unused_feeds = true;
      const runtime_tensor compiled = interpreter(cg, unused_feeds_allowed).run(sources.feeds, &sources.store).at(0);
      ASSERT_LT(k, runtime.size());
      ASSERT_EQ(runtime[k].size(), compiled.size()) << name;
      runtime_feeds feeds = sources.feeds;
      double* v = feeds.at(name).template data<double>();
      for (std::size_t i = 0; i < compiled.size(); ++i) {
        const double a = compiled.template data<double>()[i], b = runtime[k].template data<double>()[i];
        EXPECT_LE(std::abs(a - b), 1e-12 * std::max(1.0, std::abs(a)))
            << "runtime gradient of " << name << " at " << i << ": compile time " << a << ", runtime " << b;
        // Central differences in float64: truncation ~h^2, rounding ~1e-16/h.
        const double x0 = v[i], h = 1e-6 * std::max(1.0, std::abs(x0));
        v[i] = x0 + h;
        const double up = loss_at(feeds);
        v[i] = x0 - h;
        const double down = loss_at(feeds);
        v[i] = x0;
        const double numeric = (up - down) / (2 * h);
        EXPECT_LE(std::abs(a - numeric), 1e-6 * std::max({1.0, std::abs(a), std::abs(numeric)}))
            << "gradient of " << name << " at " << i << ": symbolic " << a << ", finite differences " << numeric;
      }
      ++k;
    }
  };
  std::apply([&](const auto&... x) { (check(x), ...); }, placeholders);
}

template <class Op, class... Ts>
int elementwise_laws_for(std::tuple<Ts...>) {
  if constexpr (!Op::template accepts<Ts...>) {
    return 0;
  } else {
    std::string what(Op::name);
    what += "(";
    ((what += std::string(dtype_name(dtype_v<Ts>)) + ","), ...);
    what.back() = ')';
    const auto placeholders = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple{law_placeholder<K, Ts>()...};
    }(std::index_sequence_for<Ts...>{});
    const auto e = std::apply([](const auto&... p) { return make_elementwise(Op{}, source_site{}, p...); }, placeholders);
    const auto values = law_inputs<Ts...>(true);
    value_laws(e, placeholders, values, what);
    // op(-(-x0), ..): a rewrite of an operand must not change the op's value either.
    if constexpr (std::is_floating_point_v<std::tuple_element_t<0, std::tuple<Ts...>>>) {
      const auto n = std::apply(
          [](const auto& p0, const auto&... rest) { return make_elementwise(Op{}, source_site{}, -(-p0), rest...); },
          placeholders);
      const auto bindings = bind_all(placeholders, values);
      const auto run = [&](const graph& g) {
        const auto sources = std::apply([&](const auto&... b) { return sources_for(g, b...); }, bindings);
        return interpreter(g).run(sources.feeds, &sources.store).at(0);
      };
      const difference d = compare(run(to_graph(e)), run(to_graph(simplify(n))));
      EXPECT_EQ(d.max_ulps, 0u) << what << ": simplify op(-(-x0), ..): " << d.what;
    }
    using Y = typename Op::template result_type<Ts...>;
    if constexpr (std::is_same_v<Y, double> && (std::is_same_v<Ts, double> || ...)) {
      const auto domain = gradient_inputs<decltype(e), decltype(placeholders), Ts...>(e, placeholders);
      gradient_laws(e, placeholders, domain, what);
      // A second operand broadcast along the rows: its adjoint is summed back over them (the
      // runtime's fit_adjoint, the compile-time broadcast rule).
      if constexpr (sizeof...(Ts) == 2 && (std::is_same_v<Ts, double> && ...)) {
        const auto x0 = std::get<0>(placeholders);
        const auto x1 = placeholder<"x1", double, shape<cols>>();
        tensor<double, shape<cols>> row({cols}, uninitialized);
        std::copy_n(std::get<1>(domain).data(), cols, row.data());
        gradient_laws(make_elementwise(Op{}, source_site{}, x0, x1), std::tuple{x0, x1}, std::tuple{std::get<0>(domain), row},
                      what + " with x1 broadcast along rows");
      }
    }
    return 1;
  }
}

// The number of operand dtype combinations checked.
template <class Op, std::size_t N>
int elementwise_laws() {
  auto each = [](auto candidates) { return std::apply([](auto... c) { return (elementwise_laws_for<Op>(c) + ...); }, candidates); };
  return each(dtype_candidates<float, N>()) + each(dtype_candidates<double, N>()) +
         each(dtype_candidates<std::int32_t, N>()) + each(dtype_candidates<bool, N>());
}

template <class Op, class T>
void reduction_laws_for() {
  const auto x = placeholder<"x0", T, law_shape>();
  const std::string what = std::string(Op::name) + "(" + std::string(dtype_name(dtype_v<T>)) + ")";
  const std::tuple placeholders{x};
  constexpr bool exact = order_independent_v<Op> || !std::is_floating_point_v<T>;
  constexpr bool relative = requires { requires Op::relative_rounding; };
  const std::tuple values{law_input<T>(3, true, -3, 3, exact)};
  value_laws(make_reduction<Op>(x, axes_t<1>{}, source_site{}), placeholders, values, what + " over axis 1", exact,
             relative);
  value_laws(make_reduction<Op>(x, axes_t<0>{}, source_site{}, keepdims), placeholders, values,
             what + " over axis 0, kept", exact, relative);
  value_laws(make_reduction<Op>(x, axes_t<>{}, source_site{}), placeholders, values, what + " over all axes", exact,
             relative);
  if constexpr (std::is_same_v<T, double>) {
    // Kept axes, so that e * w broadcasts.
    const std::tuple domain{signed_magnitudes<T>(3)};
    gradient_laws(make_reduction<Op>(x, axes_t<1>{}, source_site{}, keepdims), placeholders, domain, what + " over axis 1");
  }
}

// Views and kernels take their attributes as template arguments: the laws run on the instance each
// op's file gives (its law_example, ops/law_example.hpp), in f32 and f64.
template <std::size_t K, class V, class S>
auto example_placeholder() {
  if constexpr (K == 0) return placeholder<"x0", V, S>();
  else if constexpr (K == 1) return placeholder<"x1", V, S>();
  else if constexpr (K == 2) return placeholder<"x2", V, S>();
  else return placeholder<"x3", V, S>();
}
template <class S>
auto example_extents() {
  std::array<std::size_t, S::rank> e{};
  for (std::size_t i = 0; i < S::rank; ++i) e[i] = S::extents[i] == dyn ? rows : S::extents[i];
  return e;
}
// Operand K's value: random, with specials every fifth element unless the operand is finite or
// specials are off (finite differences need distinct values: ±0 would tie in a max).
template <std::size_t K, class T, class Operand>
auto example_value(unsigned seed, bool specials) {
  using S = typename Operand::shape_type;
  std::mt19937 rng(seed);
  if constexpr (requires { Operand::lo; }) {
    tensor<std::int32_t, S> t(example_extents<S>(), uninitialized);
    std::uniform_int_distribution<int> d(Operand::lo, Operand::hi - 1);
    for (auto& v : t) v = d(rng);
    return t;
  } else {
    tensor<T, S> t(example_extents<S>(), uninitialized);
    std::uniform_real_distribution<double> d(-2, 2);
    for (auto& v : t) v = T(d(rng));
    if (specials && !Operand::finite) {
      using L = std::numeric_limits<T>;
      const T list[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0), T(1), L::denorm_min(), L::max(), T(1e-30)};
      for (std::size_t i = seed % 5, k = seed; i < t.size(); i += 5, ++k) t.data()[i] = list[k % std::size(list)];
    }
    return t;
  }
}
template <class T, class... Operands>
auto example_operands(std::tuple<Operands...>, bool specials = true) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    using value_types = std::tuple<std::conditional_t<requires { Operands::lo; }, std::int32_t, T>...>;
    return std::tuple{
        std::tuple{example_placeholder<K, std::tuple_element_t<K, value_types>, typename Operands::shape_type>()...},
        std::tuple{example_value<K, T, Operands>(unsigned(11 + 7 * K), specials)...}};
  }(std::index_sequence_for<Operands...>{});
}
// The number of dtypes checked.
template <class Op>
int view_or_kernel_laws() {
  using example = typename Op::law_example;
  int checked = 0;
  auto run = [&](auto t) {
    using T = decltype(t);
    const auto [placeholders, values] = example_operands<T>(typename example::operands{});
    const auto e = std::apply([](const auto&... x) { return example::template of<T>(x...); }, placeholders);
    const std::string what = to_string(e);
    value_laws(e, placeholders, values, what);
    if constexpr (std::is_same_v<T, double> && !requires { requires !example::differentiable; }) {
      // A loss whose gradient differs per element (e + 0.3), so that a misplaced element shows.
      const auto loss = sum(e * e) * 0.5 + sum(e) * 0.3;
      // The same operands without specials, for finite differences.
      const auto finite = std::get<1>(example_operands<T>(typename example::operands{}, false));
      loss_gradient_laws(loss, placeholders, bind_all(placeholders, finite), what);
    }
    ++checked;
  };
  run(float{});
  run(double{});
  return checked;
}

template <class Entry>
void check_listed_op() {
  using Op = typename Entry::type;
  SCOPED_TRACE(std::string("op '") + std::string(Op::name) + "'");
  if constexpr (Entry::kind == node_kind::elementwise) {
    constexpr std::size_t n = detail::elementwise_takes<Op, 1>() ? 1 : detail::elementwise_takes<Op, 2>() ? 2 : 3;
    const int checked = elementwise_laws<Op, n>();
    EXPECT_GT(checked, 0) << "no operand dtypes to check the laws with";
  } else if constexpr (Entry::kind == node_kind::reduction) {
    reduction_laws_for<Op, float>();
    reduction_laws_for<Op, double>();
    reduction_laws_for<Op, std::int32_t>();
  } else {
    static_assert(requires { typename Op::law_example; },
                  "op laws: a view or kernel gives its law-test instance in its file (ops/law_example.hpp)");
    view_or_kernel_laws<Op>();
  }
}

// Checks the listed ops with indices [Begin, End) (End clipped to the list's length).
template <std::size_t Begin, std::size_t End>
void check_listed_ops() {
  constexpr std::size_t total = std::tuple_size_v<registered_ops>;
  constexpr std::size_t end = End < total ? End : total;
  if constexpr (Begin < end)
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (check_listed_op<std::tuple_element_t<Begin + I, registered_ops>>(), ...);
    }(std::make_index_sequence<end - Begin>{});
}

}  // namespace op_laws
}  // namespace (the anonymous one graph_interpreter_support.hpp leaves open for its tests)
