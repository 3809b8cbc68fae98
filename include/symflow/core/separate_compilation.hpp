#pragma once
// symflow is header-only, and a program with one translation unit needs nothing else. A program
// with several pays, in each of them, for code that does not depend on its model: the graph
// runtime's two op tables (find_runtime_op: every op's kernels for every dtype;
// find_derivative_rule: every op's gradient as a graph fragment; about 45 s and 1.9 GB of g++),
// the interpreter and the differentiation of graphs behind a runtime program's gradient, the
// optimisers' update rules for float and double, checkpoint files (with the JSON parser behind
// them), IDX data files and TensorBoard event files.
// Such a program can compile that code once:
//
//   - compile every translation unit with -DSYMFLOW_SEPARATE_COMPILATION: that code is then
//     declared, not defined;
//   - in exactly one translation unit, define SYMFLOW_LIBRARY_IMPLEMENTATION and include
//     <symflow/library_definitions.hpp>: it is defined there, with external linkage. (The project's
//     CMake target symflow_library builds the same from the units in cmake/library/, one per
//     part below, so that they compile in parallel and none takes a minute.)
//
// Compile that unit with the same code-generation flags as the rest (-march, -ffp-contract): the
// interpreter's kernels and the update rules are compiled there.
//
// In a header, a function of this kind is declared with SYMFLOW_LIBRARY_LINKAGE (`inline`, or
// nothing when compiled separately), and its definition — often in a companion *_impl.hpp that
// also holds the includes only the definitions need — is compiled unless
// SYMFLOW_LIBRARY_DECLARED_ONLY.
// A unit may define only a part of that code, so that a build can compile the parts in parallel
// (the project's cmake/library/*.cpp; each unit defines one of these macros at most):
//   - SYMFLOW_LIBRARY_PART_OP_TABLE: find_runtime_op, and the loader's op schemas (op_schemas,
//     ir/op_registry.hpp: every op's dtype rule table);
//   - SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES: find_derivative_rule and the first half of the
//     derivative rules; SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2: their second half;
//   - SYMFLOW_LIBRARY_PART_GEMM: the float and double matrix products;
//   - SYMFLOW_LIBRARY_PART_INTERPRETER: the interpreter's members (runtime/interpreter_impl.hpp),
//     the planner, fusion and run steps behind them;
//   - SYMFLOW_LIBRARY_PART_PROGRAMS: runtime programs and the graph's differentiation
//     (runtime/program_impl.hpp, differentiate in runtime/grad.hpp), the code every model whose
//     gradient a runtime program computes would otherwise compile in each of its units.
// SYMFLOW_LIBRARY_X_DECLARED_ONLY is 1 where part X is declared only: in every unit but the
// library's, and in a library unit that defines another part.
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

#if defined(SYMFLOW_LIBRARY_PART_OP_TABLE) || defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES) ||     \
    defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2) || defined(SYMFLOW_LIBRARY_PART_GEMM) ||       \
    defined(SYMFLOW_LIBRARY_PART_INTERPRETER) || defined(SYMFLOW_LIBRARY_PART_PROGRAMS)
#define SYMFLOW_LIBRARY_ONE_PART 1
#else
#define SYMFLOW_LIBRARY_ONE_PART 0
#endif

#if SYMFLOW_LIBRARY_DECLARED_ONLY || (SYMFLOW_LIBRARY_ONE_PART && !defined(SYMFLOW_LIBRARY_PART_OP_TABLE))
#define SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY 0
#endif
#if SYMFLOW_LIBRARY_DECLARED_ONLY || (SYMFLOW_LIBRARY_ONE_PART && !defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES))
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_DECLARED_ONLY 0
#endif
#if SYMFLOW_LIBRARY_DECLARED_ONLY || (SYMFLOW_LIBRARY_ONE_PART && !defined(SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2))
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_2_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_DERIVATIVE_RULES_2_DECLARED_ONLY 0
#endif
// The float and double matrix products (core/gemm.hpp), in a unit of their own (PART_GEMM): the
// op tables' units are compiled with -ffp-contract=off, and the products' scalar tails must round
// as the SGD update does (train/update_rules.hpp), contracted where the machine has an FMA.
#if SYMFLOW_LIBRARY_DECLARED_ONLY || (SYMFLOW_LIBRARY_ONE_PART && !defined(SYMFLOW_LIBRARY_PART_GEMM))
#define SYMFLOW_LIBRARY_GEMM_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_GEMM_DECLARED_ONLY 0
#endif
#if SYMFLOW_LIBRARY_DECLARED_ONLY || (SYMFLOW_LIBRARY_ONE_PART && !defined(SYMFLOW_LIBRARY_PART_INTERPRETER))
#define SYMFLOW_LIBRARY_INTERPRETER_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_INTERPRETER_DECLARED_ONLY 0
#endif
#if SYMFLOW_LIBRARY_DECLARED_ONLY || (SYMFLOW_LIBRARY_ONE_PART && !defined(SYMFLOW_LIBRARY_PART_PROGRAMS))
#define SYMFLOW_LIBRARY_PROGRAMS_DECLARED_ONLY 1
#else
#define SYMFLOW_LIBRARY_PROGRAMS_DECLARED_ONLY 0
#endif
