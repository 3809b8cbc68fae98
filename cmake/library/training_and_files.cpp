// Part of symflow_library (core/separate_compilation.hpp): the optimisers' update rules, checkpoint
// files, IDX data files and TensorBoard event files, defined once for programs compiled with
// SYMFLOW_SEPARATE_COMPILATION. (Not with SYMFLOW_LIBRARY_IMPLEMENTATION: that would define the
// op tables here too, which runtime_tables.cpp defines.)
#include <symflow/training_definitions.hpp>
