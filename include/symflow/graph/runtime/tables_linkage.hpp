#pragma once
// The runtime's two op tables (find_runtime_op: every op's kernels for every dtype;
// find_derivative_rule: every op's gradient as a graph fragment) instantiate most of the runtime's
// code: about 45 s and 1.9 GB of g++ -O3 in every translation unit that runs or differentiates a
// graph. A program with several such translation units can compile the tables once:
//
//   - compile every translation unit with -DSYMFLOW_SEPARATE_RUNTIME_TABLES: the tables are then
//     declared, not defined;
//   - in exactly one translation unit, also define SYMFLOW_RUNTIME_TABLES_IMPLEMENTATION before
//     including <symflow/graph/runtime/interpreter.hpp> and <symflow/graph/runtime/grad.hpp>: the
//     tables are defined there, with external linkage.
//
// Compile that unit with the same code-generation flags as the rest (-march, -ffp-contract): the
// interpreter's kernels are compiled there. Without SYMFLOW_SEPARATE_RUNTIME_TABLES (the default)
// the tables are inline functions, as the rest of the library, and nothing else is needed.
#if defined(SYMFLOW_SEPARATE_RUNTIME_TABLES)
#define SYMFLOW_RUNTIME_TABLE_LINKAGE
#if defined(SYMFLOW_RUNTIME_TABLES_IMPLEMENTATION)
#define SYMFLOW_RUNTIME_TABLES_DECLARED_ONLY 0
#else
#define SYMFLOW_RUNTIME_TABLES_DECLARED_ONLY 1
#endif
#else
#define SYMFLOW_RUNTIME_TABLE_LINKAGE inline
#define SYMFLOW_RUNTIME_TABLES_DECLARED_ONLY 0
#endif
