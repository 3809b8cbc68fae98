#pragma once
// Values a training step writes besides the optimiser's update: a layer's running averages (batch
// normalisation's mean and variance) and any other non-trainable variable whose new value is an
// expression of the batch and of the old values.
//
//   nn::trainer train(nn::with_updates(loss, bn.updates(h)), nn::parameters(model), adam({}));
//
// The trainer evaluates each update's value in the same pass as the loss and the gradients (from the
// values before the step) and stores it after the optimiser's update. The update is outside the
// gradient: nothing is differentiated through it.
#include <tuple>
#include <type_traits>
#include <utility>

#include "../expr/leaves.hpp"

namespace symflow::nn {

// target <- value after a step. The value has the target's dtype and (static) shape.
template <class Variable, class Value>
struct state_update {
  Variable target;
  Value value;
};

template <class Variable, expression Value>
auto assign(const Variable& target, const Value& value) {
  static_assert(std::is_same_v<value_type_of<Value>, typename Variable::value_type>,
                "symflow: nn::assign: the new value's dtype differs from the variable's");
  static_assert(std::is_same_v<shape_of<Value>, typename Variable::shape_type>,
                "symflow: nn::assign: the new value's shape differs from the variable's (a static shape)");
  return state_update<Variable, Value>{target, value};
}

// A loss together with the state updates of its step.
template <class Loss, class... Updates>
struct loss_with_updates {
  Loss loss;
  std::tuple<Updates...> updates;
};

namespace detail {
template <class U>
auto as_update_tuple(const U& u) {
  if constexpr (requires { std::tuple_size<U>::value; }) return u;  // a layer's updates(x): a tuple
  else return std::tuple<U>{u};
}
template <class... U>
auto make_loss_with_updates(const auto& loss, const std::tuple<U...>& updates) {
  return loss_with_updates<std::remove_cvref_t<decltype(loss)>, U...>{loss, updates};
}
}  // namespace detail

// The loss and the updates (each a state_update or a tuple of them, as a layer's updates(x) gives).
template <expression Loss, class... Updates>
auto with_updates(const Loss& loss, const Updates&... updates) {
  return detail::make_loss_with_updates(loss, std::tuple_cat(detail::as_update_tuple(updates)...));
}

template <class T>
inline constexpr bool is_loss_with_updates_v = false;
template <class Loss, class... U>
inline constexpr bool is_loss_with_updates_v<loss_with_updates<Loss, U...>> = true;

// The loss of a training step's objective (an expression, or a loss_with_updates), and its updates.
template <class Objective>
const auto& loss_of_objective(const Objective& o) {
  if constexpr (is_loss_with_updates_v<Objective>) return o.loss;
  else return o;
}
template <class Objective>
auto updates_of_objective(const Objective& o) {
  if constexpr (is_loss_with_updates_v<Objective>) return o.updates;
  else return std::tuple<>{};
}

}  // namespace symflow::nn
