#pragma once
// symflow is header-only, and a program with one translation unit needs nothing else. A program
// with several pays, in each of them, for code that does not depend on its model: the graph
// runtime's two op tables (find_runtime_op: every op's kernels for every dtype;
// find_derivative_rule: every op's gradient as a graph fragment; about 45 s and 1.9 GB of g++),
// the optimisers' update rules for float and double, checkpoint files (with the JSON parser behind
// them), IDX data files and TensorBoard event files.
// Such a program can compile that code once:
//
//   - compile every translation unit with -DSYMFLOW_SEPARATE_COMPILATION: that code is then
//     declared, not defined;
//   - in exactly one translation unit, define SYMFLOW_LIBRARY_IMPLEMENTATION and include
//     <symflow/library_definitions.hpp>: it is defined there, with external linkage. (The project's
//     CMake target symflow_library builds the same from two units, cmake/library/*.cpp.)
//
// Compile that unit with the same code-generation flags as the rest (-march, -ffp-contract): the
// interpreter's kernels and the update rules are compiled there.
//
// In a header, a function of this kind is declared with SYMFLOW_LIBRARY_LINKAGE (`inline`, or
// nothing when compiled separately), and its definition — often in a companion *_impl.hpp that
// also holds the includes only the definitions need — is compiled unless
// SYMFLOW_LIBRARY_DECLARED_ONLY.
// A unit may define only a part of the op tables, so that a build can compile them in parallel:
// with SYMFLOW_LIBRARY_PART_OP_TABLE it defines find_runtime_op only, with
// SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES find_derivative_rule and the first half of the derivative
// rules, with SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2 their second half (the project's
// cmake/library/runtime_*.cpp; each unit defines one of these macros at most).
#if defined(SYMFLOW_SEPARATE_COMPILATION)
#define SYMFLOW_LIBRARY_LINKAGE
#if defined(SYMFLOW_LIBRARY_IMPLEMENTATION)
#define SYMFLOW_LIBRARY_DECLARED_ONLY 0
#else
#define SYMFLOW_LIBRARY_DECLARED_ONLY 1
#endif
#else
#define SYMFLOW_LIBRARY_LINKAGE inline
#define SYMFLOW_LIBRARY_DECLARED_ONLY 0
#endif

#if SYMFLOW_LIBRARY_DECLARED_ONLY || defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES) || \
    defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2) || defined(SYMFLOW_LIBRARY_PART_GEMM)
#define SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY 0
#endif
#if SYMFLOW_LIBRARY_DECLARED_ONLY || defined(SYMFLOW_LIBRARY_PART_OP_TABLE) || \
    defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2) || defined(SYMFLOW_LIBRARY_PART_GEMM)
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_DECLARED_ONLY 0
#endif
#if SYMFLOW_LIBRARY_DECLARED_ONLY || defined(SYMFLOW_LIBRARY_PART_OP_TABLE) || \
    defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES) || defined(SYMFLOW_LIBRARY_PART_GEMM)
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_2_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_2_DECLARED_ONLY 0
#endif
// The float and double matrix products (core/gemm.hpp), in a unit of their own (PART_GEMM): the
// op tables' units are compiled with -ffp-contract=off, and the products' scalar tails must round
// as the SGD update does (train/update_rules.hpp), contracted where the machine has an FMA.
#if SYMFLOW_LIBRARY_DECLARED_ONLY || defined(SYMFLOW_LIBRARY_PART_OP_TABLE) || \
    defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES) || defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2)
#define SYMFLOW_LIBRARY_GEMM_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_GEMM_DECLARED_ONLY 0
#endif
