#pragma once
// What the optimisers need to update parameters named at run time — a runtime graph model's (an
// imported ONNX model, a loaded graph), whose variables are not C++ types: a gradient as a dtype,
// extents and contiguous elements, and the checks a typed step makes at compile time (the
// gradient's dtype and extents are the parameter's; the optimiser state holds an entry of the same
// shape) made here at run time, naming the optimiser and the parameter.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../core/tensor.hpp"
#include "optimizer_step.hpp"

namespace symflow {

// The gradient of the parameter `name`: `extents` row-major elements of dtype `type` at `data`.
struct named_gradient {
  std::string name;
  dtype type{};
  std::vector<std::size_t> extents;
  const void* data = nullptr;
};

namespace detail {

// An optimiser's initial state for parameters named at run time: a zero entry per parameter under
// each prefix, with the parameter's dtype and extents, and step 0 (as initial_state_with).
inline params initial_named_state(const params& model, const std::vector<std::string>& names,
                                  std::initializer_list<const char*> prefixes) {
  params state;
  for (const char* prefix : prefixes)
    for (const std::string& name : names) {
      const params::entry& value = model.at(name);
      params::entry zero{value.type, value.extents, aligned_buffer<unsigned char>(value.bytes.size())};
      if (zero.bytes.size()) std::memset(zero.bytes.data(), 0, zero.bytes.size());
      state.set_entry(prefix + name, std::move(zero));
    }
  set_optimizer_step(state, 0);
  return state;
}

// The entry `name` of `store`, checked to have the gradient's dtype and extents.
inline params::entry& checked_entry(params& store, const std::string& name, const named_gradient& g, const char* optimizer) {
  params::entry& e = store.at(name);
  const std::string who = std::string(optimizer) + ": the gradient given for variable '" + g.name + "'";
  if (e.type != g.type)
    throw value_error(who + " holds " + std::string(dtype_name(g.type)) + " values, '" + name + "' " +
                      std::string(dtype_name(e.type)));
  if (e.extents != g.extents)
    throw shape_error(who + " has extents " + format_extents(g.extents) + ", '" + name + "' " + format_extents(e.extents));
  return e;
}

// One step over parameters named at run time: every gradient is checked against its parameter and
// the optimiser's state entries (prefix + name) before anything is written, then
// update(T{}, parameter, gradient, element count, state entries) runs for each, T being float or
// double (the optimisers update floating-point parameters only), and the step count advances.
template <class Update>
void step_named(params& model, params& state, const std::vector<named_gradient>& gradients, const char* optimizer,
                std::initializer_list<const char*> state_prefixes, Update&& update) {
  struct bound {
    params::entry* parameter;
    std::vector<params::entry*> state;
    std::size_t count;
  };
  std::vector<bound> work;
  for (const named_gradient& g : gradients) {
    if (g.type != dtype_v<float> && g.type != dtype_v<double>)
      throw value_error(std::string(optimizer) + ": variable '" + g.name + "' holds " + std::string(dtype_name(g.type)) +
                        " values; optimisers update f32 and f64 variables");
    bound b{&checked_entry(model, g.name, g, optimizer), {}, 1};
    for (const char* prefix : state_prefixes) b.state.push_back(&checked_entry(state, prefix + g.name, g, optimizer));
    for (std::size_t e : g.extents) b.count *= e;
    if (b.count != 0 && g.data == nullptr)
      throw value_error(std::string(optimizer) + ": the gradient given for variable '" + g.name + "' has no elements");
    work.push_back(std::move(b));
  }
  const std::uint64_t t = optimizer_step(state);
  for (std::size_t k = 0; k < work.size(); ++k) {
    auto run = [&](auto tag) {
      using T = decltype(tag);
      std::vector<T*> entries;
      for (params::entry* e : work[k].state) entries.push_back(reinterpret_cast<T*>(e->bytes.data()));
      update(tag, reinterpret_cast<T*>(work[k].parameter->bytes.data()), static_cast<const T*>(gradients[k].data),
             work[k].count, entries, t);
    };
    if (gradients[k].type == dtype_v<float>) run(float{});
    else run(double{});
  }
  set_optimizer_step(state, t + 1);
}

}  // namespace detail
}  // namespace symflow
