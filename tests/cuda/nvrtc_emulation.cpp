// Host emulation of the NVRTC graph runner's GPU path (symflow/cuda/nvrtc/), for machines without a
// GPU: the kernels the runner generates are compiled as host code, and the CUDA runtime and cuBLAS
// calls it makes are answered by a fake (host memory, a launch that runs every block and thread in
// turn, a column-major GEMM; reduction kernels, which use __shared__ memory and __syncthreads, run
// each block's threads as fibers (ucontext) switched at every barrier, in a fixed order). Checks
// everything of a run but the real device: generated indexing,
// strides, literals, stored outputs, the kernel-argument layout given to cudaLaunchKernel, the
// schedule and freeing, the host fallbacks and the cuBLAS call's row-major mapping, against the CPU
// interpreter. Not part of the CMake build (it builds in two phases and replaces libcudart):
//   scripts/nvrtc_emulation.sh
// Phase 1 (no PHASE2): writes kernels.inc, the generated kernels of every case as host functions.
// Phase 2 (-DPHASE2): includes it, maps each program's PTX to its host function and runs the cases.
#include <symflow/cuda/nvrtc/graph_runner.hpp>
#include <symflow/io/binary.hpp>
#include <symflow/io/json.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <fstream>
#include <iostream>
#include <random>
#include <ucontext.h>

using namespace symflow;
namespace cu = symflow::cuda;

struct emu_dim { unsigned x = 0, y = 0, z = 0; };
emu_dim blockIdx, blockDim, gridDim, threadIdx;
inline float __int_as_float(unsigned long long v) { std::uint32_t b = std::uint32_t(v); float f; std::memcpy(&f, &b, 4); return f; }
inline double __longlong_as_double(unsigned long long v) { double f; std::memcpy(&f, &v, 8); return f; }
#undef __global__  // cuda_runtime_api.h defines it as an attribute; the generated kernels run as host functions
#define __global__
template <class... P>
void call_with(void (*f)(P...), void** args) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { f(*static_cast<std::remove_cv_t<P>*>(args[I])...); }(std::index_sequence_for<P...>{});
}
struct host_kernel { void (*launch)(void** args); bool sync = false; };
std::vector<host_kernel> table;
// Threads of a block as fibers: __syncthreads() returns to the scheduler, which resumes every other
// thread of the block up to the same barrier before any goes on.
namespace fibers {
ucontext_t scheduler;
std::vector<ucontext_t> threads;
std::vector<std::vector<char>> stacks;
std::vector<char> finished;
unsigned current = 0;
host_kernel* kernel = nullptr;
void** args = nullptr;
void entry() {
  kernel->launch(args);
  finished[current] = 1;  // returns to the scheduler (uc_link)
}
void run_block(unsigned block_threads) {
  if (threads.size() < block_threads) {
    threads.resize(block_threads);
    stacks.resize(block_threads, std::vector<char>(256 * 1024));
  }
  finished.assign(block_threads, 0);
  for (unsigned t = 0; t < block_threads; ++t) {
    getcontext(&threads[t]);
    threads[t].uc_stack.ss_sp = stacks[t].data();
    threads[t].uc_stack.ss_size = stacks[t].size();
    threads[t].uc_link = &scheduler;
    makecontext(&threads[t], entry, 0);
  }
  for (bool running = true; running;) {
    running = false;
    for (unsigned t = 0; t < block_threads; ++t) {
      if (finished[t]) continue;
      current = t;
      threadIdx.x = t;
      swapcontext(&scheduler, &threads[t]);
      if (!finished[t]) running = true;
    }
  }
}
}  // namespace fibers
inline void __syncthreads() { swapcontext(&fibers::threads[fibers::current], &fibers::scheduler); }
#undef __shared__
#define __shared__ static  // one copy, shared by the block's fibers (blocks run one after another)
#ifdef PHASE2
#include "kernels.inc"
#endif

runtime_tensor random_runtime(dtype d, runtime_extents e, std::uint32_t seed) {
  runtime_tensor t(d, std::move(e));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2., 2.);
  for (std::size_t i = 0; i < t.size(); ++i) visit_dtype(d, [&](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, bool>) t.data<T>()[i] = u(rng) > 0;
    else if constexpr (std::is_integral_v<T>) t.data<T>()[i] = T(std::floor(u(rng) * 5));
    else t.data<T>()[i] = T(u(rng));
  });
  return t;
}
graph_tensor random_graph_tensor(std::vector<std::int64_t> e, std::uint32_t seed, double scale) {
  runtime_extents r(e.begin(), e.end());
  auto t = random_runtime(dtype::f32, r, seed);
  for (std::size_t i = 0; i < t.size(); ++i) t.data<float>()[i] *= float(scale);
  return t.to_graph_tensor();
}

struct test_case { std::string name; graph g; runtime_feeds feeds; bool fuse = true; double tolerance = 1e-5; unsigned block = 256; };

std::vector<test_case> cases() {
  std::vector<test_case> cs;
  auto vec = [](std::size_t n) { runtime_feeds f; std::uint32_t s = 1; for (const char* c : {"a", "b", "c", "d"}) f.emplace(c, random_runtime(dtype::f32, {n}, s++)); return f; };
  auto w1 = [] { graph_builder b; auto a = b.input("a", dtype::f32, {-1}); auto bb = b.input("b", dtype::f32, {-1}); auto c = b.input("c", dtype::f32, {-1}); auto d = b.input("d", dtype::f32, {-1}); return b.build({a * bb + c * sin(d)}); };
  auto w2 = [] { graph_builder b; auto a = b.input("a", dtype::f32, {-1}); auto bb = b.input("b", dtype::f32, {-1}); auto c = b.input("c", dtype::f32, {-1}); auto d = b.input("d", dtype::f32, {-1}); return b.build({tanh(a * bb + c) * exp(-d * d) + 0.5 * a}); };
  cs.push_back({"W1 100003", w1(), vec(100003)});
  cs.push_back({"W1 1", w1(), vec(1)});
  cs.push_back({"W2 4099", w2(), vec(4099)});
  {
    graph_builder b;
    auto x = b.input("x", dtype::f32, {-1, 21});
    auto row = b.input("row", dtype::f32, {21});
    auto col = b.input("col", dtype::f32, {-1, 1});
    graph g = b.build({tanh(x * row) - col, sigmoid(col * 2.0), x, col * 3.0});
    runtime_feeds f;
    f.emplace("x", random_runtime(dtype::f32, {333, 21}, 1));
    f.emplace("row", random_runtime(dtype::f32, {21}, 2));
    f.emplace("col", random_runtime(dtype::f32, {333, 1}, 3));
    cs.push_back({"broadcast", g, f});
    cs.push_back({"broadcast unfused", g, f, false});
  }
  {  // rank 3 with a middle broadcast axis, f64, and a literal output
    graph_builder b;
    auto x = b.input("x", dtype::f64, {-1, 5, 7});
    auto m = b.input("m", dtype::f64, {-1, 1, 7});
    auto lit = b.literal(2.5, dtype::f64);
    graph g = b.build({exp(x - m) * lit + maximum(x, m), lit, reduce_value(ops::sum_op{}, x * m, {1}, false)});
    runtime_feeds f;
    f.emplace("x", random_runtime(dtype::f64, {3, 5, 7}, 4));
    f.emplace("m", random_runtime(dtype::f64, {3, 1, 7}, 5));
    cs.push_back({"rank3 f64", g, f});
  }
  {  // integers, masks, casts, where
    graph_builder b;
    auto i = b.input("i", dtype::i32, {-1});
    auto j = b.input("j", dtype::i64, {-1});
    auto mask = b.apply("greater", {i, b.apply("neg", {i})});
    auto fi = cast(i, dtype::f32);
    auto w = where(mask, fi * 2.0, fi - 1.0);
    graph g = b.build({w, cast(mask, dtype::i64) + j, mask, cast(w, dtype::i32)});
    runtime_feeds f;
    f.emplace("i", random_runtime(dtype::i32, {1000}, 6));
    f.emplace("j", random_runtime(dtype::i64, {1000}, 7));
    cs.push_back({"ints", g, f});
  }
  {  // MLP forward with embedded parameters, log_softmax; also via JSON and binary
    graph_builder b;
    auto x = b.input("x", dtype::f32, {-1, 784});
    auto W1 = b.parameter("W1", dtype::f32, {784, 64}, random_graph_tensor({784, 64}, 11, 0.05));
    auto b1 = b.parameter("b1", dtype::f32, {64}, random_graph_tensor({64}, 12, 0.1));
    auto W2 = b.parameter("W2", dtype::f32, {64, 10}, random_graph_tensor({64, 10}, 13, 0.2));
    auto b2 = b.parameter("b2", dtype::f32, {10}, random_graph_tensor({10}, 14, 0.1));
    auto h = relu(matmul(x, W1) + b1);
    auto logits = matmul(h, W2) + b2;
    graph g = b.build({log_softmax(logits), logits, transpose(h)});
    runtime_feeds f;
    f.emplace("x", random_runtime(dtype::f32, {16, 784}, 8));
    cs.push_back({"mlp", g, f});
    cs.push_back({"mlp json", load_graph_json(save_graph_json(g)), f});
    cs.push_back({"mlp binary", load_graph_binary(save_graph_binary(g)), f});
    // batched x: [2, 16, 784] x [784, 64] folded into one GEMM
    graph_builder b3;
    auto x3 = b3.input("x", dtype::f32, {2, -1, 784});
    auto W = b3.parameter("W1", dtype::f32, {784, 64}, random_graph_tensor({784, 64}, 11, 0.05));
    graph g3 = b3.build({relu(matmul(x3, W))});
    runtime_feeds f3;
    f3.emplace("x", random_runtime(dtype::f32, {2, 16, 784}, 9));
    cs.push_back({"matmul 3d x 2d", g3, f3});
  }
  {  // reductions over rows and over all axes, f32 and f64, fused with the group feeding them or reading
     // memory; one over a leading axis (host)
    graph_builder b;
    auto x = b.input("x", dtype::f32, {-1, -1});
    auto z = b.input("z", dtype::f64, {-1, -1});
    auto e = exp(x) * 2.0;
    graph g = b.build({reduce_value(ops::sum_op{}, e, {1}, false), reduce_value(ops::mean_op{}, x * x, {}, false),
                       reduce_value(ops::max_op{}, x, {1}, true), reduce_value(ops::min_op{}, z - 1.0, {1}, false),
                       reduce_value(ops::sum_op{}, z, {}, false), reduce_value(ops::mean_op{}, tanh(z), {1}, true),
                       reduce_value(ops::sum_op{}, x, {0}, false), e + 1.0});
    for (auto [r, c] : {std::pair<std::size_t, std::size_t>{1, 1}, {1023, 37}, {3, 100003}, {100003, 1}}) {
      runtime_feeds f;
      f.emplace("x", random_runtime(dtype::f32, {r, c}, 21));
      f.emplace("z", random_runtime(dtype::f64, {r, c}, 22));
      const std::string name = "reductions " + std::to_string(r) + "x" + std::to_string(c);
      cs.push_back({name, g, f, true, 1e-6});
      if (r == 1023) {
        cs.push_back({name + " unfused", g, f, false, 1e-6});
        cs.push_back({name + " block_size 32", g, f, true, 1e-6, 32});
      }
      if (r == 3) cs.push_back({name + " block_size 1000", g, f, true, 1e-6, 1000});  // reductions: 512 threads
    }
    for (auto [r, c] : {std::pair<std::size_t, std::size_t>{5, 0}, {0, 7}}) {  // empty rows, no rows
      runtime_feeds f;
      f.emplace("x", random_runtime(dtype::f32, {r, c}, 21));
      f.emplace("z", random_runtime(dtype::f64, {r, c}, 22));
      cs.push_back({"reductions " + std::to_string(r) + "x" + std::to_string(c), g, f, true, 1e-6});
    }
  }
  {  // all axes of vectors: 1, 1023, 100003 elements; rank 3 over the trailing two axes; integers
    graph_builder b;
    auto x = b.input("x", dtype::f32, {-1});
    auto z = b.input("z", dtype::f64, {-1});
    graph g = b.build({reduce_value(ops::sum_op{}, x * x, {}, false), reduce_value(ops::mean_op{}, x, {}, false),
                       reduce_value(ops::max_op{}, sin(x), {}, false), reduce_value(ops::min_op{}, x, {}, true),
                       reduce_value(ops::sum_op{}, z * 3.0, {}, false), reduce_value(ops::max_op{}, z, {}, false)});
    for (std::size_t n : {1u, 1023u, 100003u}) {
      runtime_feeds f;
      f.emplace("x", random_runtime(dtype::f32, {n}, 23));
      f.emplace("z", random_runtime(dtype::f64, {n}, 24));
      cs.push_back({"all axes " + std::to_string(n), g, f, true, 1e-6});
    }
    graph_builder b3;
    auto y = b3.input("y", dtype::f32, {-1, 5, 7});
    auto i = b3.input("i", dtype::i32, {-1, 9});
    graph g3 = b3.build({reduce_value(ops::sum_op{}, y * 0.5, {1, 2}, false), reduce_value(ops::mean_op{}, y, {2}, true),
                         reduce_value(ops::sum_op{}, i, {1}, false), reduce_value(ops::max_op{}, i * i, {}, false),
                         reduce_value(ops::mean_op{}, i, {1}, false)});
    runtime_feeds f3;
    f3.emplace("y", random_runtime(dtype::f32, {33, 5, 7}, 25));
    f3.emplace("i", random_runtime(dtype::i32, {33, 9}, 26));
    cs.push_back({"rank3 trailing axes, integers", g3, f3, true, 1e-6});
  }
  {  // views read through strides by the kernels consuming them; materialised (alias or strided copy)
     // where returned or read by matmul, another view or a host node
    graph_builder b;
    auto x = b.input("x", dtype::f32, {-1, 21});
    auto row = b.input("row", dtype::f32, {-1});
    auto W = b.input("W", dtype::f32, {21, 8});
    auto xt = transpose(x);                            // [21, n]
    auto s1 = slice(x, 1, 3, 17);                      // [n, 14], strided
    auto s0 = slice(x, 0, 1, 4);                       // [3, 21], contiguous
    auto flat = reshape(x * 2.0, {-1});                // [n * 21]
    auto e = b.apply("expand_dims", {row}, {{"axes", std::vector<std::int64_t>{1}}});  // [n, 1]
    graph g = b.build({tanh(xt) * 2.0 + 1.0,                                  // transpose -> group
                       s1 * 3.0 - e,                                          // slice + expand_dims -> group
                       flat + 1.0,                                            // reshape of a group's value
                       reduce_value(ops::sum_op{}, xt, {1}, false),           // transpose -> reduction
                       reduce_value(ops::max_op{}, s1, {}, false),            // slice -> reduction, all axes
                       xt, s0,                                                // returned: copy, alias
                       matmul(transpose(W), transpose(slice(x, 0, 0, 8))),   // views feeding matmul; a chain
                       reduce_value(ops::sum_op{}, xt, {0}, false)});         // a host reduction of a view
    for (std::size_t n : {8u, 33u, 1023u}) {  // (slice(x, 0, 0, 8) needs 8 rows)
      runtime_feeds f;
      f.emplace("x", random_runtime(dtype::f32, {n, 21}, 31));
      f.emplace("row", random_runtime(dtype::f32, {n}, 32));
      f.emplace("W", random_runtime(dtype::f32, {21, 8}, 33));
      cs.push_back({"views " + std::to_string(n), g, f, true, 1e-6});
      if (n == 33) cs.push_back({"views 33 unfused", g, f, false, 1e-6});
    }
    graph_builder b1;  // f64, rank 3 permutation feeding a broadcast group
    auto y = b1.input("y", dtype::f64, {-1, 4, 6});
    auto m = b1.input("m", dtype::f64, {6, 1, 1});
    graph g1 = b1.build({exp(transpose(y, {2, 0, 1})) * m, reshape(transpose(y, {0, 2, 1}), {-1, 4})});
    runtime_feeds f1;
    f1.emplace("y", random_runtime(dtype::f64, {5, 4, 6}, 34));
    f1.emplace("m", random_runtime(dtype::f64, {6, 1, 1}, 35));
    cs.push_back({"views rank3 f64", g1, f1, true, 1e-12});
  }
  return cs;
}

cu::input_specs specs_of(const runtime_feeds& f) {
  cu::input_specs s;
  for (const auto& [n, t] : f) s[n] = {t.type(), t.extents()};
  return s;
}
cu::nvrtc_options opts(bool fuse, unsigned block = 256) { cu::nvrtc_options o; o.arch = "compute_90"; o.fuse = fuse; o.block_size = block; return o; }

#ifndef PHASE2
int main() {
  std::ofstream out("kernels.inc");
  std::size_t k = 0;
  std::string tab = "struct table_init { table_init() {\n";
  for (auto& c : cases()) {
    cu::graph_runner r(c.g, opts(c.fuse, c.block));
    for (const auto& kern : r.kernels(specs_of(c.feeds))) {
      std::string src;
      std::istringstream in(kern.program.source);
      for (std::string line; std::getline(in, line);)
        if (line.rfind("#include", 0) != 0) src += line + "\n";
      out << "namespace g" << k << " {\n#define symflow_group symflow_group_" << k << "\n" << src << "#undef symflow_group\n}\n";
      tab += "  table.push_back({[](void** a) { call_with(&g" + std::to_string(k) + "::symflow_group_" + std::to_string(k) + ", a); }, " +
             (src.find("__syncthreads") != std::string::npos ? "true" : "false") + "});\n";
      ++k;
    }
  }
  out << tab << "} } table_init_instance;\n";
  std::cout << k << " kernels\n";
}
#else
// ---- fake CUDA runtime and cuBLAS ----
std::size_t gemms = 0;
template <class T>
void gemm_cm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {
  if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N) std::abort();
  for (int j = 0; j < n; ++j) for (int i = 0; i < m; ++i) {
    double acc = 0; for (int p = 0; p < k; ++p) acc += double(A[i + p * lda]) * double(B[p + j * ldb]);
    C[i + j * ldc] = T(*alpha * T(acc) + (*beta == T(0) ? T(0) : *beta * C[i + j * ldc]));
  }
  ++gemms;
}
std::map<std::string, int> ptx_to_kernel;
std::size_t launches = 0;
extern "C" {
cudaError_t cudaMalloc(void** p, size_t n) { *p = std::malloc(n ? n : 1); return cudaSuccess; }
cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memcpy(d, s, n); return cudaSuccess; }
cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* c) { *c = 1; return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t) { return "fake"; }
const char* cudaGetErrorString(cudaError_t) { return "fake"; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) { *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : 0; return cudaSuccess; }
cudaError_t cudaLibraryLoadData(cudaLibrary_t* lib, const void* code, cudaJitOption*, void**, unsigned, cudaLibraryOption*, void**, unsigned) {
  auto it = ptx_to_kernel.find(std::string(static_cast<const char*>(code)));
  if (it == ptx_to_kernel.end()) { std::cerr << "unknown PTX\n"; std::abort(); }
  *lib = reinterpret_cast<cudaLibrary_t>(std::intptr_t(it->second + 1));
  return cudaSuccess;
}
cudaError_t cudaLibraryUnload(cudaLibrary_t) { return cudaSuccess; }
cudaError_t cudaLibraryGetKernel(cudaKernel_t* k, cudaLibrary_t lib, const char* name) {
  if (std::string(name) != "symflow_group") std::abort();
  *k = reinterpret_cast<cudaKernel_t>(lib);
  return cudaSuccess;
}
cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t, cudaStream_t) {
  const int index = int(reinterpret_cast<std::intptr_t>(func)) - 1;
  gridDim.x = grid.x; blockDim.x = block.x;
  host_kernel& k = table.at(std::size_t(index));
  for (unsigned b = 0; b < grid.x; ++b) {
    blockIdx.x = b;
    if (k.sync) {
      fibers::kernel = &k;
      fibers::args = args;
      fibers::run_block(block.x);
    } else {
      for (unsigned t = 0; t < block.x; ++t) { threadIdx.x = t; k.launch(args); }
    }
  }
  ++launches;
  return cudaSuccess;
}
cublasStatus_t cublasCreate(cublasHandle_t* h) { *h = reinterpret_cast<cublasHandle_t>(std::intptr_t(1)); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc) { gemm_cm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha, const double* A, int lda, const double* B, int ldb, const double* beta, double* C, int ldc) { gemm_cm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); return CUBLAS_STATUS_SUCCESS; }
}

double rel(const runtime_tensor& a, const runtime_tensor& b) {
  if (a.type() != b.type() || a.extents() != b.extents()) return 1e30;
  double d = 0, n = 0;
  visit_dtype(a.type(), [&](auto x) {
    using T = decltype(x);
    for (std::size_t i = 0; i < a.size(); ++i) {
      double p = double(a.data<T>()[i]), q = double(b.data<T>()[i]);
      if (std::isfinite(q)) n += q * q;
      if (p == q || (std::isnan(p) && std::isnan(q))) continue;  // equal (also infinities; NaN: the mean of nothing)
      d += (p - q) * (p - q);
    }
  });
  return n ? std::sqrt(d / n) : std::sqrt(d);
}

int main() {
  int k = 0;
  auto cs = cases();
  for (auto& c : cs) {
    cu::graph_runner r(c.g, opts(c.fuse, c.block));
    for (const auto& p : r.compile(specs_of(c.feeds))) ptx_to_kernel[std::string(p->image().c_str())] = k++;
  }
  std::cout << k << " kernels mapped (table " << table.size() << ")\n";
  bool ok = true;
  double worst = 0;
  for (auto& c : cs) {
    interpreter_options io; io.fuse = c.fuse;
    const auto want = interpreter(c.g, io).run(c.feeds);
    cu::graph_runner r(c.g, opts(c.fuse, c.block));
    cu::graph_feeds f;
    for (const auto& [n, t] : c.feeds) f.emplace(n, t);
    launches = gemms = 0;
    const auto got = r.run_to_host(f);
    std::cout << c.name << ": " << launches << " launches, " << gemms << " gemms, stats fused " << r.last_stats().fused_nodes
              << " host " << r.last_stats().host_nodes << " device " << r.last_stats().device_nodes << " reductions "
              << r.last_stats().device_reductions << " (fused " << r.last_stats().fused_reductions << ") views folded "
              << r.last_stats().views_folded << " aliased " << r.last_stats().views_aliased << " copied "
              << r.last_stats().views_copied << "; rel errors";
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double e = rel(got[i], want[i]);
      std::cout << " " << e;
      worst = std::max(worst, e);
      if (!(e < c.tolerance)) ok = false;
    }
    // Plan cache: a second run with the same extents plans nothing (no sources, no cache lookups)
    // and gives the same bits.
    const auto lookups = cu::kernel_cache::global().stats().memory_hits + cu::kernel_cache::global().stats().compiled;
    const bool first_planned = r.last_stats().planned;
    const auto again = r.run_to_host(f);
    const bool cached = first_planned && !r.last_stats().planned && r.plans_made() == 1 &&
                        cu::kernel_cache::global().stats().memory_hits + cu::kernel_cache::global().stats().compiled == lookups;
    bool same = again.size() == got.size();
    for (std::size_t i = 0; same && i < got.size(); ++i)
      same = again[i].byte_size() == got[i].byte_size() && std::memcmp(again[i].bytes(), got[i].bytes(), got[i].byte_size()) == 0;
    std::cout << (cached && same ? "; rerun from the plan cache, same bits" : "; PLAN CACHE FAILED") << "\n";
    ok = ok && cached && same;
  }
  {  // Other extents make another plan; the first extents' plan is still there.
    auto w = cs.front();  // W1
    cu::graph_runner r(w.g, opts(true));
    const auto feeds_of = [](std::size_t n) {
      cu::graph_feeds f;
      std::uint32_t s = 1;
      for (const char* c : {"a", "b", "c", "d"}) f.emplace(c, random_runtime(dtype::f32, {n}, s++));
      return f;
    };
    r.run(feeds_of(100003));
    r.run(feeds_of(1));
    r.run(feeds_of(100003));
    const bool good = r.plans_made() == 2 && !r.last_stats().planned;
    std::cout << "plan cache across extents (100003, 1, 100003): " << r.plans_made() << " plans" << (good ? "" : " FAILED") << "\n";
    ok = ok && good;
  }
  std::cout << "max rel error " << worst << "\n";
  std::cout << (ok ? "ALL OK\n" : "MISMATCH\n");
  return ok ? 0 : 1;
}
#endif
