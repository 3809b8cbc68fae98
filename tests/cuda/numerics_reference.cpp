// CPU references for numerics_test.cu (compiled by the C++ compiler: the CPU evaluator with feeds does
// not compile under nvcc, docs/cuda.md). Including the localiser here installs it for the whole
// test binary, so the GPU tests' numerics_error names the node too.
#include <symflow/debug/localise.hpp>
#include <symflow/eval/cpu/eval.hpp>

#include "numerics_cases.hpp"

namespace symflow_cuda_test::numerics {
namespace {

template <class T, class S>
std::vector<float> values_of(const tensor<T, S>& t) {
  return std::vector<float>(t.data(), t.data() + t.size());
}

template <class F>
cpu_outcome run_checked(F&& f) {
  cpu_outcome o;
  check_numerics_scope checked;
  try {
    f(o);
  } catch (const numerics_error& e) {
    o.threw = true;
    o.what = e.what();
    o.op = e.op();
    o.node = e.node();
    o.location = e.location();
  }
  return o;
}

}  // namespace

std::string cpu_log_location() { return log_location(model{}); }

cpu_outcome cpu_elementwise(const tensor<float, shape<dyn>>& a, const tensor<float, shape<dyn>>& b) {
  const model m;
  return run_checked([&](cpu_outcome& o) { o.outputs.push_back(values_of(eval(m.elementwise(), m.a = a, m.b = b))); });
}

cpu_outcome cpu_rows(const tensor<float, shape<dyn, 16>>& x, const tensor<float, shape<16>>& w) {
  const model m;
  return run_checked([&](cpu_outcome& o) { o.outputs.push_back(values_of(eval(m.rows(), m.x = x, m.w = w))); });
}

cpu_outcome cpu_dense(const tensor<float, shape<dyn, 16>>& x, const tensor<float, shape<16, 8>>& W) {
  const model m;
  params store;
  store.set("W", W);
  return run_checked([&](cpu_outcome& o) { o.outputs.push_back(values_of(eval(m.dense(), m.x = x, store))); });
}

cpu_outcome cpu_loss_and_scaled(const tensor<float, shape<dyn, 16>>& x, const tensor<float, shape<16>>& w) {
  const model m;
  return run_checked([&](cpu_outcome& o) {
    auto [l, s] = eval(m.loss(), m.scaled(), m.x = x, m.w = w);
    o.outputs.push_back(values_of(l));
    o.outputs.push_back(values_of(s));
  });
}

}  // namespace symflow_cuda_test::numerics
