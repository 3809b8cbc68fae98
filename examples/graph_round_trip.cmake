# An example's model through ONNX and back, for the examples whose data the fine-tuning program
# does not read (the char LMs; examples/onnx_round_trip.cmake does the classifiers):
#   1. EXE (with ARGS) trains briefly and --export's DIR: model.json (the logits' graph with its
#      parameters), feed_<input>.npy, expected.npy (the logits it computed);
#   2. CLI (`symflow export`) converts it to ONNX and ONNX's checker (python3-onnx, full_check)
#      accepts it;
#   3. `symflow import` reads it back, and `symflow run` gives the same results from the imported
#      model as from the exported graph, bit for bit (an op whose ONNX form is a composition is a
#      function call that reads back as the op: io/onnx_writer.hpp), and the program's own within
#      1e-4 relative.
#   cmake -DEXE=char_lm "-DARGS=--model;gru;--steps;20" -DCLI=symflow -DPYTHON=python3 -DDIR=dir -P graph_round_trip.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")
run_step("${EXE} --export" "${EXE}" ${ARGS} --export "${DIR}")
if(skipped)
  return()
endif()
run_step("symflow export" "${CLI}" export "${DIR}/model.json" "${DIR}/model.onnx")
run_step("ONNX's checker" "${PYTHON}" -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)"
    "${DIR}/model.onnx")
run_step("symflow import" "${CLI}" import "${DIR}/model.onnx" "${DIR}/imported.json")

file(GLOB feed_files "${DIR}/feed_*.npy")
set(feeds)
foreach(f ${feed_files})
  get_filename_component(name "${f}" NAME_WE)
  string(REGEX REPLACE "^feed_" "" name "${name}")
  list(APPEND feeds --feed "${name}=${f}")
endforeach()
run_step("symflow run (exported graph)" "${CLI}" run "${DIR}/model.json" ${feeds} --out "${DIR}/graph")
run_step("symflow run (imported ONNX)" "${CLI}" run "${DIR}/imported.json" ${feeds} --out "${DIR}/onnx")
file(SHA256 "${DIR}/graph/output_0.npy" from_graph)
file(SHA256 "${DIR}/onnx/output_0.npy" from_onnx)
set(compare "import numpy as np, sys
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
error = float(np.max(np.abs(got.astype(np.float64) - want) / np.maximum(1.0, np.abs(want)), initial=0.0))
print('relative difference', error)
sys.exit(0 if error <= float(sys.argv[3]) else 1)")
if(NOT from_graph STREQUAL from_onnx)
  run_step("the imported model's results (for the message)" "${PYTHON}" -c "${compare}"
           "${DIR}/onnx/output_0.npy" "${DIR}/graph/output_0.npy" 0)
  message(FATAL_ERROR "the imported model does not give the exported graph's results bit for bit")
endif()
run_step("the program's results" "${PYTHON}" -c "${compare}" "${DIR}/onnx/output_0.npy" "${DIR}/expected.npy" 1e-4)
message("round_trip=bitwise")
