#pragma once
// TensorBoard event files (see docs/debugging.md, "TensorBoard"): summary_writer for scalars,
// histograms, text and graph values, with no dependency beyond the standard library and POSIX.
#include "tensorboard/graph_def.hpp"
#include "tensorboard/histogram.hpp"
#include "tensorboard/protobuf.hpp"
#include "tensorboard/record.hpp"
#include "tensorboard/summary_writer.hpp"
