# A rank that dies, and one that hangs, end the job with an error instead of a hang (failure_check.cpp):
#   cmake -DMPIEXEC=mpirun "-DMPIEXEC_FLAGS=--oversubscribe" -DPROGRAM=failure_check -DMODE=die|hang -P failure_check.cmake
# The job must end within 120 s (a hang would be killed by `timeout`, exit 124), with a non-zero
# exit, and say why: for `die` mpirun's notice of the killed rank (or the survivor's error), for
# `hang` the survivor's distributed_error naming the collective and the 3 s it waited.
set(ENV{SYMFLOW_DISTRIBUTED_TIMEOUT} 3)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
string(TIMESTAMP begin "%s")
execute_process(COMMAND timeout 120 ${MPIEXEC} -np 2 ${MPIEXEC_FLAGS} ${PROGRAM} ${MODE} 5
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${begin}")
message("${out}${err}")
message("exit status ${status} after ${seconds} s")
if(status EQUAL 0)
  message(FATAL_ERROR "the job ended successfully although rank 1 stopped (${MODE})")
endif()
if(status EQUAL 124)
  message(FATAL_ERROR "the job hung until the 120 s limit after rank 1 stopped (${MODE})")
endif()
if(MODE STREQUAL "die")
  if(NOT "${out}${err}" MATCHES "exited on signal 9|distributed:")
    message(FATAL_ERROR "no message says that rank 1 was killed")
  endif()
else()
  if(NOT "${out}${err}" MATCHES "distributed: rank 0 of 2: the [a-z -]+ of [a-z0-9 ]+ waited 3 s for the other ranks")
    message(FATAL_ERROR "rank 0 did not report the collective it waited for")
  endif()
endif()
