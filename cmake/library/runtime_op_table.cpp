// Part of symflow_library (core/separate_compilation.hpp): the graph runtime's op table, every op's
// kernels for every dtype (find_runtime_op). Its derivative rules are runtime_derivative_rules.cpp,
// a unit of its own so that the two compile in parallel (each about half of the 75 s they took
// together). Without them, every translation unit that runs or differentiates a graph compiles
// both again.
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_OP_TABLE
#include <symflow/runtime/interpreter.hpp>
