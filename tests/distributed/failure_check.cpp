// A data-parallel loop in which rank 1 stops at step STEP: `die` (SIGKILL, as the OOM killer or a
// lost host would) or `hang` (it stays alive but takes no further part). The other ranks must end
// with an error, not wait forever: mpirun ends the job when a rank dies, and a collective that
// waits longer than SYMFLOW_DISTRIBUTED_TIMEOUT throws distributed_error naming itself, after which
// the communicator aborts the job (tests/distributed/failure_check.cmake runs both).
//
//   mpirun -np 2 failure_check die|hang STEP
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <symflow/distributed/data_parallel.hpp>

using namespace symflow;

int main(int argc, char** argv) {
  distributed::communicator world(argc, argv);
  if (argc != 3) {
    std::cerr << "usage: failure_check die|hang STEP\n";
    return 2;
  }
  const std::string mode = argv[1];
  const int stop_at = std::atoi(argv[2]);
  try {
    distributed::gradient_exchange exchange(world);
    std::vector<float> gradient(100000, 1.0f);
    for (int step = 0; step < 1000; ++step) {
      if (world.rank() == 1 && step == stop_at) {
        std::cerr << "rank 1: stopping at step " << step << " (" << mode << ")" << std::endl;
        if (mode == "die") std::raise(SIGKILL);
        std::this_thread::sleep_for(std::chrono::hours(1));
      }
      const std::vector<named_gradient> local{{"w", dtype::f32, {gradient.size()}, gradient.data()}};
      const auto& summed = exchange.sum(local, 0.5);
      if (static_cast<const float*>(summed[0].data)[0] != 1.0f) throw distributed_error("wrong sum");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } catch (const error& e) {
    std::cerr << "failure_check: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "failure_check: rank " << world.rank() << " finished all steps\n";
  return 0;
}
