#pragma once
// A training step in one call: the loss and the gradient of every parameter in one evaluation, the
// gradients clipped to a global norm if asked, then the optimiser's fused update of each parameter.
//
//   nn::trainer train(mean(softmax_cross_entropy(logits, y)), nn::parameters(hidden, output),
//                     adam({.learning_rate = cosine_decay(1e-3, total_steps)}));
//   double loss = train.step(x = images, y = labels);
//   auto test_logits = eval(logits, x = test_images, train.model());
//
// The loss is an expression, or a function of a per-step seed that returns one (a model with dropout
// draws a new mask every step: [&](std::uint64_t seed) { return loss_with(dropout(h, 0.5, seed)); }).
// Either may come with state updates, nn::with_updates(loss, bn.updates(h)) (nn/state_updates.hpp):
// running values computed in the step's pass and stored after it.
// The step seed is derived from the trainer's seed and the optimiser's step count, so a run resumed
// from a checkpoint draws the masks an uninterrupted one would.
//
// The model (parameter values) and the optimiser's state are two params stores: save them with
// save_checkpoint (train/checkpoint.hpp) and give them back with restore().
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../core/plain_tuple.hpp"
#include "../core/tensor.hpp"
#include "../data/shuffle.hpp"
#include "../eval/cpu/accumulate.hpp"
#include "../eval/cpu/eval.hpp"
#include "../symbolic/gradient.hpp"
#include "../train/optimizers.hpp"
#include "parameters.hpp"
#include "state_updates.hpp"

namespace symflow::nn {

struct trainer_options {
  std::uint64_t seed = 42;        // the parameters' first values and the per-step seeds
  double clip_global_norm = 0;    // > 0: gradients scaled down together when their joint L2 norm exceeds it
  // A weight whose gradient is a matrix product is updated inside that product and its gradient is
  // never stored (written once and read once less per step): with sgd, -lr times the product is
  // added in its GEMM; with adam or momentum, the product is computed a block of rows at a time and
  // the update runs over each block while it is in cache. gradients() and last_gradient_norm() then
  // cover no such step; keep_gradients = true stores every gradient and updates afterwards.
  bool keep_gradients = false;
};

namespace detail {
template <class P>
auto variables_of_set(const P& p) {
  if constexpr (requires { p.variables(); }) return p.variables();
  else return p;  // a tuple of variables, as parameters_of(loss) returns
}
template <class V, class Tuple>
inline constexpr bool in_tuple_v = false;
template <class V, class... T>
inline constexpr bool in_tuple_v<V, std::tuple<T...>> = (std::is_same_v<V, T> || ...);
template <class Variables>
struct gradient_tensors;
template <class... V>
struct gradient_tensors<std::tuple<V...>> {
  using type = std::tuple<tensor<typename V::value_type, typename V::shape_type>...>;
};
}  // namespace detail

template <class Loss, class Parameters, class Optimizer>
class trainer {
  using variables_type = decltype(detail::variables_of_set(std::declval<const Parameters&>()));
  using gradients_type = typename detail::gradient_tensors<variables_type>::type;

 public:
  // Draws the parameters' first values from their initializers.
  trainer(Loss loss, Parameters parameters, Optimizer optimizer, trainer_options options = {})
      : loss_(std::move(loss)), variables_(detail::variables_of_set(parameters)), optimizer_(std::move(optimizer)),
        options_(options) {
    static_assert(requires(params& store) { parameters.initialize(store, std::uint64_t{}); },
                  "nn::trainer: these parameters have no initializers (a tuple from parameters_of?): pass their "
                  "values, trainer(loss, parameters, optimizer, model_params)");
    check_options();
    parameters.initialize(model_, options_.seed);
    start_state();
  }
  // Starts from given parameter values (a checkpoint's, or values set by hand).
  trainer(Loss loss, Parameters parameters, Optimizer optimizer, params model, trainer_options options = {})
      : loss_(std::move(loss)), variables_(detail::variables_of_set(parameters)), optimizer_(std::move(optimizer)),
        options_(options), model_(std::move(model)) {
    check_options();
    start_state();
  }

  // One step on the batch the feeds hold; returns the loss before the update.
  template <class... Feeds>
  double step(const Feeds&... feeds) {
    return step_into(std::tuple<>{}, feeds...);
  }
  // As step, and evaluates more expressions of the same batch in the same pass into outputs (the
  // batch's logits, for a training accuracy): step_into(std::tie(batch_logits), logits, feeds...).
  template <class... Out, class... Args>
  double step_into(std::tuple<Out&...> outputs, const Args&... expressions_then_feeds) {
    constexpr std::size_t k = sizeof...(Out);
    static_assert(sizeof...(Args) >= k, "nn::trainer::step_into: give one expression per output tensor, then the feeds");
    const auto objective = loss_at(step_count());
    const auto& loss = loss_of_objective(objective);
    const auto updates = updates_of_objective(objective);
    auto new_values = std::apply([](const auto&... u) { return std::tuple{updated_value_tensor(u)...}; }, updates);
    tensor<value_type_of<std::remove_cvref_t<decltype(loss)>>, shape<>> value;
    const auto args = tie_plain(expressions_then_feeds...);
    // The loss and all gradients from one value_and_grad call: one reverse sweep, so a node with a
    // costly adjoint (a scan's backpropagation through time) runs its backward pass once, not once
    // per variable; and where the gradients come from a runtime program, the loss is that program's
    // output, so the model is neither run forward twice nor compiled as a typed forward pass.
    const auto& loss_and_gradients = loss_and_gradients_at(loss);
    if constexpr (folded_indices().size() > 0) {
      if (fold_updates_now()) {
        step_folded(outputs, args, updates, new_values, value, loss_and_gradients, std::make_index_sequence<k>{},
                    std::make_index_sequence<sizeof...(Args) - k>{},
                    std::make_index_sequence<std::tuple_size_v<decltype(updates)>>{}, folded_indices(), kept_indices());
        return double(value[0]);
      }
    }
    gradients_kept_ = true;
    [&]<std::size_t... E, std::size_t... F, std::size_t... U>(std::index_sequence<E...>, std::index_sequence<F...>,
                                                                std::index_sequence<U...>) {
      std::apply(
          [&](auto&... g) {
            std::apply(
                [&](const auto& value_expression, const auto&... dv) {
                  eval_into(std::tie(value, std::get<E>(outputs)..., g..., std::get<U>(new_values)...), value_expression,
                            symflow::get<E>(args)..., dv..., std::get<U>(updates).value...,
                            symflow::get<k + F>(args)..., model_);
                },
                loss_and_gradients);
          },
          gradients_);
    }(std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Args) - k>{},
      std::make_index_sequence<std::tuple_size_v<decltype(updates)>>{});
    // The norm is a pass over every gradient: taken here only to clip, otherwise when asked for.
    gradient_norm_.reset();
    if (options_.clip_global_norm > 0) {
      gradient_norm_ = global_norm();
      if (*gradient_norm_ > options_.clip_global_norm) scale_gradients(options_.clip_global_norm / *gradient_norm_);
    }
    optimizer_.step(model_, state_, variables_, gradients_);
    std::apply([&](const auto&... u) { std::apply([&](const auto&... t) { (store_update(u, t), ...); }, new_values); },
               updates);
    return double(value[0]);
  }

  // The loss as the next step will compute it (with that step's seed).
  auto loss() const {
    const auto objective = loss_at(step_count());
    return loss_of_objective(objective);  // a copy: the return type is deduced without the reference
  }
  const variables_type& variables() const { return variables_; }
  const params& model() const { return model_; }
  params& model() { return model_; }
  const params& state() const { return state_; }
  std::uint64_t step_count() const { return optimizer_step(state_); }
  double learning_rate() const { return optimizer_.learning_rate(state_); }
  // The joint L2 norm of the last step's gradients, before clipping (NaN or inf when one was).
  double last_gradient_norm() const {
    require_kept_gradients("last_gradient_norm");
    if (!gradient_norm_) gradient_norm_ = global_norm();  // the gradients are as the step left them
    return *gradient_norm_;
  }
  // The gradients of the last step, after clipping, in the order of variables().
  const gradients_type& gradients() const {
    require_kept_gradients("gradients");
    return gradients_;
  }

  // Continues from saved parameter values and optimiser state (both checked against the variables).
  void restore(params model, params state) {
    std::apply([&](const auto&... v) { (check_stored(model, v), ...); }, variables_);
    model_ = std::move(model);
    state_ = std::move(state);
    (void)optimizer_step(state_);
  }

 private:
  auto loss_at(std::uint64_t step) const {
    if constexpr (expression<Loss> || is_loss_with_updates_v<Loss>) return loss_;
    else return loss_(epoch_seed(options_.seed ^ 0xD1B54A32D192ED03ull, step));
  }
  // The loss and gradients as expressions. A fixed objective's are built once: building them (the
  // derivative rules, simplification, the operand blocks) cost more than the evaluation of a small
  // model's step (about 60 of 130 microseconds for the examples' MLP at batch 1). A loss made per
  // step (a new dropout seed) gets new ones each step.
  static auto value_and_gradients(const auto& loss, const variables_type& variables) {
    return std::apply([&](const auto&... v) { return value_and_grad(loss, v...); }, variables);
  }
  static constexpr bool fixed_objective = expression<Loss> || is_loss_with_updates_v<Loss>;
  template <class L>
  decltype(auto) loss_and_gradients_at(const L& loss) {
    if constexpr (fixed_objective) {
      if (!cached_gradients_) cached_gradients_.emplace(value_and_gradients(loss, variables_));
      return static_cast<const cached_gradients_type&>(*cached_gradients_);
    } else {
      return value_and_gradients(loss, variables_);
    }
  }
  // The step's objective: the loss, or what the loss function returns for a step's seed (the same
  // type every step), and the types of its loss and gradient expressions.
  static auto objective_type_of() {
    if constexpr (fixed_objective) return std::type_identity<Loss>{};
    else return std::type_identity<decltype(std::declval<const Loss&>()(std::uint64_t{}))>{};
  }
  using objective_type = typename decltype(objective_type_of())::type;
  using gradient_expressions_type = decltype(value_and_gradients(
      loss_of_objective(std::declval<const objective_type&>()), std::declval<const variables_type&>()));
  struct no_cache {};
  static auto cached_type_of() {
    if constexpr (fixed_objective) return std::type_identity<gradient_expressions_type>{};
    else return std::type_identity<no_cache>{};
  }
  using cached_gradients_type = typename decltype(cached_type_of())::type;

  // ---- Updates folded into the gradients' products (trainer_options::keep_gradients) ----------
  static constexpr std::size_t variable_count = std::tuple_size_v<variables_type>;
  // SGD's update is linear in the gradient: the gradient's product adds gradient_scale times itself
  // into the weight. Adam's and momentum's are not: the product is computed a block of rows at a time
  // and the optimiser's block_update runs over each block while it is in cache.
  static constexpr bool linear_optimizer = requires(const Optimizer& o, const params& s) { o.gradient_scale(s); };
  static constexpr bool block_optimizer = requires(const Optimizer& o, params& p) {
    o.block_update(p, p, std::declval<const std::tuple_element_t<0, variables_type>&>());
  };
  // Which variables' gradients are products that add into memory or compute blocks of rows (a
  // dense layer's weight).
  static constexpr std::array<bool, variable_count> folded_flags = [] {
    std::array<bool, variable_count> flags{};
    if constexpr (linear_optimizer || block_optimizer) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        using G = gradient_expressions_type;
        ((flags[I] = linear_optimizer ? cpu::accumulates_in_place_v<std::remove_cvref_t<std::tuple_element_t<I + 1, G>>>
                                      : cpu::computes_row_blocks_v<std::remove_cvref_t<std::tuple_element_t<I + 1, G>>>),
         ...);
      }(std::make_index_sequence<variable_count>{});
    }
    return flags;
  }();
  template <bool Folded>
  static constexpr auto indices_where() {
    constexpr std::size_t count = [] {
      std::size_t c = 0;
      for (bool f : folded_flags) c += f == Folded;
      return c;
    }();
    constexpr auto picked = [] {
      std::array<std::size_t, count> a{};
      std::size_t c = 0;
      for (std::size_t i = 0; i < variable_count; ++i)
        if (folded_flags[i] == Folded) a[c++] = i;
      return a;
    }();
    return [&]<std::size_t... J>(std::index_sequence<J...>) { return std::index_sequence<picked[J]...>{}; }(
        std::make_index_sequence<count>{});
  }
  static constexpr auto folded_indices() { return indices_where<true>(); }
  static constexpr auto kept_indices() { return indices_where<false>(); }
  bool fold_updates_now() const {
    return !options_.keep_gradients && options_.clip_global_norm == 0 && !check_numerics_enabled();
  }
  void require_kept_gradients(const char* what) const {
    if (!gradients_kept_)
      throw value_error(std::string("nn::trainer::") + what +
                        ": the last step added the weight gradients into the weights without storing them; construct "
                        "the trainer with trainer_options{.keep_gradients = true} to read gradients");
  }
  template <std::size_t I>
  auto stored_view() {
    using V = std::tuple_element_t<I, variables_type>;
    return model_.template view<typename V::value_type, typename V::shape_type>(std::string(V::name.view()));
  }
  // What the step's evaluation does with folded variable I's gradient: adds gradient_scale times it
  // into the weight (SGD), or hands each block of it to the optimiser's block_update.
  template <std::size_t I, class LG>
  auto folded_output(const LG& lg) {
    using E = const std::tuple_element_t<I + 1, LG>&;
    if constexpr (linear_optimizer) {
      using T = typename std::tuple_element_t<I, variables_type>::value_type;
      return accumulated_output<decltype(stored_view<I>()), E>{
          stored_view<I>(), static_cast<T>(optimizer_.gradient_scale(state_)), std::get<I + 1>(lg)};
    } else {
      auto update = optimizer_.block_update(model_, state_, std::get<I>(variables_));
      return updated_output<decltype(stored_view<I>()), E, decltype(update)>{stored_view<I>(), std::get<I + 1>(lg),
                                                                             std::move(update)};
    }
  }
  // One step whose folded variables are updated inside their gradients' products, and whose other
  // variables get the optimiser's step.
  template <class Outputs, class Args, class Updates, class NewValues, class Value, class LG, std::size_t... E,
            std::size_t... F, std::size_t... U, std::size_t... Folded, std::size_t... Kept>
  void step_folded(Outputs& outputs, const Args& args, const Updates& updates, NewValues& new_values, Value& value,
                   const LG& lg, std::index_sequence<E...>, std::index_sequence<F...>, std::index_sequence<U...>,
                   std::index_sequence<Folded...>, std::index_sequence<Kept...>) {
    constexpr std::size_t k = sizeof...(E);
    const auto accumulations = std::tuple{folded_output<Folded>(lg)...};
    eval_accumulating(std::tie(value, std::get<E>(outputs)..., std::get<Kept>(gradients_)..., std::get<U>(new_values)...),
                      std::tuple<const std::remove_cvref_t<decltype(std::get<0>(lg))>&,
                                 const std::remove_cvref_t<decltype(symflow::get<E>(args))>&...,
                                 const std::tuple_element_t<Kept + 1, LG>&...,
                                 const std::remove_cvref_t<decltype(std::get<U>(updates).value)>&...>(
                          std::get<0>(lg), symflow::get<E>(args)..., std::get<Kept + 1>(lg)..., std::get<U>(updates).value...),
                      accumulations, symflow::get<k + F>(args)..., model_);
    gradients_kept_ = false;
    gradient_norm_.reset();
    optimizer_.step(model_, state_, std::tie(std::get<Kept>(variables_)...), std::tie(std::get<Kept>(gradients_)...));
    std::apply([&](const auto&... u) { std::apply([&](const auto&... t) { (store_update(u, t), ...); }, new_values); },
               updates);
  }

  void check_options() const {
    if (!(options_.clip_global_norm >= 0) || !std::isfinite(options_.clip_global_norm))
      throw value_error("nn::trainer: clip_global_norm must be finite and >= 0 (0: no clipping), got " +
                        std::to_string(options_.clip_global_norm));
  }
  template <class V, class E>
  static auto updated_value_tensor(const state_update<V, E>&) {
    static_assert(!detail::in_tuple_v<V, variables_type>,
                  "nn::trainer: a state update's target is a trained variable too (the optimiser's update "
                  "would be overwritten): update running values (nn::running) only");
    return tensor<typename V::value_type, typename V::shape_type>();
  }
  // A running value's new value, written over the stored one (checked like a variable).
  template <class V, class E>
  void store_update(const state_update<V, E>&, const tensor<typename V::value_type, typename V::shape_type>& t) {
    auto stored = model_.template view<typename V::value_type, typename V::shape_type>(std::string(V::name.view()));
    std::copy(t.data(), t.data() + t.size(), stored.data());
  }
  // Throws value_error/shape_error naming the variable when store lacks it or holds another shape.
  template <class V>
  static void check_stored(const params& store, const V&) {
    (void)store.template view<typename V::value_type, typename V::shape_type>(std::string(V::name.view()));
  }
  void start_state() {
    std::apply([&](const auto&... v) { (check_stored(model_, v), ...); }, variables_);
    state_ = std::apply([&](const auto&... v) { return optimizer_.initial_state(model_, v...); }, variables_);
  }
  double global_norm() const {
    double sum = 0;
    std::apply(
        [&](const auto&... g) {
          ((sum += [&] {
             double s = 0;
             for (std::size_t i = 0, n = g.size(); i < n; ++i) s += double(g.data()[i]) * double(g.data()[i]);
             return s;
           }()),
           ...);
        },
        gradients_);
    return std::sqrt(sum);
  }
  void scale_gradients(double factor) {
    std::apply(
        [&](auto&... g) {
          (
              [&] {
                using T = typename std::remove_cvref_t<decltype(g)>::value_type;
                for (std::size_t i = 0, n = g.size(); i < n; ++i) g.data()[i] = static_cast<T>(g.data()[i] * factor);
              }(),
              ...);
        },
        gradients_);
  }

  Loss loss_;
  variables_type variables_;
  Optimizer optimizer_;
  trainer_options options_;
  params model_, state_;
  gradients_type gradients_;
  mutable std::optional<double> gradient_norm_ = 0.0;
  bool gradients_kept_ = true;
  std::optional<cached_gradients_type> cached_gradients_;
};

}  // namespace symflow::nn
