#pragma once
// Everything a program compiled with SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp)
// only declares in its translation units, defined once: include this in exactly one of them, after
// defining SYMFLOW_LIBRARY_IMPLEMENTATION.
//
//   // symflow_definitions.cpp
//   #define SYMFLOW_LIBRARY_IMPLEMENTATION
//   #include <symflow/library_definitions.hpp>
//
// The graph runtime's op tables here take the longest to compile (about 45 s of g++ -O2); the
// project builds them in a unit of their own (cmake/library/), beside training_definitions.hpp.
#if !defined(SYMFLOW_SEPARATE_COMPILATION) || !defined(SYMFLOW_LIBRARY_IMPLEMENTATION)
#error "symflow/library_definitions.hpp: compile this unit with SYMFLOW_SEPARATE_COMPILATION and define SYMFLOW_LIBRARY_IMPLEMENTATION before including it"
#endif
#include "runtime/grad.hpp"
#include "runtime/interpreter.hpp"
#include "runtime/program.hpp"
#include "training_definitions.hpp"
