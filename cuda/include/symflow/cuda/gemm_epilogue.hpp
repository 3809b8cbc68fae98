#pragma once
// act(matmul(a, b) + bias) as one cuBLASLt GEMM: the epilogue adds the bias (a vector along the
// product's rows) and applies the activation in the GEMM's own kernel, instead of a GEMM followed by a
// fused pass that reads the product back. The pattern is recognised on the evaluator tree's types: the
// matmul by its op type (as kernel_impl<ops::matmul_op> is), the addition and the activation by what
// their ops declare they compute (known_function, expr/known_function.hpp), never by an op's name.
//
// Only the root of an evaluation (an output) is rewritten: inside a larger group the bias and the
// activation still fuse into the consumer's kernel, where they cost nothing extra. At run time the
// epilogue is skipped, and the root runs exactly as before (GEMM, then one map), when it is switched
// off (options::gemm_epilogues), when the extents do not fit it, when the evaluation has already
// computed the plain product for another use (reading it is cheaper than a second GEMM), or when
// cuBLASLt offers no algorithm for the layouts and alignments at hand.
#include <cublasLt.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <symflow/expr/known_function.hpp>
#include <symflow/ops/matmul.hpp>

#include "fusion_groups.hpp"
#include "kernel_ops.hpp"

namespace symflow::cuda::detail {

// One cuBLASLt handle per thread and device, as for cuBLAS (kernel_ops.hpp).
inline cublasLtHandle_t cublaslt_handle() {
  struct handles {
    cublasLtHandle_t by_device[8] = {};
    ~handles() {
      for (cublasLtHandle_t& h : by_device)
        if (h) (void)cublasLtDestroy(h);
    }
  };
  static thread_local handles cache;
  int dev = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev >= 8) throw cuda_error("symflow::cuda: devices past the eighth are not supported");
  cublasLtHandle_t& h = cache.by_device[dev];
  if (!h) SYMFLOW_CUBLAS_CHECK(cublasLtCreate(&h));
  return h;
}

// ---- the pattern, on evaluator types ----------------------------------------------------------

template <class Ev>
inline constexpr bool is_matmul_eval_v = false;
template <class Node, class A, class B>
inline constexpr bool is_matmul_eval_v<kernel_eval<Node, A, B>> = std::is_same_v<typename Node::op_type, ops::matmul_op>;

// The products a single cuBLASLt GEMM with a row-broadcast bias covers: [M,K] x [K,N], and
// [B,M,K] x [K,N] with the batches folded into the rows.
template <class Ev>
constexpr bool epilogue_product() {
  if constexpr (!is_matmul_eval_v<Ev>) {
    return false;
  } else {
    using A = std::remove_cvref_t<decltype(std::get<0>(std::declval<Ev&>().operands))>;
    using B = std::remove_cvref_t<decltype(std::get<1>(std::declval<Ev&>().operands))>;
    using T = typename Ev::value_type;
    return (std::is_same_v<T, float> || std::is_same_v<T, double>) && B::rank == 2 && (A::rank == 2 || A::rank == 3);
  }
}

// matmul(a, b) + bias or bias + matmul(a, b), bias a vector of the product's dtype.
template <class Ev>
struct bias_add_pattern {
  static constexpr bool matches = false;
};
template <class Op, class T, std::size_t R, class X, class Y>
struct bias_add_pattern<elementwise_eval<Op, T, R, X, Y>> {
  static constexpr bool product_first = epilogue_product<X>() && Y::rank == 1;
  static constexpr bool product_second = !product_first && epilogue_product<Y>() && X::rank == 1;
  static constexpr bool matches = known_function_of<Op>() == known_function::addition &&
                                  (product_first || product_second) &&
                                  std::is_same_v<typename X::value_type, typename Y::value_type>;
  static auto& product(elementwise_eval<Op, T, R, X, Y>& e) { return std::get<product_first ? 0 : 1>(e.children); }
  static const auto& product(const elementwise_eval<Op, T, R, X, Y>& e) {
    return std::get<product_first ? 0 : 1>(e.children);
  }
  static auto& bias(elementwise_eval<Op, T, R, X, Y>& e) { return std::get<product_first ? 1 : 0>(e.children); }
  static const auto& bias(const elementwise_eval<Op, T, R, X, Y>& e) { return std::get<product_first ? 1 : 0>(e.children); }
};

// What an activation's known function becomes in a cuBLASLt epilogue (none: not one cuBLASLt has).
constexpr bool epilogue_activation(known_function f) { return f == known_function::relu; }

// The roots that run as one GEMM with an epilogue: act(product + bias), act(product), product + bias.
template <class Ev>
struct epilogue_pattern {
  static constexpr bool matches = false;
};
template <class Op, class T, std::size_t R, class C>
  requires(epilogue_activation(known_function_of<Op>()) && (bias_add_pattern<C>::matches || epilogue_product<C>()))
struct epilogue_pattern<elementwise_eval<Op, T, R, C>> {
  using root_type = elementwise_eval<Op, T, R, C>;
  static constexpr bool matches = true;
  static constexpr bool has_bias = bias_add_pattern<C>::matches;
  static constexpr known_function activation = known_function_of<Op>();
  static auto& product(root_type& e) {
    if constexpr (has_bias) return bias_add_pattern<C>::product(std::get<0>(e.children));
    else return std::get<0>(e.children);
  }
  static const auto& product(const root_type& e) {
    if constexpr (has_bias) return bias_add_pattern<C>::product(std::get<0>(e.children));
    else return std::get<0>(e.children);
  }
  static auto& bias(root_type& e) { return bias_add_pattern<C>::bias(std::get<0>(e.children)); }
  static const auto& bias(const root_type& e) { return bias_add_pattern<C>::bias(std::get<0>(e.children)); }
  // "dense1/relu(dense1/add(dense1/matmul(x, W), b))": the product is computed inside, not read.
  static std::string group_text(const root_type& e) {
    const auto& p = product(e);
    std::string inner = p.source.text() + "(" + p.operand_list() + ")";
    if constexpr (has_bias) {
      const auto& add = std::get<0>(e.children);
      std::string bias_text;
      bias(e).describe(bias_text);
      inner = add.source.text() + "(" + (bias_add_pattern<C>::product_first ? inner + ", " + bias_text
                                                                             : bias_text + ", " + inner) + ")";
    }
    return e.source.text() + "(" + inner + ")";
  }
};
template <class Op, class T, std::size_t R, class X, class Y>
  requires(bias_add_pattern<elementwise_eval<Op, T, R, X, Y>>::matches)
struct epilogue_pattern<elementwise_eval<Op, T, R, X, Y>> {
  using root_type = elementwise_eval<Op, T, R, X, Y>;
  using add_pattern = bias_add_pattern<root_type>;
  static constexpr bool matches = true;
  static constexpr bool has_bias = true;
  static constexpr known_function activation = known_function::none;
  static auto& product(root_type& e) { return add_pattern::product(e); }
  static const auto& product(const root_type& e) { return add_pattern::product(e); }
  static auto& bias(root_type& e) { return add_pattern::bias(e); }
  static const auto& bias(const root_type& e) { return add_pattern::bias(e); }
  static std::string group_text(const root_type& e) {
    const auto& p = product(e);
    const std::string product_text = p.source.text() + "(" + p.operand_list() + ")";
    std::string bias_text;
    bias(e).describe(bias_text);
    return e.source.text() + "(" + (add_pattern::product_first ? product_text + ", " + bias_text
                                                               : bias_text + ", " + product_text) + ")";
  }
};

// ---- cuBLASLt ---------------------------------------------------------------------------------

// Owners of the cuBLASLt descriptors one call needs (host objects, created per call: cheap).
struct lt_matmul_desc {
  cublasLtMatmulDesc_t d = nullptr;
  lt_matmul_desc(cublasComputeType_t compute, cudaDataType_t scale) {
    SYMFLOW_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, compute, scale));
  }
  ~lt_matmul_desc() {
    if (d) (void)cublasLtMatmulDescDestroy(d);
  }
  lt_matmul_desc(const lt_matmul_desc&) = delete;
  lt_matmul_desc& operator=(const lt_matmul_desc&) = delete;
  template <class V>
  void set(cublasLtMatmulDescAttributes_t a, const V& v) {
    SYMFLOW_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)));
  }
};
struct lt_layout {
  cublasLtMatrixLayout_t l = nullptr;
  lt_layout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
    SYMFLOW_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  }
  ~lt_layout() {
    if (l) (void)cublasLtMatrixLayoutDestroy(l);
  }
  lt_layout(const lt_layout&) = delete;
  lt_layout& operator=(const lt_layout&) = delete;
};
struct lt_preference {
  cublasLtMatmulPreference_t p = nullptr;
  lt_preference() { SYMFLOW_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p)); }
  ~lt_preference() {
    if (p) (void)cublasLtMatmulPreferenceDestroy(p);
  }
  lt_preference(const lt_preference&) = delete;
  lt_preference& operator=(const lt_preference&) = delete;
  template <class V>
  void set(cublasLtMatmulPreferenceAttributes_t a, const V& v) {
    SYMFLOW_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, a, &v, sizeof(v)));
  }
};

// The largest power of two (up to 256) dividing an address: cuBLASLt's algorithms differ in the
// alignment they need, and a view into a larger buffer may start anywhere.
inline std::uint32_t address_alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

// Everything cuBLASLt's heuristic looks at, so that its answer can be reused: training runs the same
// shapes at every step, and the query costs more host time than the launch.
struct lt_problem {
  int device = 0;
  int compute = 0, type = 0, epilogue = 0, trans_a = 0, trans_b = 0;
  std::uint64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0;
  std::uint32_t align_a = 0, align_b = 0, align_d = 0, align_bias = 0;
  bool operator==(const lt_problem&) const = default;
};
struct lt_choice {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
};

// Workspace cuBLASLt may use (from the evaluation's stream-ordered scratch memory).
inline constexpr std::size_t lt_max_workspace = std::size_t(4) << 20;

inline lt_choice lt_heuristic(cublasLtHandle_t h, const lt_problem& key, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d) {
  static thread_local std::vector<std::pair<lt_problem, lt_choice>> cache;
  for (const auto& [k, c] : cache)
    if (k == key) return c;
  lt_preference pref;
  pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t(lt_max_workspace));
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d);
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(h, desc, a, b, d, d, pref.p, 1, &result, &returned);
  lt_choice c;
  // No algorithm for this combination (NOT_SUPPORTED, or INVALID_VALUE for an epilogue the data type
  // lacks) is an answer, not an error: the caller falls back to GEMM + map.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED && status != CUBLAS_STATUS_INVALID_VALUE) SYMFLOW_CUBLAS_CHECK(status);
  if (status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    c.found = true;
    c.algo = result.algo;
    c.workspace = result.workspaceSize;
  }
  constexpr std::size_t cache_limit = 256;
  if (cache.size() >= cache_limit) cache.erase(cache.begin());
  cache.emplace_back(key, c);
  return c;
}

// "cuBLASLt GEMM + bias + relu epilogue (FP32)"
inline std::string epilogue_method(bool has_bias, known_function activation, bool f64, bool tf32) {
  std::string s = "cuBLASLt GEMM";
  if (has_bias) s += " + bias";
  if (activation == known_function::relu) s += " + relu";
  s += " epilogue";
  s += f64 ? " (FP64)" : tf32 ? " (TF32 tensor cores)" : " (FP32)";
  return s;
}

// ---- the root evaluator -----------------------------------------------------------------------

// Wraps the root's ordinary evaluator, which runs unchanged whenever the epilogue cannot.
template <class Root>
struct gemm_epilogue_eval {
  using pattern = epilogue_pattern<Root>;
  using value_type = typename Root::value_type;
  using T = value_type;
  static constexpr std::size_t rank = Root::rank;
  Root root;
  extents_t<rank> extents{};
  node_ref source{};
  bool enabled = true;

  template <class Ctx>
  gemm_epilogue_eval(Root r, const Ctx& ctx) : root(std::move(r)), extents(root.extents), source(root.source),
                                               enabled(ctx.gemm_epilogues) {}

  // Whether the epilogue applies, as far as the host knows before running: switched on, extents
  // within cuBLASLt's 32-bit limits, a bias of the product's width.
  bool expected() const {
    if (!enabled) return false;
    const auto& p = pattern::product(root);
    constexpr std::size_t RA = std::remove_cvref_t<decltype(std::get<0>(p.operands))>::rank;
    const std::size_t M = extents[rank - 2], N = extents[rank - 1], K = std::get<0>(p.operands).extents[RA - 1];
    const std::size_t batches = rank == 3 ? extents[0] : 1;
    constexpr std::size_t limit = std::size_t(1) << 31;
    if (M == 0 || N == 0 || K == 0 || batches == 0) return false;
    if (batches * M >= limit || N >= limit || K >= limit) return false;
    if constexpr (pattern::has_bias)
      if (pattern::bias(root).extents[0] != N) return false;
    return true;
  }
  std::string method(bool tf32) const {
    return epilogue_method(pattern::has_bias, pattern::activation, std::is_same_v<T, double>, tf32);
  }
  // "cuBLASLt GEMM + bias + relu epilogue (FP32): dense1/relu(dense1/add(dense1/matmul(x, W), b)) -> f32[256,10]"
  std::string description(bool tf32) const {
    return method(tf32) + ": " + pattern::group_text(root) + " -> " + value_type_string<T>(extents);
  }

  // As the root of an evaluation: the product's operands and the bias; the product itself only if
  // the epilogue does not run.
  template <class Ctx>
  void prepare_operands(Ctx& ctx) {
    pattern::product(root).prepare_operands(ctx);
    if constexpr (pattern::has_bias) pattern::bias(root).prepare(ctx);
  }
  template <class F>
  void visit_root_reads(F&& f) const {
    pattern::product(root).visit_root_reads(f);
    if constexpr (pattern::has_bias) pattern::bias(root).visit_reads(f);
  }

  template <class Ctx>
  void compute_into(T* out, Ctx& ctx) {
    if (expected() && !ctx.find_shared(*pattern::product(root).node) && run_epilogue(out, ctx)) return;
    root.prepare(ctx);
    run_map(root, ctx, out);
  }

 private:
  // Returns false, having queued nothing that matters (at most a contiguous copy of an operand), when
  // cuBLASLt has no algorithm for this problem.
  template <class Ctx>
  bool run_epilogue(T* out, Ctx& ctx) {
    auto& p = pattern::product(root);
    auto& a = std::get<0>(p.operands);
    auto& b = std::get<1>(p.operands);
    constexpr std::size_t RA = std::remove_cvref_t<decltype(a)>::rank;
    const std::size_t M = extents[rank - 2], N = extents[rank - 1], K = a.extents[RA - 1];
    const std::size_t batches = rank == 3 ? extents[0] : 1;
    device_leaf<T> la = materialize(a, ctx, false), lb = materialize(b, ctx, false);
    gemm_operand ga = gemm_layout(la), gb = gemm_layout(lb);
    // Batches fold into rows only when A's matrices are stacked row-major; otherwise a dense copy.
    const bool foldable = batches == 1 || (!ga.column_major && ga.batch_stride == M * ga.ld);
    if (!ga.ok || !foldable) {
      la = materialize(a, ctx, true);
      ga = gemm_layout(la);
    }
    if (!gb.ok) {
      lb = materialize(b, ctx, true);
      gb = gemm_layout(lb);
    }
    const T* bias = nullptr;
    if constexpr (pattern::has_bias) bias = materialize(pattern::bias(root), ctx, true).data;

    const std::size_t rows = batches * M;
    constexpr cudaDataType_t type = gemm_data_type<T>;
    const cublasComputeType_t compute = gemm_compute_type<T>(ctx.allow_tf32);
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's "A" is our b, its "B" our a.
    const cublasOperation_t op_b = gb.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = ga.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if constexpr (pattern::activation == known_function::relu)
      epilogue = pattern::has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    else
      epilogue = CUBLASLT_EPILOGUE_BIAS;

    lt_matmul_desc desc(compute, type);
    desc.set(CUBLASLT_MATMUL_DESC_TRANSA, op_b);
    desc.set(CUBLASLT_MATMUL_DESC_TRANSB, op_a);
    desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    if (bias) desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    const lt_layout lt_a(type, op_b == CUBLAS_OP_N ? N : K, op_b == CUBLAS_OP_N ? K : N, std::int64_t(gb.ld));
    const lt_layout lt_b(type, op_a == CUBLAS_OP_N ? K : rows, op_a == CUBLAS_OP_N ? rows : K, std::int64_t(ga.ld));
    const lt_layout lt_d(type, N, rows, std::int64_t(N));

    int device = 0;
    SYMFLOW_CUDA_CHECK(cudaGetDevice(&device));
    lt_problem key;
    key.device = device;
    key.compute = int(compute);
    key.type = int(type);
    key.epilogue = int(epilogue);
    key.trans_a = int(op_b);
    key.trans_b = int(op_a);
    key.m = N;
    key.n = rows;
    key.k = K;
    key.lda = std::int64_t(gb.ld);
    key.ldb = std::int64_t(ga.ld);
    key.align_a = address_alignment(lb.data);
    key.align_b = address_alignment(la.data);
    key.align_d = address_alignment(out);
    key.align_bias = bias ? address_alignment(bias) : 0;
    const cublasLtHandle_t h = cublaslt_handle();
    const lt_choice choice = lt_heuristic(h, key, desc.d, lt_a.l, lt_b.l, lt_d.l);
    if (!choice.found) return false;

    void* workspace = choice.workspace ? ctx.template allocate<unsigned char>(choice.workspace) : nullptr;
    const bool tf32 = ctx.allow_tf32;
    place([&] {
      return method(tf32) + ", on " + current_device_name() + ": " + pattern::group_text(root) + " -> " +
             value_type_string<T>(extents);
    });
    const profile_region timed(ctx.stream, [&] { return description(tf32); });
    const T alpha = 1, beta = 0;
    SYMFLOW_CUBLAS_CHECK(cublasLtMatmul(h, desc.d, &alpha, lb.data, lt_a.l, la.data, lt_b.l, &beta, out, lt_d.l, out,
                                        lt_d.l, &choice.algo, workspace, choice.workspace, ctx.stream));
    return true;
  }
};

template <class Ev>
inline constexpr bool is_gemm_epilogue_eval_v = false;
template <class Root>
inline constexpr bool is_gemm_epilogue_eval_v<gemm_epilogue_eval<Root>> = true;

// The evaluator of an evaluation's output: the epilogue form when the root has the pattern.
template <expression E, class Ctx>
auto make_root_evaluator(const E& node, Ctx& ctx) {
  auto ev = make_evaluator(node, ctx);
  if constexpr (epilogue_pattern<decltype(ev)>::matches) return gemm_epilogue_eval<decltype(ev)>(std::move(ev), ctx);
  else return ev;
}

}  // namespace symflow::cuda::detail
