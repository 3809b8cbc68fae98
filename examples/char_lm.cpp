// A character-level language model on the text of Debian's fortunes package, in two variants:
//   --model gru          characters embedded (32 wide), a GRU (128 units) run over the window by
//                        scan, and a dense layer to the next character's logits (char_lm_gru.cpp);
//   --model transformer  a 2-layer causal transformer, 128 wide with 4 heads, learned positions
//                        (char_lm_transformer.cpp).
// Both train with Adam (cosine decay, gradients clipped to norm 1) on random 64-character windows,
// 32 per step; report bits per character on held-out text (the last 5% of the corpus) against what
// a unigram model gets there; then sample text.
//
//   char_lm [--model gru|transformer] [--steps N] [--eval-every N] [--sample N] [--limit-bytes N]
//           [--seed N] [--data DIR] [--export DIR]
//
// --export DIR writes the trained model's logits there as a graph value with its parameters
// (model.json), a batch of held-out windows as its feeds (feed_<input>.npy) and the logits this
// program computes for them (expected.npy): what `symflow export`, `symflow run` and an ONNX
// runtime need to check they compute the same (examples/graph_round_trip.cmake).
//
// The last lines printed are validation_bpc=X.XXXX unigram_bpc=X.XXXX and the sample.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <symflow/data/text.hpp>

#include <symflow/train/metrics.hpp>
#include <symflow/train/progress.hpp>

#include "char_lm.hpp"
#include "command_line.hpp"
#include "export_files.hpp"

using namespace symflow;
using char_lm::batch;
using char_lm::window;

namespace {
// The command line (CLI11): nullopt after --help, which prints the help.
std::optional<char_lm::flags> parse(int argc, char** argv) {
  char_lm::flags f;
  f.data = std::string(fortunes_directory);
  CLI::App app{"A character-level language model on Debian's fortunes (docs/model_blocks.md).", argv[0]};
  app.add_option("--model", f.model, "gru or transformer")->capture_default_str();
  app.add_option("--steps", f.steps, "training steps (Adam, cosine decay)")->capture_default_str();
  app.add_option("--eval-every", f.eval_every, "steps between held-out evaluations")->capture_default_str();
  app.add_option("--sample", f.sample, "characters of text to sample at the end")->capture_default_str();
  app.add_option("--limit-bytes", f.limit_bytes, "read at most N bytes of the corpus (0: all)")->capture_default_str();
  app.add_option("--seed", f.seed, "initial weights, windows and sampling")->capture_default_str();
  app.add_option("--data", f.data, "the fortunes folder")->capture_default_str();
  app.add_option("--export", f.export_dir, "write the trained model, feeds and its logits there as a graph value")
      ->type_name("DIR");
  app.footer("Examples:\n  char_lm --model gru --steps 300\n  char_lm --model transformer --steps 2000 --export run/lm\n");
  if (!examples::parse_command_line(app, argc, argv)) {
    std::cout << app.help();
    return std::nullopt;
  }
  if (f.eval_every == 0) throw value_error("--eval-every must be at least 1");
  if (f.model != "gru" && f.model != "transformer") throw value_error("--model is gru or transformer, not " + f.model);
  return f;
}
}  // namespace

int main(int argc, char** argv) try {
  const std::optional<char_lm::flags> parsed = parse(argc, argv);
  if (!parsed) return 0;
  const char_lm::flags& f = *parsed;
  std::string text;
  try {
    text = read_fortunes(f.data, f.limit_bytes);
  } catch (const value_error& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 77;  // ctest's skip code: no corpus installed
  }
  const std::vector<std::int32_t> ids = ascii_vocabulary::encode(text);
  const std::size_t split = ids.size() - ids.size() / 20;
  const std::vector<std::int32_t> train(ids.begin(), ids.begin() + std::ptrdiff_t(split)), held_out(ids.begin() + std::ptrdiff_t(split), ids.end());
  if (train.size() < 2 * (window + 1) || held_out.size() < batch * window + 1)
    throw value_error("the corpus is too short: --limit-bytes must leave " + std::to_string(batch * window + 1) +
                      " held-out characters (5% of the text)");
  std::cerr << "char_lm (" << f.model << "): " << train.size() << " training and " << held_out.size()
            << " held-out characters\n";
  const char_lm::model_functions model = f.model == "gru" ? char_lm::gru_model(f) : char_lm::transformer_model(f);

  // Bits per character over non-overlapping windows of the held-out text (at most 64 batches).
  const auto held_out_bpc = [&] {
    double nats = 0, batches = 0;
    std::vector<std::size_t> starts;
    for (std::size_t s = 0; s + window + 1 <= held_out.size() && batches < 64; s += window) {
      starts.push_back(s);
      if (starts.size() < batch) continue;
      nats += model.loss(held_out, starts);
      batches += 1;
      starts.clear();
    }
    return nats / batches / std::log(2.0);
  };

  std::mt19937_64 engine(f.seed);
  std::uniform_int_distribution<std::size_t> pick(0, train.size() - window - 2);
  std::vector<std::size_t> starts(batch);
  for (std::size_t done = 0; done < f.steps;) {
    const std::size_t chunk = std::min(f.eval_every, f.steps - done);
    epoch_progress progress("steps " + std::to_string(done + 1) + "-" + std::to_string(done + chunk), chunk);
    running_mean bits;
    for (std::size_t i = 0; i < chunk; ++i, ++done) {
      for (auto& s : starts) s = pick(engine);
      bits.add(model.step(train, starts) / std::log(2.0));
      progress.update(i + 1, (i + 1) * batch * window, bits.mean(), 0);
    }
    progress.finish();
    std::printf("step %zu: training bpc %.4f, held-out bpc %.4f\n", done, bits.mean(), held_out_bpc());
    std::fflush(stdout);
  }
  std::printf("validation_bpc=%.4f unigram_bpc=%.4f\n", held_out_bpc(), unigram_bits_per_character(train, held_out));
  std::printf("sample:\n%s\n", model.sample(f.sample, f.seed).c_str());
  if (!f.export_dir.empty()) {
    const char_lm::model_functions::exported e = model.export_to(held_out);
    examples::write_export(f.export_dir, e.logits, e.trained, e.feeds, e.expected);
    std::cerr << "exported the " << f.model << " model to " << f.export_dir << "\n";
  }
} catch (const error& e) {
  std::cerr << argv[0] << ": " << e.what() << "\n";
  return 1;
}
