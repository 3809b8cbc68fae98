#pragma once
// The graph value (ir/) and its file forms (io/) that need no third-party library, in one include.
// The JSON form needs nlohmann-json and is included on its own: #include <symflow/io/json.hpp>.
#include "../io/binary.hpp"
#include "../io/dot.hpp"
#include "../io/npy.hpp"
#include "../ir/graph.hpp"
#include "../ir/inspect.hpp"
#include "../ir/op_registry.hpp"
#include "../ir/to_graph.hpp"
#include "../ir/validate.hpp"
