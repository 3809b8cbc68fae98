#pragma once
// A layer's trainable tensor: a variable named "<layer>/<leaf>" together with the initializer that
// draws its first value; a layer's running value (stored and checkpointed, not trained); and the rules by which layers and models made of layers list their variables
// and draw their first values.
//
// Anything with layers() -> a tuple (std::tie) of parameters, layers or models is a layer or a model:
// nn::dense lists its weights and bias that way, a user's model struct its layers. A parameter is the
// leaf: variables() -> a tuple of its one variable, initialize(params&, seed) stores its first value. Each variable draws
// from an engine seeded by the run's seed and the variable's own name, so adding, removing or
// reordering layers leaves the other layers' first values as they were.
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/params.hpp"
#include "../core/source_site.hpp"
#include "../data/shuffle.hpp"
#include "../expr/fixed_string.hpp"
#include "../expr/leaves.hpp"
#include "../train/initializers.hpp"

namespace symflow::nn {

// The seed of one variable: FNV-1a of its name, mixed into the run's seed as epoch_seed mixes an
// epoch (data/shuffle.hpp; the hash made odd, so that the mix sees seed + C * (hash | 1)).
inline std::uint64_t seed_for(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return epoch_seed(seed, h & ~std::uint64_t(1));
}

template <fixed_string Layer, fixed_string Leaf, class T, shape_spec S>
struct parameter {
  static_assert(S::is_static, "symflow: a layer's parameter needs a shape without dyn extents");
  using variable_type = variable<scoped_name<Layer, Leaf>, T, S>;
  variable_type var;
  any_initializer init;

  parameter(any_initializer initializer, source_site where) : var(where), init(std::move(initializer)) {}
  std::tuple<variable_type> variables() const { return {var}; }
  void initialize(params& store, std::uint64_t seed) const {
    symflow::initialize(store, var, init, seed_for(seed, variable_type::name.view()));
  }
};

// A layer's non-trainable tensor (batch normalisation's running averages): stored with the
// parameters, drawn first from its initializer and saved in checkpoints, but not a variable the
// optimiser updates. Its new value after a step is a state update (nn/state_updates.hpp).
template <fixed_string Layer, fixed_string Leaf, class T, shape_spec S>
struct running : parameter<Layer, Leaf, T, S> {
  using parameter<Layer, Leaf, T, S>::parameter;
  std::tuple<> variables() const { return {}; }  // not trained
};

template <class P>
concept parameter_leaf = requires(const P& p, params& store, std::uint64_t seed) {
  p.variables();
  p.initialize(store, seed);
};
template <class M>
concept composite = !parameter_leaf<M> && requires(const M& m) { m.layers(); };

// The variables of a parameter, a layer or a model, in declaration order.
template <class L>
auto variables_of(const L& l) {
  if constexpr (parameter_leaf<L>) {
    return l.variables();
  } else {
    static_assert(composite<L>, "symflow: nn::variables_of takes a parameter, a layer or a model: an object with "
                                "layers() returning a tuple (std::tie) of its layers or parameters");
    return std::apply([](const auto&... parts) { return std::tuple_cat(variables_of(parts)...); }, l.layers());
  }
}

// Stores a first value for each variable (and running value) of a parameter, a layer or a model.
template <class L>
void initialize_all(const L& l, params& store, std::uint64_t seed) {
  if constexpr (parameter_leaf<L>) {
    l.initialize(store, seed);
  } else {
    static_assert(composite<L>, "symflow: nn::initialize_all takes a parameter, a layer or a model: an object with "
                                "layers() returning a tuple (std::tie) of its layers or parameters");
    std::apply([&](const auto&... parts) { (initialize_all(parts, store, seed), ...); }, l.layers());
  }
}

}  // namespace symflow::nn
