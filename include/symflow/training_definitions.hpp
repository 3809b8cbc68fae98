#pragma once
// The definitions of what a training program uses beside its model, for a program compiled with
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp), whose other translation units only
// declare them: the optimisers' update rules and TensorBoard histograms for float and double,
// checkpoint files (with the JSON parser behind them), IDX data files and TensorBoard event files.
// Include it in exactly one translation unit (library_definitions.hpp includes it); it needs
// nlohmann-json and zlib.
#include "data/idx_impl.hpp"
#include "data/mnist_impl.hpp"
#include "debug/tensorboard/histogram.hpp"
#include "debug/tensorboard/summary_writer_impl.hpp"
#include "train/checkpoint_impl.hpp"
#include "train/update_rules.hpp"

#if defined(SYMFLOW_SEPARATE_COMPILATION)
namespace symflow::detail {
#define SYMFLOW_UPDATE_RULES_FOR(T)                                                                        \
  template void sgd_update<T>(flat_view<T>, flat_view<const T>, T);                                        \
  template void momentum_update<T>(flat_view<T>, flat_view<T>, flat_view<const T>, T, T);                  \
  template void adam_update<T>(flat_view<T>, flat_view<T>, flat_view<T>, flat_view<const T>,              \
                               const adam_scalars<T>&);
SYMFLOW_UPDATE_RULES_FOR(float)
SYMFLOW_UPDATE_RULES_FOR(double)
#undef SYMFLOW_UPDATE_RULES_FOR
}  // namespace symflow::detail

namespace symflow::tensorboard {
template histogram make_histogram<float>(std::span<const float>, histogram_buckets, std::string_view);
template histogram make_histogram<double>(std::span<const double>, histogram_buckets, std::string_view);
}  // namespace symflow::tensorboard
#endif
