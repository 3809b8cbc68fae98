#pragma once
// symflow::eval on the CPU backend for a case (leaves, build, extents) on given inputs, for the
// reference files compiled by the C++ compiler (cpu_reference.cpp, epilogue_reference.cpp, ...).
#include <symflow/eval/cpu/eval.hpp>

#include "harness.hpp"

namespace symflow_cuda_test {

template <class Case>
host_array cpu_reference(const case_inputs& inputs) {
  return std::apply(
      [&](const auto&... leaf) {
        const auto expr = Case::build(leaf...);
        std::size_t i = 0;
        auto bind = [&](const auto& l) {
          using L = std::remove_cvref_t<decltype(l)>;
          using T = typename L::value_type;
          const host_array& in = inputs.at(i++);
          return l = symflow::tensor_view<const T, symflow::dyn_shape<L::rank>>(
                     in.data<T>(), in.extents_as<T, L::rank>());
        };
        const auto feeds = std::tuple{bind(leaf)...};
        return host_array::of(std::apply([&](const auto&... f) { return symflow::eval(expr, f...); }, feeds));
      },
      Case::leaves());
}

}  // namespace symflow_cuda_test
