// Part of symflow_library (core/separate_compilation.hpp): runtime programs and the
// differentiation of graphs (runtime/program_impl.hpp, differentiate in runtime/grad.hpp).
// Without it, every translation unit whose model's gradient is a runtime program compiles the
// differentiation again, with every program's construction and run.
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_PROGRAMS
#include <symflow/runtime/program.hpp>
