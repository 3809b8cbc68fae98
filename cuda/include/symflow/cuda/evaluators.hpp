#pragma once
// Host side of the CUDA evaluator. It mirrors the CPU evaluator: building the tree checks every
// runtime extent before any work; prepare() materialises what cannot fuse (kernels, views of computed
// values, inner reductions); each fusion group is then lowered to a name-free device evaluator
// (device.hpp) and run by one templated kernel (kernels.hpp). Dispatch is on node_kind only;
// everything op-specific comes from the op type (its scalar function, identity/combine/finish, layout
// rule or kernel).
//
// Every evaluator node has prepare/bind/visit/lower; besides, it can describe the part of its fusion
// group it heads (`describe`, for the placement log) and list the memory its group reads
// (`visit_reads`, valid after prepare). One header per part; this one includes them all.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <symflow/core/params.hpp>
#include <symflow/core/tensor.hpp>
#include <symflow/eval/cpu/context.hpp>
#include <symflow/eval/cpu/frame.hpp>
#include <symflow/expr/broadcast.hpp>
#include <symflow/expr/elementwise.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/reduction.hpp>
#include <symflow/expr/same_value.hpp>
#include <symflow/expr/structural.hpp>
#include <symflow/expr/to_string.hpp>

#include "device.hpp"
#include "device_tensor.hpp"
#include "evaluation_context.hpp"
#include "leaf_slots.hpp"
#include "kernels.hpp"
#include "placement_log.hpp"

#include "node_labels.hpp"              // how the placement log names a node
#include "device_leaf.hpp"              // a value in device memory, group frames
#include "leaf_evaluators.hpp"          // memory, literals
#include "elementwise_evaluator.hpp"    // elementwise nodes (fused)
#include "materialised_evaluators.hpp"  // reductions, views, kernel ops (computed once, read as leaves)
#include "make_evaluator.hpp"           // the tree of an expression

// The fusion-group runners (run_map, run_reduce, compute) are in fusion_groups.hpp.
