#pragma once
// The set of variables a training step updates, two ways:
//
//   nn::parameters(encoder, decoder)  the variables of layers and models, with their initializers;
//   nn::parameters_of(loss)           every variable a loss reads, found in its type (no initializers:
//                                     their values come from a checkpoint or from initialize()).
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../symbolic/grad.hpp"
#include "parameter.hpp"

namespace symflow::nn {

// The variables of some layers and models, and their first values. A variable listed twice (a layer
// passed twice, or shared by two models) is an error: the optimiser would update it twice per step.
template <class... Parts>
class parameter_set {
 public:
  explicit parameter_set(const Parts&... parts) : parts_(parts...) {
    std::set<std::string_view> seen;
    std::apply(
        [&](const auto&... v) {
          (
              [&] {
                if (!seen.insert(v.name.view()).second)
                  throw value_error("nn::parameters: variable '" + std::string(v.name.view()) +
                                    "' is listed twice (pass each layer once)");
              }(),
              ...);
        },
        variables());
  }

  // A std::tuple of the variables, in the order the layers were given.
  auto variables() const {
    return std::apply([](const auto&... p) { return std::tuple_cat(variables_of(p)...); }, parts_);
  }
  static constexpr std::size_t size() {
    return std::tuple_size_v<decltype(std::declval<const parameter_set&>().variables())>;
  }
  // Draws a first value for every variable into store; the same seed gives the same values.
  void initialize(params& store, std::uint64_t seed) const {
    std::apply([&](const auto&... p) { (initialize_all(p, store, seed), ...); }, parts_);
  }
  params initial_values(std::uint64_t seed) const {
    params store;
    initialize(store, seed);
    return store;
  }

 private:
  std::tuple<Parts...> parts_;
};

template <class... Parts>
parameter_set<Parts...> parameters(const Parts&... parts) {
  return parameter_set<Parts...>(parts...);
}


// The variables an expression reads, each once, in the order a post-order walk first meets them.
// Variables are identified by their name, dtype and shape (their type), so the result is a tuple of
// fresh variable objects.
template <expression E>
auto parameters_of(const E&) {
  using found = symflow::detail::nodes_where_t<symflow::detail::is_variable_node, E>;
  return typename symflow::detail::tuple_of_list<found>::type{};
}

}  // namespace symflow::nn
