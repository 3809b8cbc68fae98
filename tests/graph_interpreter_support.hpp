#pragma once
// Shared by the interpreter tests (graph_interpreter*_test.cpp): ulp distances, random tensors and\n// the check that runs expressions compiled and through their graph.
#include <bit>
#include <cstdio>
#include <cmath>
#include <limits>
#include <random>
#include <symflow/runtime/interpreter.hpp>

#include "../examples/graph_model.hpp"
#include "graph_support.hpp"

#if __has_include(<symflow/runtime/grad.hpp>)
#include <symflow/runtime/grad.hpp>
#define SYMFLOW_HAS_RUNTIME_GRAD 1
#endif

namespace {

using namespace symflow;
using namespace symflow::testing;

// Distance between two values of one dtype in units in the last place: 0 for the same value and
// sign (and for two NaNs), 1 for neighbouring floats and for -0 against +0; for integers and bools, 0
// or 1.
template <class T>
std::uint64_t ulp_distance(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<std::uint64_t>::max();
    if (a == b) return std::signbit(a) == std::signbit(b) ? 0 : 1;  // -0 and +0: equal, but not the same bits
    using bits = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
    // Floats ordered as integers: negative values mirrored below zero, so -0 and +0 meet.
    auto ordered = [](T v) -> __int128 {
      const bits i = std::bit_cast<bits>(v);
      return i < 0 ? -__int128(i & std::numeric_limits<bits>::max()) : __int128(i);
    };
    const __int128 d = ordered(a) - ordered(b);
    return std::uint64_t(d < 0 ? -d : d);
  } else {
    return a == b ? 0 : 1;
  }
}

struct difference {
  std::uint64_t max_ulps = 0;
  std::size_t differing = 0;
  std::size_t worst = 0;
  std::string what;  // a readable note for failure messages
};

template <class T>
difference compare_elements(const T* want, const T* got, std::size_t n) {
  difference d;
  for (std::size_t i = 0; i < n; ++i) {
    const auto u = ulp_distance(want[i], got[i]);
    if (u) ++d.differing;
    if (u > d.max_ulps) {
      d.max_ulps = u;
      d.worst = i;
    }
  }
  if (d.differing) {
    std::ostringstream os;
    os.precision(10);
    os << d.differing << " of " << n << " elements differ, worst by " << d.max_ulps << " ulps at " << d.worst
       << ": expected " << +want[d.worst] << ", got " << +got[d.worst];
    d.what = os.str();
  }
  return d;
}

// A compiled result against an interpreter result: dtype and extents first, then the elements.
template <class T, class S>
difference compare(const tensor<T, S>& want, const runtime_tensor& got) {
  const runtime_extents e(want.extents().begin(), want.extents().end());
  if (got.type() != dtype_v<T> || got.extents() != e)
    return {std::numeric_limits<std::uint64_t>::max(), want.size(), 0,
            "expected " + std::string(dtype_name(dtype_v<T>)) + format_extents(e) + ", got " + got.type_string()};
  return compare_elements(want.data(), got.data<T>(), want.size());
}
inline difference compare(const runtime_tensor& want, const runtime_tensor& got) {
  if (want.type() != got.type() || want.extents() != got.extents())
    return {std::numeric_limits<std::uint64_t>::max(), want.size(), 0,
            "expected " + want.type_string() + ", got " + got.type_string()};
  return visit_dtype(want.type(), [&](auto t) {
    using T = decltype(t);
    return compare_elements(want.data<T>(), got.data<T>(), want.size());
  });
}

template <class T, class S>
tensor<T, S> random_tensor(std::mt19937& rng, extents_t<S::rank> e, double lo, double hi) {
  tensor<T, S> t(e, uninitialized);
  if constexpr (std::is_same_v<T, bool>) {
    for (auto& v : t) v = rng() % 2;
  } else if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> d((long long)lo, (long long)hi);
    for (auto& v : t) v = T(d(rng));
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& v : t) v = T(d(rng));
  }
  return t;
}

// A binding (`x = tensor`) as an interpreter value; the tests bind whole, contiguous tensors.
template <class B>
runtime_tensor runtime_value_of(const B& binding) {
  using T = typename B::value_type;
  const auto& v = binding.value;
  runtime_tensor t(dtype_v<T>, runtime_extents(v.extents().begin(), v.extents().end()));
  if (t.byte_size()) std::memcpy(t.bytes(), v.data(), t.byte_size());
  return t;
}

// The same bindings for the interpreter: inputs as feeds, parameters in a store.
struct interpreter_sources {
  runtime_feeds feeds;
  params store;
};
template <class... B>
interpreter_sources sources_for(const graph& g, const B&... bindings) {
  interpreter_sources s;
  auto add = [&](const auto& b) {
    const std::string name(std::remove_cvref_t<decltype(b)>::name.view());
    const bool is_parameter =
        std::any_of(g.parameters.begin(), g.parameters.end(), [&](const graph_leaf& p) { return p.name == name; });
    runtime_tensor value = runtime_value_of(b);
    if (is_parameter) {
      params::entry e{value.type(), value.extents(), aligned_buffer<unsigned char>(value.byte_size())};
      if (value.byte_size()) std::memcpy(e.bytes.data(), value.bytes(), value.byte_size());
      s.store.set_entry(name, std::move(e));
    } else {
      s.feeds.insert_or_assign(name, std::move(value));
    }
  };
  (add(bindings), ...);
  return s;
}

// Options built field by field: a designated initialiser warns (-Wextra) about every member it
// leaves out, and interpreter_options grows.
inline interpreter_options unfused_options() {
  interpreter_options o;
  o.fuse = false;
  return o;
}
inline interpreter_options tiled_options(std::size_t tile) {
  interpreter_options o;
  o.tile_elements = tile;
  return o;
}

// The expressions evaluated compiled and through their graph (all outputs of one graph), fused and
// unfused.
template <class... E>
struct both_ways {
  std::tuple<tensor<value_type_of<E>, shape_of<E>>...> compiled;
  graph lowered;
  std::vector<runtime_tensor> fused, unfused;
  interpreter_stats stats;
};

template <class... E, class... B>
both_ways<E...> evaluate_both_ways(const std::tuple<E...>& exprs, const B&... bindings) {
  both_ways<E...> r;
  // One compiled evaluation per expression: a multi-output eval runs its one-pass group with
  // packets only when every output has a packet form, which would make the comparison depend on
  // the company an expression keeps.
  r.compiled = std::apply([&](const auto&... e) { return std::tuple{eval(e, bindings...)...}; }, exprs);
  r.lowered = to_graph(exprs);
  const auto sources = sources_for(r.lowered, bindings...);
  interpreter fused(r.lowered);
  r.fused = fused.run(sources.feeds, &sources.store);
  r.stats = fused.last_stats();
  r.unfused = interpreter(r.lowered, unfused_options()).run(sources.feeds, &sources.store);
  return r;
}

// Every output bit for bit equal to compiled evaluation, fused and unfused.
template <class... E, class... B>
both_ways<E...> expect_bitwise(const std::tuple<E...>& exprs, const B&... bindings) {
  auto r = evaluate_both_ways(exprs, bindings...);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (
        [&] {
          const auto d = compare(std::get<K>(r.compiled), r.fused[K]);
          EXPECT_EQ(d.max_ulps, 0u) << to_string(std::get<K>(exprs)) << ": " << d.what;
          const auto u = compare(std::get<K>(r.compiled), r.unfused[K]);
          EXPECT_EQ(u.max_ulps, 0u) << "unfused " << to_string(std::get<K>(exprs)) << ": " << u.what;
        }(),
        ...);
  }(std::index_sequence_for<E...>{});
  return r;
}

constexpr std::size_t rows = 33, cols = 21;  // a row is a SIMD packet and a scalar tail

struct elementwise_inputs {
  std::mt19937 rng{2026};
  tensor<float, shape<dyn, cols>> x = random_tensor<float, shape<dyn, cols>>(rng, {rows, cols}, -3, 3);
  tensor<float, shape<dyn, cols>> y = random_tensor<float, shape<dyn, cols>>(rng, {rows, cols}, -3, 3);
  tensor<float, shape<dyn, cols>> p = random_tensor<float, shape<dyn, cols>>(rng, {rows, cols}, 0.05, 4);
  tensor<float, shape<cols>> w = random_tensor<float, shape<cols>>(rng, {cols}, -2, 2);
  tensor<float, shape<dyn, 1>> col = random_tensor<float, shape<dyn, 1>>(rng, {rows, 1}, -2, 2);
  tensor<bool, shape<dyn, cols>> m = random_tensor<bool, shape<dyn, cols>>(rng, {rows, cols}, 0, 1);
  tensor<std::int32_t, shape<dyn, cols>> i = random_tensor<std::int32_t, shape<dyn, cols>>(rng, {rows, cols}, -50, 50);
  tensor<std::int32_t, shape<dyn, cols>> j = random_tensor<std::int32_t, shape<dyn, cols>>(rng, {rows, cols}, -50, 50);
  tensor<double, shape<dyn, cols>> d = random_tensor<double, shape<dyn, cols>>(rng, {rows, cols}, -3, 3);
};

const auto x = placeholder<"x", float, shape<dyn, cols>>();
const auto y = placeholder<"y", float, shape<dyn, cols>>();
const auto p = placeholder<"p", float, shape<dyn, cols>>();  // positive
const auto w = variable<"w", float, shape<cols>>();          // broadcast along rows
const auto col = placeholder<"col", float, shape<dyn, 1>>();  // broadcast along columns
const auto m = placeholder<"m", bool, shape<dyn, cols>>();
const auto i = placeholder<"i", std::int32_t, shape<dyn, cols>>();
const auto j = placeholder<"j", std::int32_t, shape<dyn, cols>>();
const auto d = placeholder<"d", double, shape<dyn, cols>>();
