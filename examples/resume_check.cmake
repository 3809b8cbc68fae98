# Resuming from a checkpoint is bit-identical: trains EXE for 2 epochs in one run, and for 1 epoch (a
# 2-epoch run stopped as if interrupted) then, resumed from the checkpoint, the second, and requires the two final checkpoints (parameters, optimiser
# state, metadata) to be equal byte for byte. For the CNN this also checks that dropout masks follow
# from the run seed and the step alone.
#   cmake -DEXE=path/to/cnn -DDIR=scratch/dir -DLIMIT=512 -P resume_check.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(common --limit ${LIMIT} --batch 64 --seed 7)
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")
macro(train stop_after checkpoint)
  run_step("${EXE} --stop-after ${stop_after}" "${EXE}" ${common} --epochs 2 --stop-after ${stop_after} --checkpoint "${checkpoint}")
  if(skipped)
    return()
  endif()
endmacro()
train(2 "${DIR}/straight.safetensors")
train(1 "${DIR}/resumed.safetensors")
train(2 "${DIR}/resumed.safetensors")
file(SHA256 "${DIR}/straight.safetensors" straight)
file(SHA256 "${DIR}/resumed.safetensors" resumed)
if(NOT straight STREQUAL resumed)
  message(FATAL_ERROR "resumed training differs from the uninterrupted run: ${straight} vs ${resumed}")
endif()
message("resume is bit-identical: ${straight}")
