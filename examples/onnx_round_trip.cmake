# A classifier example's model through ONNX and back, then fine-tuned (issue: ONNX round trips):
#   1. EXE trains one epoch on LIMIT examples and --export's its inference model to DIR;
#   2. CLI (`symflow export`) converts it to ONNX with its trained parameters;
#   3. ONNX's checker (python3-onnx, full_check) accepts it;
#   4. TUNE (onnx_fine_tune) imports it, requires the exported graph's outputs bit for bit and the
#      typed model's logits within rounding (--reference), the typed run's test accuracy, then trains
#      one more epoch (its exit status requires the training loss to fall) and exports again;
#   5. the checker accepts the fine-tuned model;
#   6. with RESUME, a fine-tuning of 2 epochs stopped after the first and resumed from its
#      checkpoint ends with the checkpoint of an uninterrupted 2-epoch run, byte for byte.
#   cmake -DEXE=cnn -DCLI=symflow -DTUNE=onnx_fine_tune -DPYTHON=python3 -DDIR=dir -DLIMIT=1000 [-DRESUME=ON] -P onnx_round_trip.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")
run_step("${EXE} --export" "${EXE}" --epochs 1 --limit ${LIMIT} --batch 64 --export "${DIR}")
if(skipped)
  return()
endif()
set(trained "${output}")
string(REGEX MATCH "test_accuracy=([0-9.]+)" _ "${trained}")
set(typed_accuracy "${CMAKE_MATCH_1}")

run_step("symflow export" "${CLI}" export "${DIR}/model.json" "${DIR}/model.onnx" --params "${DIR}/model.safetensors")
set(checker "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)")
run_step("ONNX's checker" "${PYTHON}" -c "${checker}" "${DIR}/model.onnx")

run_step("fine-tuning" "${TUNE}" "${DIR}/model.onnx" --reference "${DIR}" --epochs 1 --limit ${LIMIT} --batch 64
    --out "${DIR}/tuned.onnx")
message("${output}")
if(NOT output MATCHES "round_trip=bitwise")
  message(FATAL_ERROR "the imported model does not give the exported graph's outputs")
endif()
string(REGEX MATCH "test_accuracy_before=([0-9.]+)" _ "${output}")
if(NOT CMAKE_MATCH_1 STREQUAL typed_accuracy)
  message(FATAL_ERROR "the imported model's test accuracy ${CMAKE_MATCH_1} is not the typed model's ${typed_accuracy}")
endif()
run_step("ONNX's checker (fine-tuned)" "${PYTHON}" -c "${checker}" "${DIR}/tuned.onnx")

if(RESUME)
  set(tune "${TUNE}" "${DIR}/model.onnx" --epochs 2 --limit ${LIMIT} --batch 64)
  run_step("fine-tuning 2 epochs" ${tune} --checkpoint "${DIR}/straight.safetensors")
  run_step("fine-tuning, stopped" ${tune} --checkpoint "${DIR}/resumed.safetensors" --stop-after 1)
  run_step("fine-tuning, resumed" ${tune} --checkpoint "${DIR}/resumed.safetensors")
  file(SHA256 "${DIR}/straight.safetensors" straight)
  file(SHA256 "${DIR}/resumed.safetensors" resumed)
  if(NOT straight STREQUAL resumed)
    message(FATAL_ERROR "resumed fine-tuning differs from the uninterrupted run")
  endif()
endif()
