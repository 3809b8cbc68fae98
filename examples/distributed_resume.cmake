# Resuming with another number of ranks: EXE trains 2 epochs in one process, and 1 epoch in one
# process (a 2-epoch run stopped as if interrupted) whose checkpoint `mpirun -np 2 EXE --distributed`
# then resumes for the second. The two final checkpoints hold the same parameters and optimiser
# state up to float rounding of the ranks' gradient sums (relative 1e-3 after a whole epoch of
# Adam steps; bit-identical is what resume_check.cmake asks of one process), and the same metadata.
#   cmake -DEXE=mlp -DMPIEXEC=mpirun -DPYTHON=python3 -DDIR=dir -DLIMIT=1000 -P distributed_resume.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(common --limit ${LIMIT} --batch 64 --seed 7 --threads 1 --epochs 2)
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")
run_step("one process, 2 epochs" "${EXE}" ${common} --checkpoint "${DIR}/straight.safetensors")
if(skipped)
  return()
endif()
run_step("one process, stopped after epoch 1" "${EXE}" ${common} --stop-after 1 --checkpoint "${DIR}/resumed.safetensors")
run_step("2 ranks, resumed for epoch 2" "${MPIEXEC}" -np 2 --oversubscribe "${EXE}" ${common} --distributed
         --checkpoint "${DIR}/resumed.safetensors")
if(NOT output MATCHES "test_accuracy=0\\.[0-9]+")
  message(FATAL_ERROR "the resumed distributed run printed no test accuracy:\n${output}")
endif()
string(REGEX MATCHALL "test_accuracy=" printed "${output}")
list(LENGTH printed count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "rank 0 alone prints the result; it was printed ${count} times:\n${output}")
endif()
run_step("the checkpoints agree" "${PYTHON}" -c "
import json, struct, sys
import numpy as np
def load(path):
    data = open(path, 'rb').read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop('__metadata__', {})
    types = {'F32': np.float32, 'F64': np.float64, 'I64': np.int64, 'U64': np.uint64, 'I32': np.int32}
    body = data[8 + n:]
    return meta, {k: np.frombuffer(body[v['data_offsets'][0]:v['data_offsets'][1]], types[v['dtype']]) for k, v in header.items()}
(ma, a), (mb, b) = load(sys.argv[1]), load(sys.argv[2])
assert ma == mb, (ma, mb)
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
worst = max(float(np.max(np.abs(a[k].astype(np.float64) - b[k]) / np.maximum(np.abs(b[k].astype(np.float64)), 1e-2), initial=0)) for k in a)
print('max relative difference', worst)
sys.exit(0 if worst <= 1e-3 else 1)
" "${DIR}/resumed.safetensors" "${DIR}/straight.safetensors")
message("${output}")
