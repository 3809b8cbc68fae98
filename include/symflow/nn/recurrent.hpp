#pragma once
// Recurrent cells: one time step of a GRU or an LSTM, with PyTorch's gate equations and gate order,
// so that weights move between the two by a transpose. The gates of a cell share one matrix product
// for the input and one for the state (x Wx is [n, gates * Hidden], sliced per gate), which is two
// GEMMs per step instead of one per gate.
//
//   nn::gru_cell<"gru", 64, 128> cell;
//   auto h1 = cell(x0, h0);                 // x0 [n, 64], h0 [n, 128] -> [n, 128]
//
//   nn::lstm_cell<"lstm", 64, 128> cell;
//   auto [h1, c1] = cell(x0, h0, c0);
//   auto hc = scan(cell, hc0, xs);        // packed states [T, n, 256]: h then c on the last axis
//
// Weights and biases start uniform in [-1/sqrt(Hidden), 1/sqrt(Hidden)], as PyTorch's.
#include <cmath>
#include <cstddef>
#include <optional>
#include <tuple>
#include <utility>

#include "../core/shape.hpp"
#include "../core/source_site.hpp"
#include "../expr/fixed_string.hpp"
#include "../expr/scope.hpp"
#include "../ops/all.hpp"
#include "../train/initializers.hpp"
#include "parameter.hpp"

namespace symflow::nn {

struct recurrent_options {
  // Empty: uniform in [-1/sqrt(Hidden), 1/sqrt(Hidden)].
  std::optional<any_initializer> weights;
  std::optional<any_initializer> bias;
};

namespace detail {
inline any_initializer recurrent_default(const std::optional<any_initializer>& chosen, std::size_t hidden) {
  if (chosen) return *chosen;
  const double k = 1.0 / std::sqrt(double(hidden));
  return uniform_init{-k, k};
}
// Gate g of Gates, each Hidden wide, along the last axis.
template <std::size_t Hidden, expression X>
auto gate(const X& all, std::size_t g) {
  return narrow<-1>(all, g * Hidden, (g + 1) * Hidden);
}
}  // namespace detail

// r = sigmoid(x Wr + br + h Ur + cr), z = sigmoid(x Wz + bz + h Uz + cz),
// n = tanh(x Wn + bn + r * (h Un + cn)), h' = (1 - z) * n + z * h   (gates ordered r, z, n).
template <fixed_string Name, std::size_t Input, std::size_t Hidden, class T = float>
struct gru_cell {
  parameter<Name, "W", T, shape<Input, 3 * Hidden>> W;  // input to gates
  parameter<Name, "U", T, shape<Hidden, 3 * Hidden>> U;  // state to gates
  parameter<Name, "b", T, shape<3 * Hidden>> b;
  parameter<Name, "c", T, shape<3 * Hidden>> c;  // the state's bias, inside r * (...) for n

  explicit gru_cell(recurrent_options o = {}, source_site where = source_site::current())
      : W(detail::recurrent_default(o.weights, Hidden), where),
        U(detail::recurrent_default(o.weights, Hidden), where),
        b(detail::recurrent_default(o.bias, Hidden), where),
        c(detail::recurrent_default(o.bias, Hidden), where) {}
  auto layers() const { return std::tie(W, U, b, c); }

  template <expression X, expression H>
  auto operator()(const X& x, const H& h, source_site where = source_site::current()) const {
    return scope(
        Name.value,
        [&] {
          const auto from_input = matmul(x, W.var) + b.var;
          const auto from_state = matmul(h, U.var) + c.var;
          const auto r = sigmoid(detail::gate<Hidden>(from_input, 0) + detail::gate<Hidden>(from_state, 0));
          const auto z = sigmoid(detail::gate<Hidden>(from_input, 1) + detail::gate<Hidden>(from_state, 1));
          const auto n = tanh(detail::gate<Hidden>(from_input, 2) + r * detail::gate<Hidden>(from_state, 2));
          return n + z * (h - n);
        },
        where);
  }
};

// i, f, o = sigmoid(x W + h U + b) (three gates), g = tanh(...), c' = f * c + i * g, h' = o * tanh(c')
// (gates ordered i, f, g, o). Returns the pair (h', c').
template <fixed_string Name, std::size_t Input, std::size_t Hidden, class T = float>
struct lstm_cell {
  parameter<Name, "W", T, shape<Input, 4 * Hidden>> W;
  parameter<Name, "U", T, shape<Hidden, 4 * Hidden>> U;
  parameter<Name, "b", T, shape<4 * Hidden>> b;

  explicit lstm_cell(recurrent_options o = {}, source_site where = source_site::current())
      : W(detail::recurrent_default(o.weights, Hidden), where),
        U(detail::recurrent_default(o.weights, Hidden), where),
        b(detail::recurrent_default(o.bias, Hidden), where) {}
  auto layers() const { return std::tie(W, U, b); }

  template <expression X, expression H, expression C>
  auto operator()(const X& x, const H& h, const C& c, source_site where = source_site::current()) const {
    return scope(
        Name.value,
        [&] {
          const auto gates = matmul(x, W.var) + matmul(h, U.var) + b.var;
          const auto i = sigmoid(detail::gate<Hidden>(gates, 0));
          const auto f = sigmoid(detail::gate<Hidden>(gates, 1));
          const auto g = tanh(detail::gate<Hidden>(gates, 2));
          const auto o = sigmoid(detail::gate<Hidden>(gates, 3));
          const auto next_c = f * c + i * g;
          return std::pair{o * tanh(next_c), next_c};
        },
        where);
  }
  // The same step on one packed state hc = [h, c] of [n, 2 * Hidden], returning the next [h, c]:
  // the form scan takes (its state is one tensor). h_t is narrow<-1>(states, 0, Hidden).
  template <expression X, expression HC>
  auto operator()(const X& x, const HC& hc, source_site where = source_site::current()) const {
    static_assert(shape_of<HC>::rank == 2 && shape_of<HC>::extents[1] == 2 * Hidden,
                  "symflow: nn::lstm_cell(x, hc): the packed state hc must be [n, 2 * Hidden] (h, then c)");
    // The halves are given their static width again (a slice's extent is a run-time value), which
    // concat's gradient needs to find each half's adjoint.
    using half = shape<shape_of<HC>::extents[0], Hidden>;
    const auto [h, c] = (*this)(x, reshape<half>(narrow<-1>(hc, 0, Hidden)), reshape<half>(narrow<-1>(hc, Hidden, 2 * Hidden)), where);
    return concat<-1>(h, c);
  }
};

}  // namespace symflow::nn
