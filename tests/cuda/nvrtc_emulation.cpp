// Host emulation of the NVRTC graph runner's GPU path (symflow/cuda/nvrtc/), for machines without a
// GPU: the kernels the runner generates are compiled as host code, and the CUDA runtime and cuBLAS
// calls it makes are answered by a fake (host memory, a launch that runs every block and thread in
// turn, a column-major GEMM). Checks everything of a run but the real device: generated indexing,
// strides, literals, stored outputs, the kernel-argument layout given to cudaLaunchKernel, the
// schedule and freeing, the host fallbacks and the cuBLAS call's row-major mapping, against the CPU
// interpreter. Not part of the CMake build (it builds in two phases and replaces libcudart):
//   scripts/nvrtc_emulation.sh
// Phase 1 (no PHASE2): writes kernels.inc, the generated kernels of every case as host functions.
// Phase 2 (-DPHASE2): includes it, maps each program's PTX to its host function and runs the cases.
#include <symflow/cuda/nvrtc/graph_runner.hpp>
#include <symflow/graph/binary.hpp>
#include <symflow/graph/json.hpp>
#include <symflow/graph/runtime/builder.hpp>
#include <symflow/graph/runtime/interpreter.hpp>
#include <fstream>
#include <iostream>
#include <random>

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
struct host_kernel { void (*launch)(void** args); };
std::vector<host_kernel> table;
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

struct test_case { std::string name; graph g; runtime_feeds feeds; bool fuse = true; };

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
  return cs;
}

cu::input_specs specs_of(const runtime_feeds& f) {
  cu::input_specs s;
  for (const auto& [n, t] : f) s[n] = {t.type(), t.extents()};
  return s;
}
cu::nvrtc_options opts(bool fuse) { cu::nvrtc_options o; o.arch = "compute_90"; o.fuse = fuse; return o; }

#ifndef PHASE2
int main() {
  std::ofstream out("kernels.inc");
  std::size_t k = 0;
  std::string tab = "struct table_init { table_init() {\n";
  for (auto& c : cases()) {
    cu::graph_runner r(c.g, opts(c.fuse));
    for (const auto& kern : r.kernels(specs_of(c.feeds))) {
      std::string src;
      std::istringstream in(kern.program.source);
      for (std::string line; std::getline(in, line);)
        if (line.rfind("#include", 0) != 0) src += line + "\n";
      out << "namespace g" << k << " {\n#define symflow_group symflow_group_" << k << "\n" << src << "#undef symflow_group\n}\n";
      tab += "  table.push_back({[](void** a) { call_with(&g" + std::to_string(k) + "::symflow_group_" + std::to_string(k) + ", a); }});\n";
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
  for (unsigned b = 0; b < grid.x; ++b)
    for (unsigned t = 0; t < block.x; ++t) { blockIdx.x = b; threadIdx.x = t; table.at(std::size_t(index)).launch(args); }
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
    for (std::size_t i = 0; i < a.size(); ++i) { double p = double(a.data<T>()[i]), q = double(b.data<T>()[i]); d += (p - q) * (p - q); n += q * q; }
  });
  return n ? std::sqrt(d / n) : std::sqrt(d);
}

int main() {
  int k = 0;
  auto cs = cases();
  for (auto& c : cs) {
    cu::graph_runner r(c.g, opts(c.fuse));
    for (const auto& p : r.compile(specs_of(c.feeds))) ptx_to_kernel[std::string(p->image().c_str())] = k++;
  }
  std::cout << k << " kernels mapped (table " << table.size() << ")\n";
  bool ok = true;
  for (auto& c : cs) {
    interpreter_options io; io.fuse = c.fuse;
    const auto want = interpreter(c.g, io).run(c.feeds);
    cu::graph_runner r(c.g, opts(c.fuse));
    cu::graph_feeds f;
    for (const auto& [n, t] : c.feeds) f.emplace(n, t);
    launches = gemms = 0;
    const auto got = r.run_to_host(f);
    std::cout << c.name << ": " << launches << " launches, " << gemms << " gemms, stats fused " << r.last_stats().fused_nodes
              << " host " << r.last_stats().host_nodes << " device " << r.last_stats().device_nodes << "; rel errors";
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double e = rel(got[i], want[i]);
      std::cout << " " << e;
      if (!(e < 1e-5)) ok = false;
    }
    std::cout << "\n";
  }
  std::cout << (ok ? "ALL OK\n" : "MISMATCH\n");
  return ok ? 0 : 1;
}
#endif
