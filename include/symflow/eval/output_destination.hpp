#pragma once
// Where an evaluation wants one output of a multi-output kernel written. A runtime program's run
// (runtime/program_gradient.hpp) computes every gradient of a model into one buffer, and each
// gradient the caller asked for is a node copying its part out; when that node is itself a result
// of the evaluation, the run writes the gradient straight into the result tensor instead (a deep
// model's gradients are megabytes per step: one write instead of a write, a read and a write).
#include <cstddef>
#include <vector>

namespace symflow {

struct output_destination {
  const void* source = nullptr;  // the kernel computing it: its op's identity (a program)
  std::size_t index = 0;         // which of its outputs
  void* data = nullptr;          // the result tensor's elements
  bool written = false;          // the kernel wrote it there
};
using output_destinations = std::vector<output_destination>;

// The written destination of output `index` of `source`, or nullptr.
inline const output_destination* written_destination(const output_destinations& all, const void* source,
                                                     std::size_t index) {
  for (const auto& d : all)
    if (d.written && d.source == source && d.index == index) return &d;
  return nullptr;
}

}  // namespace symflow
