#pragma once
// The one header users include.
#include "core/dtype.hpp"
#include "core/eigen_interop.hpp"
#include "core/error.hpp"
#include "core/params.hpp"
#include "core/print.hpp"
#include "core/shape.hpp"
#include "core/tensor.hpp"
#include "expr/elementwise.hpp"
#include "expr/leaves.hpp"
#include "expr/reduction.hpp"
#include "expr/scope.hpp"
#include "expr/structural.hpp"
#include "expr/to_string.hpp"
#include "ops/all.hpp"
#include "eval/cpu/eval.hpp"
#include "symbolic/gradient.hpp"
// Gradients of large models by a runtime program (runtime/program_gradient.hpp): where the runtime's
// op tables are compiled once and linked (SYMFLOW_SEPARATE_COMPILATION), or on request; elsewhere
// grad uses the typed sweep, and a translation unit does not compile the tables (about 45 s).
#if defined(SYMFLOW_SEPARATE_COMPILATION) || defined(SYMFLOW_PROGRAM_GRADIENTS)
#include "runtime/program_gradient.hpp"
#endif
#include "symbolic/jvp.hpp"
#include "debug/check_gradient.hpp"
