// Gradients in device memory summed over two ranks (distributed/device_exchange.hpp), under
// `mpirun -np 2`: through the host (any MPI) and, where MPI is CUDA-aware, from device memory;
// each rank's gradients weighted by its share, against the sum computed here on the host in
// float64; a rank with weight 0 sends zeros even where its gradients hold NaN. Needs a CUDA
// device: without one it prints "SKIP: no CUDA device" (ctest reports the test as skipped).
#include <cmath>
#include <cstdio>
#include <vector>

#include <symflow/distributed/device_exchange.hpp>

using namespace symflow;

namespace {

float value(int rank, std::size_t buffer, std::size_t i) {
  return float(rank + 1) * 0.5f + float(buffer) - float(i % 17) * 0.125f;
}

int run(distributed::communicator& world, bool allow_cuda_aware, bool second_rank_empty) {
  const std::vector<std::size_t> sizes{1000, 37, 1};
  std::vector<float*> device(sizes.size());
  const double weight = second_rank_empty ? (world.rank() == 0 ? 1.0 : 0.0) : (world.rank() == 0 ? 0.25 : 0.75);
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    std::vector<float> host(sizes[b]);
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = second_rank_empty && world.rank() == 1 ? NAN : value(world.rank(), b, i);
    cudaMalloc(reinterpret_cast<void**>(&device[b]), host.size() * sizeof(float));
    cudaMemcpy(device[b], host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
  distributed::device_gradient_exchange exchange(world, nullptr, allow_cuda_aware);
  std::vector<distributed::device_gradient_exchange::span> spans;
  for (std::size_t b = 0; b < sizes.size(); ++b) spans.emplace_back(device[b], sizes[b]);
  exchange.sum(spans, weight);
  int failures = 0;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    std::vector<float> got(sizes[b]);
    cudaMemcpy(got.data(), device[b], got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double want = second_rank_empty ? double(value(0, b, i))
                                            : 0.25 * double(value(0, b, i)) + 0.75 * double(value(1, b, i));
      if (!(std::abs(double(got[i]) - want) <= 1e-6 * std::max(1.0, std::abs(want)))) {
        if (failures++ < 5)
          std::fprintf(stderr, "rank %d (%s): buffer %zu element %zu is %g, not %g\n", world.rank(),
                       exchange.cuda_aware() ? "CUDA-aware" : "through the host", b, i, double(got[i]), want);
      }
    }
    cudaFree(device[b]);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  distributed::communicator world(argc, argv, {.timeout_seconds = 60});
  int devices = 0;
  const bool have = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  std::vector<unsigned char> mine{static_cast<unsigned char>(have)};
  const std::vector<unsigned char> all = world.allgather(mine, "device presence");
  for (unsigned char h : all)
    if (!h) {
      if (world.is_root()) std::printf("SKIP: no CUDA device on every rank\n");
      return 0;
    }
  cudaSetDevice(world.rank() % devices);
  int failures = 0;
  try {
    for (bool cuda_aware : {false, true})
      for (bool empty : {false, true}) failures += run(world, cuda_aware, empty);
  } catch (const error& e) {
    std::fprintf(stderr, "rank %d: %s\n", world.rank(), e.what());
    return 1;
  }
  if (world.is_root())
    std::printf("device gradient exchange (MPI %s CUDA-aware): %s\n", distributed::mpi_is_cuda_aware() ? "is" : "is not",
                failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
