// Part of symflow_library (core/separate_compilation.hpp): the graph runtime's op tables, every
// op's kernels for every dtype and every op's derivative rule. Without it, every translation unit
// that runs or differentiates a graph compiles them again: about 45 s and 1.9 GB of g++ each.
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
