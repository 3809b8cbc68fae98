// CPU references for cnn_ops_test.cu (the C++ compiler: the CPU evaluator with feeds does not compile
// under nvcc, docs/cuda.md).
#include <random>

#include "cnn_cases.hpp"
#include "cpu_reference.hpp"

namespace symflow_cuda_test {

#define SYMFLOW_INSTANTIATE_CNN(name) template host_array cpu_reference<cnn_cases::name>(const case_inputs&);
SYMFLOW_CUDA_CNN_CASES(SYMFLOW_INSTANTIATE_CNN)

namespace cnn_cases {

namespace {
template <class S>
tensor<float, S> uniform(const extents_t<S::rank>& e, float limit, std::mt19937& rng) {
  tensor<float, S> t(e, uninitialized);
  std::uniform_real_distribution<float> d(-limit, limit);
  for (std::size_t k = 0; k < t.size(); ++k) t.data()[k] = d(rng);
  return t;
}
}  // namespace

tiny_cnn_inputs random_tiny_cnn_inputs(std::size_t batch, unsigned seed) {
  std::mt19937 rng(seed);
  tiny_cnn_inputs in;
  in.x = uniform<shape<dyn, 64>>({batch, 64}, 1.0f, rng);
  in.y = tensor<std::int32_t, shape<dyn>>(extents_t<1>{batch}, uninitialized);
  std::uniform_int_distribution<int> label(0, 9);
  for (std::size_t k = 0; k < batch; ++k) in.y.data()[k] = label(rng);
  in.store.set("conv1/W", uniform<shape<3, 3, 1, 4>>({3, 3, 1, 4}, 0.5f, rng));
  in.store.set("conv1/b", uniform<shape<4>>({4}, 0.1f, rng));
  in.store.set("conv2/W", uniform<shape<3, 3, 4, 8>>({3, 3, 4, 8}, 0.3f, rng));
  in.store.set("conv2/b", uniform<shape<8>>({8}, 0.1f, rng));
  in.store.set("dense/W", uniform<shape<32, 16>>({32, 16}, 0.3f, rng));
  in.store.set("dense/b", uniform<shape<16>>({16}, 0.1f, rng));
  in.store.set("logits/W", uniform<shape<16, 10>>({16, 10}, 0.4f, rng));
  in.store.set("logits/b", uniform<shape<10>>({10}, 0.1f, rng));
  return in;
}

std::vector<host_array> tiny_cnn_step_on_cpu(const tiny_cnn_inputs& in) {
  const tiny_cnn m;
  std::vector<host_array> out;
  std::apply([&](const auto&... e) { (out.push_back(host_array::of(eval(e, m.x = in.x, m.y = in.y, in.store))), ...); },
             m.step());
  return out;
}

}  // namespace cnn_cases
}  // namespace symflow_cuda_test
