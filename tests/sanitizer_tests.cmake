# ctest entries for the sanitizer sub-build (top-level CMakeLists.txt, SYMFLOW_SANITIZER_JOB): one per
# test program, and the CLI's checks against the sanitized `symflow`. Any sanitizer report ends the
# program with a non-zero status (-fno-sanitize-recover=all), which fails its entry.
set(symflow_sanitize_dir "${PROJECT_BINARY_DIR}/sanitize")
# detect_leaks=0: LeakSanitizer needs ptrace, which some CI sandboxes forbid; leaks are not what this
# job is for. abort_on_error: a report is a crash ctest sees, with the report on stderr.
set(symflow_sanitize_env
  "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "OMP_WAIT_POLICY=passive")
include(${CMAKE_CURRENT_LIST_DIR}/sanitizer_tests_list.cmake)
foreach(name ${symflow_sanitize_programs})
  if(EXISTS "${PROJECT_SOURCE_DIR}/tests/${name}.cpp")
    add_test(NAME sanitize.${name} COMMAND "${symflow_sanitize_dir}/tests/${name}"
             WORKING_DIRECTORY "${symflow_sanitize_dir}/tests")
    set(environment ${symflow_sanitize_env})
    if(name MATCHES "^cuda_emulation_")
      list(APPEND environment "SYMFLOW_EMU_ORDER=reverse")  # the regular build runs them in forward order
    endif()
    set_tests_properties(sanitize.${name} PROPERTIES LABELS sanitize ENVIRONMENT "${environment}" TIMEOUT 900)
  endif()
endforeach()
find_program(SYMFLOW_PYTHON3 NAMES python3 HINTS /usr/bin)
if(SYMFLOW_PYTHON3)
  foreach(case inspect run bad_input)
    add_test(NAME sanitize.cli_${case}
      COMMAND ${SYMFLOW_PYTHON3} ${PROJECT_SOURCE_DIR}/tools/tests/check_cli.py
              --symflow "${symflow_sanitize_dir}/tools/symflow" --data ${PROJECT_SOURCE_DIR}/tests/data/graph
              --work "${symflow_sanitize_dir}/cli_test_work_${case}" ${case})
    set_tests_properties(sanitize.cli_${case} PROPERTIES LABELS "sanitize;cli" SKIP_RETURN_CODE 77
                         ENVIRONMENT "${symflow_sanitize_env}")
  endforeach()
endif()
# Run-time differentiation under ASan, on the graph that exposed a heap use-after-free (differentiate
# kept a reference into the builder's growing node vector).
add_test(NAME sanitize.cli_grad_corpus
  COMMAND "${symflow_sanitize_dir}/tools/symflow" grad "${PROJECT_SOURCE_DIR}/tests/data/fuzz/json/gradients.json"
          --wrt x --wrt W --wrt b -o "${symflow_sanitize_dir}/cli_grad_corpus.json")
set_tests_properties(sanitize.cli_grad_corpus PROPERTIES LABELS "sanitize;cli" ENVIRONMENT "${symflow_sanitize_env}")
