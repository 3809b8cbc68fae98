// The other half of the example pair: loads a graph file whose first output is a scalar loss (as
// graph_save.cpp writes it), runs it on random feeds made from the inputs' types, differentiates it
// with respect to W1 and W2, and checks each gradient against a finite difference of the loss. It
// knows the model only through the file: no model type is included here.
//   graph_load model.sfg
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#if __has_include(<symflow/runtime/grad.hpp>)
#include <symflow/runtime/grad.hpp>
#define GRAPH_LOAD_HAS_GRAD 1
#endif

using namespace symflow;

namespace {

constexpr std::size_t batch = 8;

// Integer inputs are class labels: their range is the depth of the one_hot node that reads them.
std::int64_t label_range(const graph& g, std::uint32_t input_id) {
  for (const auto& n : g.nodes)
    if (n.op == "one_hot" && n.inputs.at(0) == input_id) return std::get<std::int64_t>(*n.attribute("depth"));
  return 2;
}

runtime_feeds random_feeds(const graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  runtime_feeds feeds;
  for (std::uint32_t id = 0; id < g.inputs.size(); ++id) {
    const graph_leaf& in = g.inputs[id];
    runtime_extents extents;
    for (auto e : in.type.shape) extents.push_back(e < 0 ? batch : std::size_t(e));
    runtime_tensor t(in.type.type, extents);
    const std::int64_t labels = label_range(g, id);
    visit_dtype(t.type(), [&](auto zero) {
      using T = decltype(zero);
      T* v = t.data<T>();
      for (std::size_t k = 0; k < t.size(); ++k) {
        if constexpr (std::is_floating_point_v<T>) v[k] = T(normal(rng));
        else if constexpr (std::is_same_v<T, bool>) v[k] = rng() % 2;
        else v[k] = T(std::int64_t(rng() % std::uint64_t(labels)));
      }
    });
    feeds.emplace(in.name, std::move(t));
  }
  return feeds;
}

double norm(const runtime_tensor& t) {
  double s = 0;
  for (std::size_t k = 0; k < t.size(); ++k) s += double(t.data<float>()[k]) * t.data<float>()[k];
  return std::sqrt(s);
}

// The graph's parameters as a store (from their embedded values), so that one can be changed.
params embedded_parameters(const graph& g) {
  params store;
  for (const auto& p : g.parameters) {
    if (!p.value) throw value_error("parameter '" + p.name + "' has no embedded value");
    params::entry e{p.value->type, {p.value->extents.begin(), p.value->extents.end()},
                    aligned_buffer<unsigned char>(p.value->bytes.size())};
    if (!p.value->bytes.empty()) std::memcpy(e.bytes.data(), p.value->bytes.data(), p.value->bytes.size());
    store.set_entry(p.name, std::move(e));
  }
  return store;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: graph_load MODEL.sfg\n");
    return 1;
  }
  try {
    const graph g = load_graph_binary_file(argv[1]);
    const runtime_feeds feeds = random_feeds(g, 42);
    const interpreter forward(g);
    const auto outputs = forward.run(feeds);
    const float loss = outputs.at(0).data<float>()[0];
    std::printf("loaded %s: %zu nodes; loss on a random batch of %zu: %.6f\n", argv[1], g.nodes.size(), batch, loss);
#if GRAPH_LOAD_HAS_GRAD
    const std::vector<std::string> wrt{"W1", "W2"};
    const graph with_gradients = differentiate(g, wrt);
    const interpreter backward(with_gradients);
    const auto results = backward.run(feeds);
    const std::size_t first_gradient = g.outputs.size();
    std::printf("loss again %.6f; |dL/dW1| = %.6f, |dL/dW2| = %.6f\n", results[0].data<float>()[0],
                norm(results[first_gradient]), norm(results[first_gradient + 1]));

    // Each gradient against the loss's change along a random direction: (L(W + hD) - L(W - hD)) / 2h
    // should equal <dL/dW, D>.
    params store = embedded_parameters(g);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    bool ok = std::isfinite(loss);
    for (std::size_t k = 0; k < wrt.size(); ++k) {
      const runtime_tensor& gradient = results[first_gradient + k];
      auto& entry = store.at(wrt[k]);
      float* w = reinterpret_cast<float*>(entry.bytes.data());
      const std::vector<float> original(w, w + gradient.size());
      // A unit direction and a small step, so that no ReLU changes side between the two losses.
      std::vector<float> direction(gradient.size());
      double length = 0, predicted = 0;
      for (auto& v : direction) {
        v = normal(rng);
        length += double(v) * v;
      }
      for (std::size_t q = 0; q < direction.size(); ++q) {
        direction[q] = float(direction[q] / std::sqrt(length));
        predicted += double(direction[q]) * gradient.data<float>()[q];
      }
      const float h = 1e-3f;
      auto loss_at = [&](float step) {
        for (std::size_t q = 0; q < direction.size(); ++q) w[q] = original[q] + step * direction[q];
        return double(forward.run(feeds, &store)[0].data<float>()[0]);
      };
      const double measured = (loss_at(h) - loss_at(-h)) / (2 * double(h));
      loss_at(0);
      const bool close = std::abs(measured - predicted) <= 2e-2 * std::abs(predicted) + 1e-3;
      std::printf("d/dh L(%s + h D) = %.6f, <dL/d%s, D> = %.6f %s\n", wrt[k].c_str(), measured, wrt[k].c_str(),
                  predicted, close ? "(agree)" : "(DISAGREE)");
      ok = ok && close;
    }
    return ok ? 0 : 1;
#else
    std::printf("differentiate: not available in this build\n");
    return std::isfinite(loss) ? 0 : 1;
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_load: %s\n", e.what());
    return 1;
  }
}
