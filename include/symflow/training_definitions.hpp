#pragma once
// The definitions of what a training program uses beside its model, for a program compiled with
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp), whose other translation units only
// declare them: the optimisers' update rules and TensorBoard histograms for float and double,
// checkpoint files and the graph's JSON form (with the JSON parser behind them), IDX data files and
// TensorBoard event files.
// Include it in exactly one translation unit (library_definitions.hpp includes it); it needs
// nlohmann-json and zlib.
#include "io/idx_impl.hpp"
#include "io/json_impl.hpp"
#include "data/mnist_impl.hpp"
#include "debug/tensorboard/histogram.hpp"
#include "debug/tensorboard/summary_writer_impl.hpp"
#include "train/checkpoint_impl.hpp"
#include "train/update_rules.hpp"

#if defined(SYMFLOW_SEPARATE_COMPILATION)
namespace symflow::detail {
SYMFLOW_UPDATE_RULE_INSTANCES(, float)
SYMFLOW_UPDATE_RULE_INSTANCES(, double)
}  // namespace symflow::detail

namespace symflow::tensorboard {
SYMFLOW_HISTOGRAM_INSTANCES(, float)
SYMFLOW_HISTOGRAM_INSTANCES(, double)
}  // namespace symflow::tensorboard
#endif
