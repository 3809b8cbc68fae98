#ifndef SYMFLOW_OPS_MATMUL_HPP
#define SYMFLOW_OPS_MATMUL_HPP
#include <algorithm>
#include <optional>
#include <vector>
#include "../core/eigen.hpp"

#include "../core/gemm.hpp"
#include "../core/parallel.hpp"
#include "../core/tensor.hpp"
#include "../expr/diagnostics.hpp"
#include "../expr/leaves.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/onnx_form.hpp"
#include "reshape.hpp"
#include "../expr/runtime_forms.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {

// Matrix product: [M,K]x[K,N] -> [M,N]; batched [B,M,K]x[B,K,N] -> [B,M,N]; [B,M,K]x[K,N] -> [B,M,N].
// The product is Eigen's GEMM; the result is materialised, and any elementwise work after it
// (a bias, an activation) fuses into one pass over it.
struct matmul_op {
  static constexpr std::string_view name = "matmul";
  static constexpr std::string_view onnx_op = "MatMul";  // its ONNX form (expr/onnx_form.hpp)
  // ONNX MatMul is NumPy's: a vector operand is a matrix of one row (column) whose unit axis the
  // result drops, and batch axes beyond one, equal in both operands, are flattened into one.
  static constexpr std::array<std::string_view, 1> onnx_reads{"MatMul"};
  static void read_onnx(onnx_node_reader& r) {
    using list = std::vector<std::int64_t>;
    onnx_node_reader::value a = r.input(0), b = r.input(1);
    list ea = r.extents_of(a), eb = r.extents_of(b);
    const auto reshape = [&](onnx_node_reader::value v, const list& to) {
      return r.apply(reshape_op<shape<1>>::name, {v}, {{"shape", to}});
    };
    const auto known = [](const list& e) { return std::find(e.begin(), e.end(), -1) == e.end(); };
    if (ea.empty() || eb.empty()) r.refuse("a scalar operand");
    const bool vector_a = ea.size() == 1, vector_b = eb.size() == 1;
    if (vector_a) a = reshape(a, {1, ea[0]}), ea = {1, ea[0]};
    if (vector_b) b = reshape(b, {eb[0], 1}), eb = {eb[0], 1};
    list out;  // the result's extents when operands were reshaped
    if (ea.size() > 3 || eb.size() > 3) {
      if (!known(ea) || !known(eb)) r.refuse("batch axes beyond one whose extents are not known");
      const list batch(ea.begin(), ea.end() - 2);
      std::int64_t n = 1;
      for (std::int64_t e : batch) n *= e;
      if (eb.size() == ea.size() && list(eb.begin(), eb.end() - 2) == batch) {
        b = reshape(b, {n, eb[eb.size() - 2], eb.back()});
      } else if (eb.size() != 2) {
        r.refuse("batch axes that differ between the operands (broadcast batches are not read)");
      }
      a = reshape(a, {n, ea[ea.size() - 2], ea.back()});
      out = batch;
      out.push_back(ea[ea.size() - 2]), out.push_back(eb.back());
    }
    onnx_node_reader::value y = r.apply(name, {a, b});
    if (!out.empty()) y = reshape(y, out);
    if (vector_a || vector_b) {
      list e = r.extents_of(y);
      if (vector_b) e.erase(e.end() - 1);
      if (vector_a) e.erase(e.end() - (vector_b ? 1 : 2));
      y = reshape(y, e);
    }
    r.result(y);
  }
  static constexpr std::string_view doc =
      "matmul(a, b): the matrix product, [M, K] x [K, N] -> [M, N]; batched, [B, M, K] x [B, K, N] -> "
      "[B, M, N], and [B, M, K] x [K, N] -> [B, M, N] with the same b for every batch. Other ranks and "
      "mismatched inner or batch extents are refused (a shape error naming both shapes; there is no "
      "other broadcasting). Both operands have one floating-point dtype, f32 or f64. The product is "
      "Eigen's GEMM: each result element is a sum of K products in an order Eigen chooses (not "
      "necessarily bit for bit a left-to-right sum); a NaN in a row of a or a column of b, an Inf "
      "times 0, or +Inf plus -Inf makes that element NaN, and K = 0 gives zeros. Gradient: da = g b^T "
      "and db = a^T g (summed over the batch when b is [K, N]). Example: [[1, 2], [3, 4]] x [[5], [6]] "
      "is [[17], [39]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>, true>, law::floating<shape<37, 5>, true>>;
    template <class T>
    static auto of(const auto& x0, const auto& x1) { return matmul(x0, x1); }
  };
  static constexpr bool contiguous_operands = true;
  // ...except that a rank-2 operand may be any matrix with a unit stride on one axis: a transposed
  // view is multiplied where it lies (core/gemm.hpp).
  static constexpr bool strided_matrix_operands = true;
  template <class A, class B>
  using result_type = A;
  // Its dtype rule (the graph loaders and the interpreter read it too, ir/op_registry.hpp): one
  // floating-point dtype for both operands.
  template <class A, class B>
  static constexpr bool accepts = std::is_same_v<A, B> && std::is_floating_point_v<A>;

  template <class SA, class SB>
  static consteval bool inner_ok() {
    constexpr std::size_t k_a = SA::extents[SA::rank - 1];
    constexpr std::size_t k_b = SB::extents[SB::rank - 2];
    return k_a == k_b || k_a == dyn || k_b == dyn;
  }
  template <class SA, class SB>
  static consteval bool batch_ok() {
    if constexpr (SA::rank == 3 && SB::rank == 3)
      return SA::extents[0] == SB::extents[0] || SA::extents[0] == dyn || SB::extents[0] == dyn;
    else
      return true;
  }
  template <class SA, class SB>
  static constexpr bool shapes_ok = [] {
    if constexpr (!((SA::rank == 2 && SB::rank == 2) || (SA::rank == 3 && (SB::rank == 2 || SB::rank == 3))))
      return false;
    else
      return inner_ok<SA, SB>() && batch_ok<SA, SB>();
  }();

  template <class SA, class SB>
  static consteval auto result_extents() {
    if constexpr (SA::rank == 2) {
      return std::array<std::size_t, 2>{SA::extents[0], SB::extents[1]};
    } else {
      std::size_t batch = SA::extents[0];
      if constexpr (SB::rank == 3)
        if (batch == dyn) batch = SB::extents[0];
      return std::array<std::size_t, 3>{batch, SA::extents[1], SB::extents[SB::rank - 1]};
    }
  }
  template <class SA, class SB>
  using result_shape = shape_from_array_t<result_extents<SA, SB>()>;

  template <std::size_t RA, std::size_t RB>
  static auto infer_extents(const auto& who, const extents_t<RA>& a, const extents_t<RB>& b) {
    auto fail = [&] {
      throw shape_error(who + ": cannot multiply " + format_extents(a) + " by " + format_extents(b));
    };
    if (a[RA - 1] != b[RB - 2]) fail();
    if constexpr (RA == 2) {
      return extents_t<2>{a[0], b[1]};
    } else {
      if constexpr (RB == 3)
        if (a[0] != b[0]) fail();
      return extents_t<3>{a[0], a[1], b[RB - 1]};
    }
  }

  // Runtime form (graph interpreter and builder): the same shape rule and GEMM, for operand ranks
  // known only at run time.
  template <class F>
  static decltype(auto) with_ranks(const std::string& who, std::size_t ra, std::size_t rb, F&& f) {
    using I = std::integral_constant<std::size_t, 2>;
    using J = std::integral_constant<std::size_t, 3>;
    if (ra == 2 && rb == 2) return f(I{}, I{});
    if (ra == 3 && rb == 2) return f(J{}, I{});
    if (ra == 3 && rb == 3) return f(J{}, J{});
    throw shape_error(who + ": matmul takes [M,K]x[K,N], [B,M,K]x[K,N] or [B,M,K]x[B,K,N], not rank " +
                      std::to_string(ra) + " by rank " + std::to_string(rb));
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs&, const std::vector<runtime_extents>& in, const std::string& who) {
    return with_ranks(who, in.at(0).size(), in.at(1).size(), [&](auto ra, auto rb) {
      extents_t<decltype(ra)::value> a{};
      extents_t<decltype(rb)::value> b{};
      std::copy(in[0].begin(), in[0].end(), a.begin());
      std::copy(in[1].begin(), in[1].end(), b.begin());
      const auto out = infer_extents(who, a, b);
      return runtime_extents(out.begin(), out.end());
    });
  }
  template <class Attrs>
  static void run_runtime(const Attrs&, const runtime_array& out, const std::vector<runtime_array>& in) {
    with_ranks("matmul", in[0].extents.size(), in[1].extents.size(), [&](auto ra, auto rb) {
      // An operand may be a rank-2 view with strides (strided_matrix_operands: the interpreter
      // reads transposes where they lie).
      auto view = [](auto* data, const runtime_extents& e, auto rank, const std::vector<std::size_t>& strides) {
        constexpr std::size_t R = decltype(rank)::value;
        extents_t<R> x{}, s{};
        std::copy(e.begin(), e.end(), x.begin());
        using view_type = tensor_view<std::remove_pointer_t<decltype(data)>, dyn_shape<R>>;
        if (strides.size() != R) return view_type(data, x);
        std::copy(strides.begin(), strides.end(), s.begin());
        return view_type(data, x, s);
      };
      auto run = [&](auto t) {
        using T = decltype(t);
        if constexpr (!accepts<T, T>) {  // refused by the dtype rule before anything runs
          throw value_error("matmul: takes f32 or f64 operands, not " + std::string(dtype_name(out.type)));
        } else {
          const auto o = view(out.as<T>(), out.extents, ra, out.strides);
          run_cpu<T>(o, view(static_cast<const T*>(in[0].data), in[0].extents, ra, in[0].strides),
                     view(static_cast<const T*>(in[1].data), in[1].extents, rb, in[1].strides));
        }
      };
      visit_compute_dtype(out.type, run);
    });
  }

  // Forward mode: d(AB) = dA B + A dB.
  template <class Y, class TA, class TB, class A, class B>
  static auto tangent(const Y&, const TA& ta, const TB& tb, const A& a, const B& b) {
    if constexpr (is_no_gradient_v<TA>) return matmul(a, tb);
    else if constexpr (is_no_gradient_v<TB>) return matmul(ta, b);
    else return matmul(ta, b) + matmul(a, tb);
  }
  // Derivative rule (expr/derivative_rule.hpp): dA = g Bt, dB = At g; for [B,M,K]x[K,N] the
  // batch folds into the rows of dB's product, which needs K and N known.
  static auto derivative(const auto&, const auto& g, const auto&, const auto& a, const auto& b) {
    const auto folded = lift([](auto ra, auto rb) { return ra == 3 && rb == 2; }, rank_value(a), rank_value(b));
    return choose(
        folded,
        [](const auto& g, const auto& a, const auto& b) {
          const auto rows = [](const auto& x) {  // [B, M, K] -> [B*M, K]
            return reshape(x, lift(rows_shape{}, known_extent(x, fixed<2>{})));
          };
          return std::tuple{matmul(g, transpose(b)), matmul(transpose(rows(a)), rows(g))};
        },
        [](const auto& g, const auto& a, const auto& b) { return std::tuple{matmul(g, transpose(b)), matmul(transpose(a), g)}; },
        g, a, b);
  }
  struct rows_shape {
    constexpr integer_list operator()(std::int64_t columns) const {
      integer_list out;
      out.count = 2;
      out[0] = -1;
      out[1] = columns;
      return out;
    }
  };
  // An operand as the GEMM reads it: a rank-2 view as it lies (a transposed view, see
  // strided_matrix_operands), one r x c matrix of a contiguous batch at `offset` otherwise.
  template <class T, class V>
  static strided_matrix<const T> operand_matrix(const V& v, std::size_t r, std::size_t c, std::size_t offset) {
    strided_matrix<const T> m;
    if (!matrix_layout<const T>(v.data() + offset, r, c, V::rank == 2 ? v.strides()[0] : c,
                                V::rank == 2 ? v.strides()[1] : 1, m))
      throw value_error("matmul: an operand's layout is neither row- nor column-major");  // operand_view prevents it
    return m;
  }
  // out = alpha a b + beta out, for matrices (rank 2 by rank 2): what lets an evaluation add a
  // product into memory that holds a value (eval/cpu/accumulate.hpp: SGD adds -lr x^T g into the
  // weight in the GEMM, without storing the gradient).
  template <class... Operands>
  static constexpr bool accumulates = sizeof...(Operands) == 2 && ((Operands::rank == 2) && ...);
  template <class T, class Out, class A, class B>
  static void run_cpu_scaled(const Out& out, T alpha, T beta, const A& a, const B& b) {
    static_assert(A::rank == 2 && B::rank == 2, "matmul::run_cpu_scaled multiplies matrices");
    if (!out.is_contiguous()) throw value_error("matmul: the result must be a contiguous matrix");
    const strided_matrix<T> c{out.data(), std::ptrdiff_t(out.extent(0)), std::ptrdiff_t(out.extent(1)),
                              std::ptrdiff_t(out.extent(1)), 1};
    const cpu::serial_scope serial(double(a.extent(0)) * double(a.extent(1)) * double(b.extent(1)) <
                                   cpu::serial_product_work);
    gemm<T>(c, operand_matrix<T>(a, a.extent(0), a.extent(1), 0), operand_matrix<T>(b, b.extent(0), b.extent(1), 0),
            alpha, beta);
  }
  // Rows [first, first + count) of a b into `out` (count x b's columns, row-major), on the calling
  // thread: an optimiser's update then runs over each block of a weight gradient while the block is
  // in cache (eval/cpu/accumulate.hpp). While a and b's inner extent fits one depth block of Eigen's
  // GEMM (a batch of up to a few hundred rows for a weight gradient), the block's sums are those of
  // the whole product's rows.
  template <class... Operands>
  static constexpr bool computes_row_blocks = accumulates<Operands...>;
  template <class T, class A, class B>
  static void run_cpu_rows(T* out, std::size_t first, std::size_t count, const A& a, const B& b) {
    static_assert(A::rank == 2 && B::rank == 2, "matmul::run_cpu_rows multiplies matrices");
    strided_matrix<const T> rows = operand_matrix<T>(a, a.extent(0), a.extent(1), 0);
    rows.data += std::ptrdiff_t(first) * rows.row_stride;
    rows.rows = std::ptrdiff_t(count);
    const std::ptrdiff_t columns = std::ptrdiff_t(b.extent(1));
    const cpu::serial_scope serial(true);
    gemm<T>(strided_matrix<T>{out, std::ptrdiff_t(count), columns, columns, 1}, rows,
            operand_matrix<T>(b, b.extent(0), b.extent(1), 0), T(1), T(0));
  }
  template <class T, class Out, class A, class B>
  static void run_cpu(const Out& out, const A& a, const B& b) {
    constexpr std::size_t ra = A::rank, rb = B::rank;
    // [B, M, K] x [K, N] is one product of B * M rows: a and the result are contiguous.
    const bool folded = ra == 3 && rb == 2;
    const auto rows = std::size_t(a.extent(ra - 2) * (folded ? a.extent(0) : 1)), inner = std::size_t(a.extent(ra - 1)),
               cols = std::size_t(b.extent(rb - 1));
    const std::size_t batches = ra == 3 && !folded ? a.extent(0) : 1;
    const auto product = [&](std::size_t i) {
      strided_matrix<T> c;
      c.data = out.data() + i * rows * cols;
      c.rows = std::ptrdiff_t(rows);
      c.columns = std::ptrdiff_t(cols);
      c.row_stride = std::ptrdiff_t(cols);
      gemm<T>(c, operand_matrix<T>(a, rows, inner, i * rows * inner),
              operand_matrix<T>(b, inner, cols, rb == 3 ? i * inner * cols : 0),
              T(1), T(0));
    };
    // A small product runs on one thread (core/parallel.hpp); a batch of them is shared out across
    // the threads instead, a whole product each, so the batch takes one parallel region.
    const double work = double(rows) * double(inner) * double(cols);
    const bool small = work < cpu::serial_product_work;
    if (small && batches > 1 && work * double(batches) >= cpu::serial_product_work) {
      const std::ptrdiff_t n = std::ptrdiff_t(batches);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
      for (std::ptrdiff_t i = 0; i < n; ++i) product(std::size_t(i));
    } else {
      const cpu::serial_scope serial(small);
      for (std::size_t i = 0; i < batches; ++i) product(i);
    }
  }
};
}  // namespace ops

namespace diag {
// "matmul: f32[?,784] x f32[100,10]: inner extents 784 and 100 differ"
template <class A, class B>
consteval text matmul_message() {
  using SA = shape_of<A>;
  using SB = shape_of<B>;
  text t;
  t << "matmul: ";
  append_type<value_type_of<A>, SA>(t) << " x ";
  append_type<value_type_of<B>, SB>(t) << ": ";
  if constexpr (!std::is_same_v<value_type_of<A>, value_type_of<B>>) {
    t << "operand dtypes " << dtype_text<value_type_of<A>>() << " and " << dtype_text<value_type_of<B>>()
      << " differ; convert with cast<T>(x)";
  } else if constexpr (!std::is_floating_point_v<value_type_of<A>>) {
    t << "operands must be floating point; convert with cast<float>(x)";
  } else if constexpr (!((SA::rank == 2 && SB::rank == 2) || (SA::rank == 3 && (SB::rank == 2 || SB::rank == 3)))) {
    t << "ranks ";
    t.extent(SA::rank) << " and ";
    t.extent(SB::rank) << " do not fit [M,K] x [K,N], [B,M,K] x [B,K,N] or [B,M,K] x [K,N]";
  } else if constexpr (!ops::matmul_op::inner_ok<SA, SB>()) {
    t << "inner extents ";
    t.extent(SA::extents[SA::rank - 1]) << " and ";
    t.extent(SB::extents[SB::rank - 2]) << " differ";
  } else {
    t << "batch extents ";
    t.extent(SA::extents[0]) << " and ";
    t.extent(SB::extents[0]) << " differ";
  }
  return t;
}
}  // namespace diag

template <unary_operand A, unary_operand B>
auto matmul(const A& a, const B& b, source_site where = source_site::current()) {
  // A failed check is one error whose first line names the dtypes, shapes and the problem.
  if constexpr (value_handle<A> || value_handle<B>) {
    return apply_value(ops::matmul_op{}, a, b);
  } else if constexpr (!ops::matmul_op::accepts<value_type_of<A>, value_type_of<B>> ||
                       !ops::matmul_op::shapes_ok<shape_of<A>, shape_of<B>>) {
    constexpr auto message = diag::matmul_message<A, B>();
    (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
    return invalid_operands_result<value_type_of<A>, std::max(A::rank, B::rank)>{};
  } else {
    return make_kernel(ops::matmul_op{}, where, a, b);
  }
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_MATMUL_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, matmul_op)
#endif
