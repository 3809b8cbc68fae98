// Part of symflow_library (core/separate_compilation.hpp): the interpreter's members, with the
// planner, the fusion of passes and the run steps they call (runtime/interpreter_impl.hpp).
// Without it, every translation unit that runs a graph compiles them again.
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_INTERPRETER
#include <symflow/runtime/interpreter.hpp>
