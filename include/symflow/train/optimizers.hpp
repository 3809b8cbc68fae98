#pragma once
// Optimisers: SGD, SGD with momentum, Adam. Each update of one parameter is ONE fused elementwise
// pass that reads the parameter, its gradient and the optimiser's state for it and writes the new
// state and the new parameter over the old ones (fused_update.hpp says why that is safe). Adam's
// first moment, second moment and parameter are three outputs of that single pass.
//
// Parameters live in a params store (the model); the optimiser's state — per-parameter moments and
// the step count — lives in a second params store, so a checkpoint saves both the same way:
//
//   adam opt({.learning_rate = 1e-3});
//   params state = opt.initial_state(model, W, b);
//   auto [L, gW, gb] = eval(loss, dW, db, x = xb, y = yb, model);
//   opt.step(model, state, std::tie(W, b), std::tie(gW, gb));
//
// State entries: "step" (int64 scalar, the number of updates made), and per variable "velocity/NAME"
// (momentum) or "m/NAME" and "v/NAME" (Adam). The learning rate of an update is the schedule's value
// at the step count before it.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../core/tensor.hpp"
#include "../expr/leaves.hpp"
#include "named_parameters.hpp"
#include "optimizer_step.hpp"
#include "schedules.hpp"
#include "update_rules.hpp"

namespace symflow {

namespace detail {
template <class Variable>
std::string variable_name() {
  static_assert(Variable::kind == node_kind::variable, "symflow: optimisers update variables");
  return std::string(Variable::name.view());
}

// The stored value of a variable, checked against its dtype and shape.
template <class Variable>
auto stored_value(params& store, const std::string& name) {
  return store.template view<typename Variable::value_type, typename Variable::shape_type>(name);
}

// A zero tensor with the extents the model gives the variable, stored under name in state.
template <class Variable>
void add_zero_state(params& state, const params& model, const std::string& name) {
  using T = typename Variable::value_type;
  using S = typename Variable::shape_type;
  const auto value = model.template view<T, S>(variable_name<Variable>());
  state.set(name, tensor<T, S>(value.extents(), T{}));
}

template <class Variable, class Gradient>
void check_gradient_type() {
  using G = std::remove_cvref_t<Gradient>;
  static_assert(is_tensor_v<G> || is_tensor_view_v<G>, "symflow: a gradient is a tensor or tensor_view");
  static_assert(std::is_same_v<typename G::value_type, typename Variable::value_type> &&
                    G::rank == Variable::rank,
                "symflow: a gradient's dtype and rank must be those of its variable (pass gradients in the "
                "order of the variables)");
}

// Calls f(variable, gradient) for each pair of the two tuples.
template <class Variables, class Gradients, class F>
void for_each_parameter(const Variables& variables, const Gradients& gradients, F&& f) {
  constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<Variables>>;
  static_assert(n == std::tuple_size_v<std::remove_cvref_t<Gradients>>,
                "symflow: an optimiser step takes one gradient per variable");
  [&]<std::size_t... I>(std::index_sequence<I...>) SYMFLOW_INLINE_LAMBDA {
    (f(std::get<I>(variables), std::get<I>(gradients)), ...);
  }(std::make_index_sequence<n>{});
}

// An optimiser's initial state: a zero tensor per variable under each prefix ("m/W1", ...) and step 0.
template <class... Variables>
params initial_state_with(const params& model, std::initializer_list<const char*> prefixes) {
  params state;
  for (const char* prefix : prefixes) (add_zero_state<Variables>(state, model, prefix + variable_name<Variables>()), ...);
  set_optimizer_step(state, 0);
  return state;
}

// One optimiser step: update(variable, gradient, t, learning rate at t) for each parameter, with the
// gradient's type checked, then the step count t advances.
template <class Variables, class Gradients, class Update>
void step_each_parameter(params& state, const learning_rate_schedule& schedule, const Variables& variables,
                         const Gradients& gradients, Update&& update) {
  const std::uint64_t t = optimizer_step(state);
  const double rate = schedule(t);
  // (The per-parameter lambdas here and in the optimisers are inlined: out of line, each would be
  // a function named after the tuples of all variables and gradients.)
  for_each_parameter(variables, gradients, [&]<class V, class G>(const V& v, const G& g) SYMFLOW_INLINE_LAMBDA {
    check_gradient_type<V, G>();
    update(v, g, t, rate);
  });
  set_optimizer_step(state, t + 1);
}

// A parameter's stored value as one flat run of elements (the update rules are elementwise).
template <class T, class S>
flat_view<T> flat(const tensor_view<T, S>& stored) {
  return flat_view<T>(stored.data(), {stored.size()});
}

// The gradient of `name` as a flat view: its extents must be the variable's; a strided view is
// copied into `buffer` first.
template <class G, class T, class S>
flat_view<const T> flat_gradient(const G& g, const tensor_view<T, S>& stored, const std::string& name,
                                 const char* optimizer, std::vector<T>& buffer) {
  if (g.extents() != stored.extents())
    throw shape_error(std::string(optimizer) + ": the gradient given for variable '" + name + "' has extents " +
                      format_extents(g.extents()) + ", the variable " + format_extents(stored.extents()));
  if constexpr (is_tensor_view_v<G>) {
    if (!g.is_contiguous()) {
      const auto copy = tensor<T, dyn_shape<S::rank>>::copy_of(g);
      buffer.assign(copy.begin(), copy.end());
      return flat_view<const T>(buffer.data(), {buffer.size()});
    }
  }
  return flat_view<const T>(g.data(), {g.size()});
}

// One step of an optimiser whose rule comes as block_update (momentum, Adam): each parameter's
// whole gradient as one block. The blocks nn::trainer hands the same rule while the gradient's
// product computes it give the same values (eval/cpu/accumulate.hpp).
template <class Optimizer, class Variables, class Gradients>
void step_by_block_updates(const Optimizer& optimizer, const learning_rate_schedule& schedule, const char* name_of_rule,
                           params& model, params& state, const Variables& variables, const Gradients& gradients) {
  step_each_parameter(state, schedule, variables, gradients,
                      [&]<class V, class G>(const V& variable, const G& g, std::uint64_t, double) SYMFLOW_INLINE_LAMBDA {
    using T = typename V::value_type;
    const std::string name = variable_name<V>();
    std::vector<T> copy;
    const auto gradient = flat_gradient(g, stored_value<V>(model, name), name, name_of_rule, copy);
    optimizer.block_update(model, state, variable)(std::size_t(0), gradient.data(), gradient.size());
  });
}

inline void require(bool ok, const std::string& message) {
  if (!ok) throw value_error(message);
}
}  // namespace detail

// w <- w - lr * g
class sgd {
 public:
  struct options {
    learning_rate_schedule learning_rate = 0.01;
  };
  explicit sgd(options o) : options_(std::move(o)) {}

  template <class... Variables>
  params initial_state(const params& model, const Variables&...) const {
    return detail::initial_state_with<Variables...>(model, {});
  }

  double learning_rate(const params& state) const { return options_.learning_rate(optimizer_step(state)); }
  // The update is w + c g with c = -lr, linear in the gradient: nn::trainer adds a weight's
  // gradient into the weight as the gradient's matrix product computes it (eval/cpu/accumulate.hpp)
  // instead of storing it first. This is c for the next step; that step then updates the other
  // parameters with step().
  double gradient_scale(const params& state) const { return -learning_rate(state); }

  template <class Variables, class Gradients>
  void step(params& model, params& state, const Variables& variables, const Gradients& gradients) const {
    detail::step_each_parameter(state, options_.learning_rate, variables, gradients,
                                [&]<class V, class G>(const V&, const G& g, std::uint64_t, double rate) SYMFLOW_INLINE_LAMBDA {
      using T = typename V::value_type;
      const std::string name = detail::variable_name<V>();
      const auto w = detail::stored_value<V>(model, name);
      std::vector<T> copy;
      detail::sgd_update<T>(detail::flat(w), detail::flat_gradient(g, w, name, "sgd", copy), static_cast<T>(rate));
    });
  }

  // Parameters named at run time (named_parameters.hpp): the same update, checked at run time.
  params initial_state(const params& model, const std::vector<std::string>& names) const {
    return detail::initial_named_state(model, names, {});
  }
  void step(params& model, params& state, const std::vector<named_gradient>& gradients) const {
    detail::step_named(model, state, gradients, "sgd", {}, [&](auto tag, auto* w, const auto* g, std::size_t n, const auto&, std::uint64_t t) {
      using T = decltype(tag);
      detail::sgd_update<T>(detail::flat_view<T>(w, {n}), detail::flat_view<const T>(g, {n}),
                            static_cast<T>(options_.learning_rate(t)));
    });
  }

 private:
  options options_;
};

// v <- mu * v + g;  w <- w - lr * v   (the velocity form of PyTorch's SGD with momentum)
class momentum {
 public:
  struct options {
    learning_rate_schedule learning_rate = 0.01;
    double momentum = 0.9;
  };
  explicit momentum(options o) : options_(std::move(o)) {
    detail::require(options_.momentum >= 0 && options_.momentum < 1,
                    "momentum: the momentum must lie in [0, 1), got " + std::to_string(options_.momentum));
  }

  template <class... Variables>
  params initial_state(const params& model, const Variables&...) const {
    return detail::initial_state_with<Variables...>(model, {"velocity/"});
  }

  double learning_rate(const params& state) const { return options_.learning_rate(optimizer_step(state)); }

  // This step's update of one parameter as a function of blocks of its gradient, (offset, block,
  // count): nn::trainer runs it over each block of a weight gradient as the gradient's product
  // computes it (eval/cpu/accumulate.hpp), so that the gradient is never stored. The rule is
  // elementwise: the blocks give the values step() gives. The step count advances in the step()
  // that follows.
  template <class V>
  auto block_update(params& model, params& state, const V&) const {
    using T = typename V::value_type;
    const std::string name = detail::variable_name<V>();
    return [w = detail::stored_value<V>(model, name).data(),
            velocity = detail::stored_value<V>(state, "velocity/" + name).data(),
            rate = static_cast<T>(learning_rate(state)),
            mu = static_cast<T>(options_.momentum)](std::size_t offset, const T* g, std::size_t n) {
      detail::momentum_update<T>(detail::flat_view<T>(w + offset, {n}), detail::flat_view<T>(velocity + offset, {n}),
                                 detail::flat_view<const T>(g, {n}), rate, mu);
    };
  }

  template <class Variables, class Gradients>
  void step(params& model, params& state, const Variables& variables, const Gradients& gradients) const {
    detail::step_by_block_updates(*this, options_.learning_rate, "momentum", model, state, variables, gradients);
  }

  // Parameters named at run time (named_parameters.hpp): the same update, checked at run time.
  params initial_state(const params& model, const std::vector<std::string>& names) const {
    return detail::initial_named_state(model, names, {"velocity/"});
  }
  void step(params& model, params& state, const std::vector<named_gradient>& gradients) const {
    detail::step_named(model, state, gradients, "momentum", {"velocity/"},
                       [&](auto tag, auto* w, const auto* g, std::size_t n, const auto& velocity, std::uint64_t t) {
      using T = decltype(tag);
      detail::momentum_update<T>(detail::flat_view<T>(w, {n}), detail::flat_view<T>(velocity[0], {n}),
                                 detail::flat_view<const T>(g, {n}), static_cast<T>(options_.learning_rate(t)),
                                 static_cast<T>(options_.momentum));
    });
  }

 private:
  options options_;
};

// Adam (Kingma & Ba), with bias correction as PyTorch writes it, at step t = 1, 2, ...:
//   m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
//   w <- w - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// The corrections are computed once per step in double and fed as scalars.
class adam {
 public:
  struct options {
    learning_rate_schedule learning_rate = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-8;
  };
  explicit adam(options o) : options_(std::move(o)) {
    detail::require(options_.beta1 >= 0 && options_.beta1 < 1,
                    "adam: beta1 must lie in [0, 1), got " + std::to_string(options_.beta1));
    detail::require(options_.beta2 >= 0 && options_.beta2 < 1,
                    "adam: beta2 must lie in [0, 1), got " + std::to_string(options_.beta2));
    detail::require(options_.epsilon > 0 && std::isfinite(options_.epsilon),
                    "adam: epsilon must be finite and > 0, got " + std::to_string(options_.epsilon));
  }

  template <class... Variables>
  params initial_state(const params& model, const Variables&...) const {
    return detail::initial_state_with<Variables...>(model, {"m/", "v/"});
  }

  double learning_rate(const params& state) const { return options_.learning_rate(optimizer_step(state)); }

  // This step's update of one parameter as a function of blocks of its gradient (see
  // momentum::block_update): the moments and the parameter of elements [offset, offset + count).
  template <class V>
  auto block_update(params& model, params& state, const V&) const {
    using T = typename V::value_type;
    const std::string name = detail::variable_name<V>();
    return [w = detail::stored_value<V>(model, name).data(), m = detail::stored_value<V>(state, "m/" + name).data(),
            v = detail::stored_value<V>(state, "v/" + name).data(),
            scalars = scalars_at<T>(optimizer_step(state))](std::size_t offset, const T* g, std::size_t n) {
      detail::adam_update<T>(detail::flat_view<T>(w + offset, {n}), detail::flat_view<T>(m + offset, {n}),
                             detail::flat_view<T>(v + offset, {n}), detail::flat_view<const T>(g, {n}), scalars);
    };
  }

  template <class Variables, class Gradients>
  void step(params& model, params& state, const Variables& variables, const Gradients& gradients) const {
    detail::step_by_block_updates(*this, options_.learning_rate, "adam", model, state, variables, gradients);
  }

  // Parameters named at run time (named_parameters.hpp): the same update, checked at run time.
  params initial_state(const params& model, const std::vector<std::string>& names) const {
    return detail::initial_named_state(model, names, {"m/", "v/"});
  }
  void step(params& model, params& state, const std::vector<named_gradient>& gradients) const {
    detail::step_named(model, state, gradients, "adam", {"m/", "v/"},
                       [&](auto tag, auto* w, const auto* g, std::size_t n, const auto& moments, std::uint64_t t) {
      using T = decltype(tag);
      detail::adam_update<T>(detail::flat_view<T>(w, {n}), detail::flat_view<T>(moments[0], {n}),
                             detail::flat_view<T>(moments[1], {n}), detail::flat_view<const T>(g, {n}), scalars_at<T>(t));
    });
  }

 private:
  // The scalars of the update made at step count t (the t + 1-th update), rounded to T once.
  template <class T>
  detail::adam_scalars<T> scalars_at(std::uint64_t t) const {
    const double n = double(t + 1);
    const double step_size = options_.learning_rate(t) / (1 - std::pow(options_.beta1, n));
    const double inverse_sqrt_correction2 = 1 / std::sqrt(1 - std::pow(options_.beta2, n));
    return {.beta1 = static_cast<T>(options_.beta1),
            .beta2 = static_cast<T>(options_.beta2),
            .one_minus_beta1 = static_cast<T>(1 - options_.beta1),
            .one_minus_beta2 = static_cast<T>(1 - options_.beta2),
            .step_size = static_cast<T>(step_size),
            .inverse_sqrt_correction2 = static_cast<T>(inverse_sqrt_correction2),
            .epsilon = static_cast<T>(options_.epsilon)};
  }

  options options_;
};

}  // namespace symflow
