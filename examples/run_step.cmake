# What the examples' cmake checks (onnx_round_trip.cmake, graph_round_trip.cmake,
# resume_check.cmake) share. run_step(WHAT COMMAND...) runs a command: exit code 77, an example's
# "no data set", prints the line the ctest entries skip on and sets `skipped` in the caller; any
# other failure ends the script naming WHAT, with the command and its output; else `output` holds
# what it printed on standard output.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 77)
    message("SKIP: no data set")  # matched by the tests' SKIP_REGULAR_EXPRESSION
    set(skipped ON PARENT_SCOPE)
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()
