#pragma once
// check_numerics on the GPU (numerics_test.cu) against the CPU backend (numerics_reference.cpp, the
// C++ compiler, which also installs the localiser by including <symflow/debug/localise.hpp>). The
// expressions are built here, by both translation units, so their nodes carry the same source
// locations and the two error messages can be compared word for word.
#include <string>
#include <tuple>
#include <vector>

#include <symflow/core/tensor.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/scope.hpp>
#include <symflow/ops/all.hpp>

namespace symflow_cuda_test::numerics {
using namespace symflow;

inline constexpr std::size_t features = 16, units = 8;

// Leaves are spelled out (nvcc 13 and alias templates with string parameters, docs/cuda.md).
struct model {
  placeholder<"a", float, shape<dyn>> a = placeholder<"a", float, shape<dyn>>();
  placeholder<"b", float, shape<dyn>> b = placeholder<"b", float, shape<dyn>>();
  placeholder<"x", float, shape<dyn, 16>> x = placeholder<"x", float, shape<dyn, 16>>();
  variable<"w", float, shape<16>> w = variable<"w", float, shape<16>>();
  variable<"W", float, shape<16, 8>> W = variable<"W", float, shape<16, 8>>();

  // A dense elementwise map (one kernel): NaN at 'num/log' when an element of a is negative.
  auto elementwise() const { return scope("num", [&] { return sqrt(abs(b)) + log(a) * 2.0f; }); }
  // A reduction over rows with a broadcast operand (reduction kernel writing the output).
  auto rows() const { return scope("rows", [&] { return sum(log(x) * w, axes<1>); }); }
  // A matmul whose operand is a fused log (materialised first): the output is written by cuBLAS.
  auto dense() const { return scope("dense", [&] { return matmul(log(x), W); }); }
  // Two outputs over one frame (one one-pass kernel): a full reduction and an elementwise map.
  auto loss() const { return scope("loss", [&] { return sum(log(x) * w); }); }
  auto scaled() const { return scope("scaled", [&] { return exp(x) * w; }); }
};

// What the CPU backend did with check_numerics on.
struct cpu_outcome {
  bool threw = false;
  std::string what, op, node, location;
  std::vector<std::vector<float>> outputs;  // when it did not throw
};

// The source location of elementwise()'s log node as the C++ compiler records it (the GPU test
// compares it with nvcc's: the two error messages can only agree if these do).
std::string cpu_log_location();
inline std::string log_location(const model& m) {
  const auto e = m.elementwise();  // add(sqrt(abs(b)), mul(log(a), 2))
  return std::get<0>(std::get<1>(e.args()).args()).info.location_string();
}

cpu_outcome cpu_elementwise(const tensor<float, shape<dyn>>& a, const tensor<float, shape<dyn>>& b);
cpu_outcome cpu_rows(const tensor<float, shape<dyn, 16>>& x, const tensor<float, shape<16>>& w);
cpu_outcome cpu_dense(const tensor<float, shape<dyn, 16>>& x, const tensor<float, shape<16, 8>>& W);
cpu_outcome cpu_loss_and_scaled(const tensor<float, shape<dyn, 16>>& x, const tensor<float, shape<16>>& w);

}  // namespace symflow_cuda_test::numerics
