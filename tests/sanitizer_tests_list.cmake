# The test programs of the sanitizer job: the suites where untrusted bytes are read and written (graph
# files, .npy, checkpoints, IDX, summaries), the ones whose results must not depend on the SIMD width
# (the op laws, exp's range), integer reductions' wrapping (UBSan reports a signed overflow) and
# kernels' operand dtypes (kernels read operands of another dtype past their end), and row blocks
# (pointers into slices of the operands, block scratch memory), and control flow (sub-graphs read
# recursively from files, loops over views of stacked values), and the CUDA emulator (fibers on
# stacks of their own, run in reverse thread order there). The CLI's checks
# and the runtime-differentiation reproducer run against the sanitized `symflow`
# (sanitizer_tests.cmake). Suites that instantiate large expression types (the compile-time
# evaluator's, debug_test, graph_native_pass_test, graph_runtime_grad_test: several minutes and GBs
# each under ASan) stay in the regular build, where they run too.
set(symflow_sanitize_programs graph_serialize_test graph_npy_test checkpoint_test data_idx_test tensorboard_test
    histogram_bucketing_test op_ieee_law_test numerics_width_test reduction_wrap_test graph_kernel_dtypes_test
    row_blocks_test graph_control_flow_test cuda_emulation_executor_test
    cuda_emulation_runtime_test)
# Of these, the suites whose results cannot depend on the SIMD width (file formats, summaries,
# sub-graphs read from files) are not built a second time in the regular build when the sanitizer
# job runs them (scripts/test.sh): the ASan + UBSan run is the stricter one.
set(symflow_sanitize_only_programs graph_serialize_test graph_npy_test checkpoint_test data_idx_test tensorboard_test
    histogram_bucketing_test graph_control_flow_test)
