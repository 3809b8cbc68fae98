#pragma once
// What examples/char_lm's two models share: the flags, the corpus and its held-out split, random
// training windows, the training loop with its progress bar and held-out evaluations, and sampling.
// Each model is its own translation unit (char_lm_gru.cpp, char_lm_transformer.cpp) and gives the
// loop three functions: one training step on windows starting at given offsets, the loss on
// held-out windows, and the next-character probabilities for a context.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <symflow/core/params.hpp>
#include <symflow/ir/graph.hpp>

namespace char_lm {

// Every window is this long; a training example is a window and the character after each of its
// positions.
inline constexpr std::size_t window = 64;
inline constexpr std::size_t batch = 32;

struct flags {
  std::string model = "gru";
  std::size_t steps = 2000, eval_every = 250, sample = 400, limit_bytes = std::size_t(-1);
  std::uint64_t seed = 42;
  std::string data, export_dir;
};

struct corpus {
  std::vector<std::int32_t> train, held_out;  // ascii_vocabulary ids; held out: the last 5%
};

// What a model gives the loop.
struct model_functions {
  // One training step on the windows starting at `starts` (batch of them): the mean loss in nats.
  std::function<double(const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts)> step;
  // The mean loss in nats on the given windows (batch of them), without training.
  std::function<double(const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts)> loss;
  // Samples `count` characters after a newline.
  std::function<std::string(std::size_t count, std::uint64_t seed)> sample;
  // The logits' graph with the trained parameters, feeds from the first windows of `text` and the
  // logits for them (--export writes them).
  struct exported {
    symflow::graph logits;
    symflow::params trained;
    std::vector<std::pair<std::string, symflow::graph_tensor>> feeds;
    symflow::graph_tensor expected;
  };
  std::function<exported(const std::vector<std::int32_t>& text)> export_to;
};

model_functions gru_model(const flags& f);
model_functions transformer_model(const flags& f);

}  // namespace char_lm
