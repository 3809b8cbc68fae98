// The graph runtime's op tables, compiled once for a program whose other translation units are
// compiled with SYMFLOW_SEPARATE_RUNTIME_TABLES (include/symflow/graph/runtime/tables_linkage.hpp).
// The project's tests, examples and command-line tool link it (symflow_add_runtime_tables in the
// top-level CMakeLists.txt): without it every program that runs or differentiates a graph compiles
// the tables again, about 45 s and 1.9 GB of g++ each.
#define SYMFLOW_RUNTIME_TABLES_IMPLEMENTATION
#include <symflow/graph/runtime/grad.hpp>
#include <symflow/graph/runtime/interpreter.hpp>
