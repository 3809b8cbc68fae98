#pragma once
// The processes of a data-parallel run, on MPI (OpenMPI: Debian's libopenmpi-dev and openmpi-bin;
// CMake: find_package(MPI COMPONENTS CXX), link MPI::MPI_CXX). A program started by
//
//   mpirun -np 4 build/examples/mlp --distributed
//
// makes one communicator; rank 0 is the root that writes files and prints.
//
//   symflow::distributed::communicator world(argc, argv);
//   if (world.is_root()) ...;
//   world.allreduce_sum(buffer.data(), buffer.size(), "gradients");
//
// Every collective waits at most `timeout_seconds` for the other ranks. A rank that dies makes
// mpirun end the job; a rank that stops taking part (a hang, a deadlock, a host that is gone
// without its process being reported) would make the others wait forever in MPI. So collectives
// are started non-blocking and polled: past the deadline, the waiting rank prints which collective
// it was and how long it waited, throws distributed_error, and the communicator aborts the job
// (MPI_Abort) when it is destroyed, instead of finalising with a collective still pending. MPI's
// own errors are returned (MPI_ERRORS_RETURN), not fatal, and become distributed_error too.
// Only MPI's C interface is used: its deprecated C++ bindings stay out (and out of their warnings).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <optional>
#include <utility>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../core/error.hpp"

namespace symflow {

// A collective failed, timed out, or MPI refused a call; the message names the rank, the
// collective and what it was for.
class distributed_error : public error {
 public:
  using error::error;
};

namespace distributed {

struct communicator_options {
  // How long one collective waits for the other ranks. SYMFLOW_DISTRIBUTED_TIMEOUT (seconds) in the
  // environment overrides it.
  double timeout_seconds = 300;
};

class communicator {
 public:
  // Initialises MPI (once per process, MPI_THREAD_FUNNELED: OpenMP threads compute, only the main
  // thread calls MPI) on MPI_COMM_WORLD. A program not started by mpirun is one rank of one.
  communicator(int& argc, char**& argv, communicator_options options = {}) : options_(options) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw distributed_error("distributed: MPI_Init_thread failed");
      owns_mpi_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (const char* t = std::getenv("SYMFLOW_DISTRIBUTED_TIMEOUT")) {
      char* end = nullptr;
      const double seconds = std::strtod(t, &end);
      if (end == t || *end || !(seconds > 0))
        throw distributed_error("distributed: SYMFLOW_DISTRIBUTED_TIMEOUT is '" + std::string(t) +
                                "', not a positive number of seconds");
      options_.timeout_seconds = seconds;
    }
  }
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  // A failed collective leaves requests pending on other ranks, and an exception on one rank leaves
  // the others waiting in their next collective: then end the whole job rather than finalise
  // (which would wait for them). Catch and report errors before this is destroyed.
  ~communicator() {
    if (broken_ || std::uncaught_exceptions() > 0) MPI_Abort(MPI_COMM_WORLD, 1);
    if (owns_mpi_) MPI_Finalize();
  }
  // Ends every rank of the job with `code` (after an error this rank has reported).
  [[noreturn]] void abort(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  double timeout_seconds() const { return options_.timeout_seconds; }
  // "rank 1 of 4".
  std::string describe() const { return "rank " + std::to_string(rank_) + " of " + std::to_string(size_); }

  // data[0, n) summed over the ranks, in place. OpenMPI's all-reduce algorithms (recursive
  // doubling, ring: a + b = b + a bit for bit) give every rank the same bits, which keeps the
  // replicas identical; the MPI standard only recommends it, so data_parallel.hpp's
  // check_replicas tells when another MPI does not (tests/distributed checks after every step).
  // `what` names the data in errors.
  void allreduce_sum(float* data, std::size_t n, const std::string& what) { allreduce(data, n, MPI_FLOAT, what); }
  void allreduce_sum(double* data, std::size_t n, const std::string& what) { allreduce(data, n, MPI_DOUBLE, what); }

  // Root's bytes on every rank (resized there).
  void broadcast(std::vector<unsigned char>& bytes, const std::string& what, int root = 0) {
    std::uint64_t n = bytes.size();
    run("broadcast of the size of " + what, [&](MPI_Request* r) { return MPI_Ibcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, r); });
    if (rank_ != root) bytes.resize(std::size_t(n));
    for (std::uint64_t done = 0; done < n;) {
      const int count = int(std::min<std::uint64_t>(n - done, max_count));
      run("broadcast of " + what,
          [&](MPI_Request* r) { return MPI_Ibcast(bytes.data() + done, count, MPI_BYTE, root, MPI_COMM_WORLD, r); });
      done += std::uint64_t(count);
    }
  }

  // Every rank's `mine` (all of one size), in rank order.
  std::vector<unsigned char> allgather(const std::vector<unsigned char>& mine, const std::string& what) {
    std::vector<unsigned char> all(mine.size() * std::size_t(size_));
    if (mine.size() > max_count) throw distributed_error("distributed: " + describe() + ": " + what + " is too large to gather");
    run("all-gather of " + what, [&](MPI_Request* r) {
      return MPI_Iallgather(mine.data(), int(mine.size()), MPI_BYTE, all.data(), int(mine.size()), MPI_BYTE, MPI_COMM_WORLD, r);
    });
    return all;
  }

  // Compares every rank's `counts` (all of one length) with this rank's: the first rank whose
  // differ, with its counts, or nothing when all agree. A collective: every rank calls it.
  std::optional<std::pair<int, std::vector<std::uint64_t>>> first_differing(const std::vector<std::uint64_t>& counts,
                                                                            const std::string& what) {
    const std::size_t bytes = counts.size() * sizeof(std::uint64_t);
    std::vector<unsigned char> mine(bytes);
    if (bytes) std::memcpy(mine.data(), counts.data(), bytes);
    const std::vector<unsigned char> all = allgather(mine, what);
    for (int r = 0; r < size_; ++r) {
      const unsigned char* theirs = all.data() + std::size_t(r) * bytes;
      if (bytes && std::memcmp(theirs, mine.data(), bytes) != 0) {
        std::vector<std::uint64_t> out(counts.size());
        std::memcpy(out.data(), theirs, bytes);
        return std::pair{r, std::move(out)};
      }
    }
    return std::nullopt;
  }

  void barrier(const std::string& what) {
    run("barrier (" + what + ")", [&](MPI_Request* r) { return MPI_Ibarrier(MPI_COMM_WORLD, r); });
  }

 private:
  static constexpr std::size_t max_count = std::size_t(1) << 28;  // elements per MPI call (an int counts them)

  void allreduce(void* data, std::size_t n, MPI_Datatype type, const std::string& what) {
    int element = 0;
    MPI_Type_size(type, &element);
    if (size_ == 1 || n == 0) return;
    for (std::size_t done = 0; done < n;) {  // at most max_count elements per call (an int counts them)
      const std::size_t chunk = std::min(n - done, max_count);
      void* base = static_cast<unsigned char*>(data) + done * std::size_t(element);
      run("all-reduce of " + what, [&](MPI_Request* r) {
        return MPI_Iallreduce(MPI_IN_PLACE, base, int(chunk), type, MPI_SUM, MPI_COMM_WORLD, r);
      });
      done += chunk;
    }
  }

  // Starts a non-blocking collective and waits for it, at most timeout_seconds.
  template <class Start>
  void run(const std::string& what, Start start) {
    if (broken_) throw distributed_error("distributed: " + describe() + ": " + what + " after an earlier collective failed");
    MPI_Request request = MPI_REQUEST_NULL;
    check(start(&request), what);
    const auto begin = std::chrono::steady_clock::now();
    const auto deadline = begin + std::chrono::duration<double>(options_.timeout_seconds);
    // MPI progresses a collective's rounds only inside MPI calls: poll without pause for the first
    // 100 ms (a step's exchange takes well under that), then every millisecond.
    const auto spin_until = begin + std::chrono::milliseconds(100);
    for (;;) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      const auto now = std::chrono::steady_clock::now();
      if (now > spin_until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (now > deadline) {
        broken_ = true;
        const std::string message = "distributed: " + describe() + ": the " + what + " waited " +
                                    std::to_string(int(options_.timeout_seconds)) +
                                    " s for the other ranks (a rank has stopped or hangs); ending the job";
        std::cerr << message << std::endl;  // before the abort, which may come first in another rank's unwinding
        throw distributed_error(message);
      }
    }
  }
  void check(int code, const std::string& what) {
    if (code == MPI_SUCCESS) return;
    broken_ = true;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    const std::string message = "distributed: " + describe() + ": the " + what + " failed: " + std::string(text, std::size_t(length));
    std::cerr << message << std::endl;
    throw distributed_error(message);
  }

  communicator_options options_;
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false;
  bool broken_ = false;
};

}  // namespace distributed
}  // namespace symflow
