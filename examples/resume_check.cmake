# Resuming from a checkpoint is bit-identical: trains EXE for 2 epochs in one run, and for 1 epoch (a
# 2-epoch run stopped as if interrupted) then, resumed from the checkpoint, the second, and requires the two final checkpoints (parameters, optimiser
# state, metadata) to be equal byte for byte. For the CNN this also checks that dropout masks follow
# from the run seed and the step alone.
#   cmake -DEXE=path/to/cnn -DDIR=scratch/dir -DLIMIT=512 -P resume_check.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(common --limit ${LIMIT} --batch 64 --seed 7)
function(train stop_after checkpoint)
  execute_process(COMMAND "${EXE}" ${common} --epochs 2 --stop-after ${stop_after} --checkpoint "${checkpoint}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 77)
    message("SKIP: no data set")  # matched by the test's SKIP_REGULAR_EXPRESSION
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${EXE} --stop-after ${stop_after} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()
train(2 "${DIR}/straight.safetensors")
if(NOT EXISTS "${DIR}/straight.safetensors")
  return()
endif()
train(1 "${DIR}/resumed.safetensors")
train(2 "${DIR}/resumed.safetensors")
file(SHA256 "${DIR}/straight.safetensors" straight)
file(SHA256 "${DIR}/resumed.safetensors" resumed)
if(NOT straight STREQUAL resumed)
  message(FATAL_ERROR "resumed training differs from the uninterrupted run: ${straight} vs ${resumed}")
endif()
message("resume is bit-identical: ${straight}")
