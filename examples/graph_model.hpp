#pragma once
// The model of the example pair, defined as a type: a two-layer classifier with a softmax
// cross-entropy loss. graph_save.cpp saves it as a graph value; graph_load.cpp runs and
// differentiates that graph without this header; tests/graph_interpreter_test.cpp compares the two.
#include <cstdint>
#include <random>
#include <symflow/symflow.hpp>

namespace graph_example {

inline constexpr std::size_t features = 16, hidden = 32, classes = 4;

struct model {
  symflow::placeholder<"x", float, symflow::shape<symflow::dyn, features>> x;
  symflow::placeholder<"labels", std::int32_t, symflow::shape<symflow::dyn>> labels;
  symflow::variable<"W1", float, symflow::shape<features, hidden>> W1;
  symflow::variable<"b1", float, symflow::shape<hidden>> b1;
  symflow::variable<"W2", float, symflow::shape<hidden, classes>> W2;
  symflow::variable<"b2", float, symflow::shape<classes>> b2;

  auto logits() const {
    using namespace symflow;
    auto h = scope("dense1", [&] { return relu(matmul(x, W1) + b1); });
    return scope("dense2", [&] { return matmul(h, W2) + b2; });
  }
  auto loss() const {
    using namespace symflow;
    const auto z = logits();
    return scope("loss", [&] { return mean(sum(one_hot<classes>(labels) * -log_softmax(z), axes<1>)); });
  }
};

// Seeded parameters: weights scaled for unit-variance activations, small nonzero biases.
inline symflow::params initial_parameters(unsigned seed) {
  using namespace symflow;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  auto fill = [&](auto& t, float scale) {
    for (auto& v : t) v = scale * normal(rng);
  };
  tensor<float, shape<features, hidden>> w1;
  tensor<float, shape<hidden>> b1;
  tensor<float, shape<hidden, classes>> w2;
  tensor<float, shape<classes>> b2;
  fill(w1, 0.35f);
  fill(b1, 0.05f);
  fill(w2, 0.25f);
  fill(b2, 0.05f);
  params p;
  p.set("W1", w1);
  p.set("b1", b1);
  p.set("W2", w2);
  p.set("b2", b2);
  return p;
}

struct batch {
  symflow::tensor<float, symflow::shape<symflow::dyn, features>> x;
  symflow::tensor<std::int32_t, symflow::shape<symflow::dyn>> labels;
};

inline batch random_batch(unsigned seed, std::size_t size) {
  using namespace symflow;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  batch b{tensor<float, shape<dyn, features>>(extents_t<2>{size, features}, uninitialized),
          tensor<std::int32_t, shape<dyn>>(extents_t<1>{size}, uninitialized)};
  for (auto& v : b.x) v = normal(rng);
  for (auto& v : b.labels) v = std::int32_t(rng() % classes);
  return b;
}

}  // namespace graph_example
