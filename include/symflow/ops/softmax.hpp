#pragma once
// softmax, log_softmax and logsumexp are compositions of primitive ops (max, sub, exp, sum, log), so
// they fuse, differentiate and lower to the graph value with no rules of their own. Subtracting the
// maximum keeps exp from overflowing.
#include "exp.hpp"
#include "log.hpp"
#include "max.hpp"
#include "sub.hpp"
#include "add.hpp"
#include "div.hpp"
#include "sum.hpp"
#include "../expr/scope.hpp"

namespace symflow {

template <expression X, int Axis = -1>
auto logsumexp(const X& x, axes_t<Axis> ax = {}) {
  name_scope s("logsumexp");
  return max(x, ax) + log(sum(exp(x - max(x, ax, keepdims)), ax));
}

template <expression X, int Axis = -1>
auto softmax(const X& x, axes_t<Axis> ax = {}) {
  name_scope s("softmax");
  auto e = exp(x - max(x, ax, keepdims));
  // Times the reciprocal, as PyTorch's CPU softmax: one division per row instead of per element.
  return e * (value_type_of<X>(1) / sum(e, ax, keepdims));
}

template <expression X, int Axis = -1>
auto log_softmax(const X& x, axes_t<Axis> ax = {}) {
  name_scope s("log_softmax");
  auto shifted = x - max(x, ax, keepdims);
  return shifted - log(sum(exp(shifted), ax, keepdims));
}

}  // namespace symflow
