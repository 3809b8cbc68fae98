// The graph runtime's op tables, compiled once for all test programs (the tests are compiled with
// SYMFLOW_SEPARATE_RUNTIME_TABLES; see include/symflow/graph/runtime/tables_linkage.hpp). Without
// this, every test that runs or differentiates a graph compiles them again: about 45 s each.
#define SYMFLOW_RUNTIME_TABLES_IMPLEMENTATION
#include <symflow/graph/runtime/grad.hpp>
#include <symflow/graph/runtime/interpreter.hpp>
