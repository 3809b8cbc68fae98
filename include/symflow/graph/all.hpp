#pragma once
// The graph value and everything built on it that needs no third-party library. The JSON form
// (json.hpp) needs nlohmann-json and is included on its own: #include <symflow/graph/json.hpp>.
#include "binary.hpp"
#include "dot.hpp"
#include "graph.hpp"
#include "inspect.hpp"
#include "npy.hpp"
#include "op_registry.hpp"
#include "to_graph.hpp"
#include "validate.hpp"
