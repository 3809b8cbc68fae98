#pragma once
// Host side of the CUDA evaluator. It mirrors the CPU evaluator: building the tree checks every
// runtime extent before any work; prepare() materialises what cannot fuse (kernels, views of computed
// values, inner reductions); each fusion group is then lowered to a name-free device evaluator
// (device.hpp) and run by one templated kernel (kernels.hpp). Dispatch is on node_kind only;
// everything op-specific comes from the op type (its scalar function, identity/combine/finish, layout
// rule or kernel).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <symflow/core/params.hpp>
#include <symflow/core/tensor.hpp>
#include <symflow/eval/cpu/frame.hpp>
#include <symflow/expr/broadcast.hpp>
#include <symflow/expr/elementwise.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/reduction.hpp>
#include <symflow/expr/structural.hpp>

#include "device.hpp"
#include "device_tensor.hpp"
#include "kernels.hpp"

namespace symflow::cuda {

// Per-evaluation settings, passed among the feeds: cuda::eval(e, feeds..., cuda::options{s, true}).
struct options {
  stream_ref stream{};       // where the work is queued (default: the legacy default stream)
  bool allow_tf32 = false;   // let cuBLAS use TF32 tensor cores for f32 matmuls (about 1e-3 relative error)
};

// A named leaf bound to device memory for one evaluation: cuda::feed(x, dev_tensor).
template <fixed_string Name, class T, std::size_t Rank>
struct device_feed {
  static constexpr auto name = Name;
  static constexpr bool is_device_feed = true;
  using value_type = T;
  static constexpr std::size_t rank = Rank;
  device_view<const T, dyn_shape<Rank>> value;
};

namespace detail {

template <class S>
inline constexpr bool is_device_feed_v = requires { S::is_device_feed; };
// symflow::feed_binding (x = host_tensor): detected by its members.
template <class S>
inline constexpr bool is_host_feed_v =
    !is_device_feed_v<S> && requires(const S& s) {
      S::name;
      S::rank;
      typename S::value_type;
      s.value.strides();
    };
template <class S>
inline constexpr bool is_host_params_v = std::is_same_v<S, params>;
template <class S>
inline constexpr bool is_device_params_v = std::is_same_v<S, device_params>;
template <class S>
inline constexpr bool is_options_v = std::is_same_v<S, options>;
template <class S>
inline constexpr bool is_source_v =
    is_device_feed_v<S> || is_host_feed_v<S> || is_host_params_v<S> || is_device_params_v<S> || is_options_v<S>;

// Conditions of the static_asserts on feeds: their template arguments name the leaf.
template <class Leaf, bool Found>
struct every_placeholder_is_fed : std::bool_constant<Found> {};
template <class Leaf, bool Found>
struct every_variable_has_a_value : std::bool_constant<Found> {};
template <class Leaf, class FedType>
struct fed_dtype_matches_leaf : std::bool_constant<std::is_same_v<typename Leaf::value_type, FedType>> {};
template <class Leaf, std::size_t FedRank>
struct fed_rank_matches_leaf : std::bool_constant<Leaf::rank == FedRank> {};

// What one evaluation reads (feeds, parameter stores, options) and the device memory it owns for
// materialised intermediates and uploads, released (stream-ordered) when the evaluation ends.
template <class... Sources>
struct context {
  static_assert((is_source_v<Sources> && ...),
                "symflow: cuda::eval takes an expression followed by feeds (cuda::feed(x, device_tensor) or "
                "x = host_tensor), optionally a params or cuda::device_params store and cuda::options");
  static_assert((std::size_t(is_host_params_v<Sources>) + ... + 0) <= 1, "symflow: pass at most one params store");
  static_assert((std::size_t(is_device_params_v<Sources>) + ... + 0) <= 1,
                "symflow: pass at most one cuda::device_params store");
  static_assert((std::size_t(is_options_v<Sources>) + ... + 0) <= 1, "symflow: pass at most one cuda::options");

  std::tuple<const Sources&...> sources;
  cudaStream_t stream = nullptr;
  bool allow_tf32 = false;
  std::vector<void*> workspace;
  std::vector<std::pair<const void*, const void*>> uploaded;  // host pointer -> device copy

  explicit context(const Sources&... s) : sources(s...) {
    if constexpr (options_index() != npos) {
      const options& o = std::get<options_index()>(sources);
      stream = o.stream.handle;
      allow_tf32 = o.allow_tf32;
    }
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;
  ~context() {
    for (void* p : workspace) detail::device_free(p, stream);
  }

  template <class T>
  T* allocate(std::size_t count) {
    void* p = detail::device_allocate(count * sizeof(T), stream);
    if (p) workspace.push_back(p);
    return static_cast<T*>(p);
  }
  // Copies `count` host elements to the device once per evaluation (a leaf used twice is uploaded once).
  template <class T>
  const T* upload(const T* host, std::size_t count) {
    for (const auto& [h, d] : uploaded)
      if (h == host) return static_cast<const T*>(d);
    T* dev = allocate<T>(count);
    if (count) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(dev, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
    uploaded.emplace_back(host, dev);
    return dev;
  }

  static constexpr std::size_t npos = std::size_t(-1);
  template <fixed_string Name>
  static consteval std::size_t feed_index() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && feed_matches<Name, Sources>()) ? i : found, ++i), ...);
    return found;
  }
  template <template <class> class Pred>
  static consteval std::size_t index_of() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && Pred<Sources>::value) ? i : found, ++i), ...);
    return found;
  }
  template <class S>
  struct host_params_pred : std::bool_constant<is_host_params_v<S>> {};
  template <class S>
  struct device_params_pred : std::bool_constant<is_device_params_v<S>> {};
  template <class S>
  struct options_pred : std::bool_constant<is_options_v<S>> {};
  static consteval std::size_t host_params_index() { return index_of<host_params_pred>(); }
  static consteval std::size_t device_params_index() { return index_of<device_params_pred>(); }
  static consteval std::size_t options_index() { return index_of<options_pred>(); }

 private:
  template <fixed_string Name, class S>
  static consteval bool feed_matches() {
    if constexpr (is_device_feed_v<S> || is_host_feed_v<S>) return S::name == Name;
    else return false;
  }
};

// ---- frames and leaves ------------------------------------------------------------------------

// Frames, their stride alignment and axis collapsing are the CPU evaluator's (host-side code).
static_assert(dev::max_rank == int(cpu::max_rank));
using cpu::frame_strides;
using group_frame = cpu::frame;
template <std::size_t R>
group_frame frame_of(const extents_t<R>& e) {
  return cpu::frame::of<R>(e);
}
using cpu::align_to_frame;
using cpu::collapse;

// A value in device memory with arbitrary strides, and its strides in the current group's frame.
template <class T>
struct device_leaf {
  const T* data = nullptr;
  std::size_t rank = 0;
  std::array<std::size_t, dev::max_rank> extents{};
  std::array<std::size_t, dev::max_rank> strides{};
  frame_strides in_frame{};

  template <std::size_t R>
  static device_leaf of(const T* data, const extents_t<R>& e, const extents_t<R>& s) {
    device_leaf l;
    l.data = data;
    l.rank = R;
    for (std::size_t i = 0; i < R; ++i) {
      l.extents[i] = e[i];
      l.strides[i] = s[i];
    }
    return l;
  }
  std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t i = 0; i < rank; ++i) n *= extents[i];
    return n;
  }
  bool is_contiguous() const {
    std::size_t expect = 1;
    for (std::size_t i = rank; i-- > 0;) {
      if (extents[i] != 1 && strides[i] != expect) return false;
      expect *= extents[i];
    }
    return true;
  }
  // Elements from data to the last element + 1 (what a copy of the underlying memory needs).
  std::size_t span() const {
    std::size_t last = 0;
    for (std::size_t i = 0; i < rank; ++i) {
      if (extents[i] == 0) return 0;
      last += (extents[i] - 1) * strides[i];
    }
    return last + 1;
  }
  template <std::size_t R>
  extents_t<R> extents_as() const {
    extents_t<R> e{};
    for (std::size_t i = 0; i < R; ++i) e[i] = extents[i];
    return e;
  }
  template <std::size_t R>
  extents_t<R> strides_as() const {
    extents_t<R> e{};
    for (std::size_t i = 0; i < R; ++i) e[i] = strides[i];
    return e;
  }

  void bind(const group_frame& f) { in_frame = align_to_frame(f, rank, extents.data(), strides.data()); }
  template <bool Scalar, class F>
  void visit(F&& f) {
    f(in_frame, static_cast<const void*>(data), sizeof(T), Scalar);
  }
  template <int FR, bool Scalar>
  auto lower() const {
    if constexpr (Scalar) {
      return dev::scalar_ref<T>{data};
    } else {
      dev::leaf<T, FR> d{data, {}};
      for (int a = 0; a < FR; ++a) d.s[a] = in_frame[a];
      return d;
    }
  }
};

// Ops may leave an operand unread (expand_as uses its second operand for its extents only).
template <class Op, std::size_t I>
constexpr bool reads_operand() {
  if constexpr (requires { Op::template reads_operand<I>; }) return Op::template reads_operand<I>;
  else return true;
}

template <class Ctx, class T, class H>
void run_map(H& root, Ctx& ctx, T* out);

// ---- evaluator nodes --------------------------------------------------------------------------

// A value already in memory: a feed, a variable, a constant. Host memory is uploaded by prepare().
template <class T, std::size_t R>
struct memory_eval {
  using value_type = T;
  static constexpr std::size_t rank = R;
  extents_t<R> extents{};
  device_leaf<T> leaf;
  const T* host = nullptr;  // set while the value still has to be uploaded

  static memory_eval on_device(const T* data, const extents_t<R>& e, const extents_t<R>& s) {
    memory_eval m;
    m.extents = e;
    m.leaf = device_leaf<T>::template of<R>(data, e, s);
    return m;
  }
  static memory_eval on_host(const T* data, const extents_t<R>& e, const extents_t<R>& s) {
    memory_eval m = on_device(nullptr, e, s);
    m.host = data;
    return m;
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    if (host) {
      leaf.data = ctx.upload(host, leaf.span());
      host = nullptr;
    }
  }
  const device_leaf<T>& as_leaf() const { return leaf; }
  void bind(const group_frame& f) { leaf.bind(f); }
  template <class F>
  void visit(F&& f) {
    leaf.template visit<R == 0>(f);
  }
  template <int FR>
  auto lower() const {
    return leaf.template lower<FR, R == 0>();
  }
};

template <class T>
struct literal_eval {
  using value_type = T;
  static constexpr std::size_t rank = 0;
  extents_t<0> extents{};
  T value;
  template <class Ctx>
  void prepare(Ctx&) {}
  void bind(const group_frame&) {}
  template <class F>
  void visit(F&&) {}
  template <int FR>
  auto lower() const {
    return dev::literal<T>{value};
  }
};

template <class Op, class T, std::size_t R, class... C>
struct elementwise_eval {
  using value_type = T;
  static constexpr std::size_t rank = R;
  std::tuple<C...> children;
  extents_t<R> extents{};

  template <class F, std::size_t... I>
  void for_read(F&& f, std::index_sequence<I...>) {
    ((reads_operand<Op, I>() ? f(std::get<I>(children)) : void()), ...);
  }
  template <class F>
  void for_read(F&& f) {
    for_read(f, std::index_sequence_for<C...>{});
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    for_read([&](auto& c) { c.prepare(ctx); });
  }
  void bind(const group_frame& f) {
    for_read([&](auto& c) { c.bind(f); });
  }
  template <class F>
  void visit(F&& f) {
    for_read([&](auto& c) { c.visit(f); });
  }
  template <int FR, std::size_t I>
  auto lower_child() const {
    using V = typename std::tuple_element_t<I, std::tuple<C...>>::value_type;
    if constexpr (reads_operand<Op, I>()) return std::get<I>(children).template lower<FR>();
    else return dev::unread<V>{};
  }
  template <int FR>
  auto lower() const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      using result = dev::map<Op, T, decltype(lower_child<FR, I>())...>;
      return result{dev::make_pack(lower_child<FR, I>()...)};
    }(std::index_sequence_for<C...>{});
  }
};

// Evaluators whose value is materialised: after prepare() they read as a leaf.
template <class T, std::size_t R>
struct materialised_base {
  using value_type = T;
  static constexpr std::size_t rank = R;
  extents_t<R> extents{};
  device_leaf<T> result;
  bool ready = false;
  const device_leaf<T>& as_leaf() const { return result; }
  void bind(const group_frame& f) { result.bind(f); }
  template <class F>
  void visit(F&& f) {
    result.template visit<R == 0>(f);
  }
  template <int FR>
  auto lower() const {
    return result.template lower<FR, R == 0>();
  }
  void set_dense(const T* data) {
    result = device_leaf<T>::template of<R>(data, extents, row_major_strides<R>(extents));
    ready = true;
  }
};

// Computes a child into device memory if it is not there already (contiguous if asked) and returns it
// as a leaf.
template <class C, class Ctx>
device_leaf<typename C::value_type> materialize(C& child, Ctx& ctx, bool contiguous) {
  using T = typename C::value_type;
  constexpr std::size_t R = C::rank;
  child.prepare(ctx);
  if constexpr (requires { child.as_leaf(); }) {
    const device_leaf<T> l = child.as_leaf();
    if (!contiguous || l.is_contiguous()) return l;
  }
  T* buffer = ctx.template allocate<T>(element_count<R>(child.extents));
  run_map(child, ctx, buffer);
  return device_leaf<T>::template of<R>(buffer, child.extents, row_major_strides<R>(child.extents));
}

template <class Op, class T, class Ctx, class H, std::size_t RI>
void run_reduce(H& operand, Ctx& ctx, const std::array<bool, RI>& mask, T* out, std::size_t out_size,
                std::size_t count);

template <class Node, class C>
struct reduction_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  using Op = typename Node::op_type;
  C operand;
  std::size_t reduced_count = 1;

  explicit reduction_eval(C c) : operand(std::move(c)) {
    std::size_t j = 0;
    for (std::size_t i = 0; i < C::rank; ++i) {
      if (Node::mask[i]) {
        reduced_count *= operand.extents[i];
        if (Node::keep_dims) this->extents[j++] = 1;
      } else {
        this->extents[j++] = operand.extents[i];
      }
    }
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx) {
    operand.prepare(ctx);
    run_reduce<Op, T>(operand, ctx, Node::mask, out, element_count<Node::rank>(this->extents), reduced_count);
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    if (this->ready) return;
    T* out = ctx.template allocate<T>(element_count<Node::rank>(this->extents));
    compute_into(out, ctx);
    this->set_dense(out);
  }
};

template <class Node, class C>
struct view_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  C operand;
  typename Node::op_type op;
  view_eval(C c, const Node& node) : operand(std::move(c)), op(node.op) {
    this->extents = op.infer_extents(describe(node), operand.extents);
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    if (this->ready) return;
    constexpr std::size_t RI = C::rank, RO = Node::rank;
    const device_leaf<T> in = materialize(operand, ctx, Node::op_type::contiguous_operand);
    const layout<RI> l{in.template extents_as<RI>(), in.template strides_as<RI>(), 0};
    const layout<RO> out = op.apply(l);
    this->result = device_leaf<T>::template of<RO>(in.data + out.offset, out.extents, out.strides);
    this->ready = true;
  }
};

template <class Op>
struct kernel_impl;  // specialised in kernel_ops.hpp for the ops with a device implementation

template <class Node, class... C>
struct kernel_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  using Op = typename Node::op_type;
  std::tuple<C...> operands;
  Op op;
  kernel_eval(const Node& node, C... c) : operands(std::move(c)...), op(node.op) {
    this->extents =
        std::apply([&](const auto&... o) { return op.infer_extents(describe(node), o.extents...); }, operands);
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx);  // kernel_ops.hpp
  template <class Ctx>
  void prepare(Ctx& ctx) {
    if (this->ready) return;
    T* out = ctx.template allocate<T>(element_count<Node::rank>(this->extents));
    compute_into(out, ctx);
    this->set_dense(out);
  }
};

// ---- building the tree ------------------------------------------------------------------------

template <class Leaf, class Ctx>
auto named_leaf_evaluator(const Leaf& leaf, Ctx& ctx) {
  using T = typename Leaf::value_type;
  using S = typename Leaf::shape_type;
  constexpr std::size_t R = S::rank;
  constexpr std::size_t index = Ctx::template feed_index<Leaf::name>();
  constexpr bool is_variable = Leaf::kind == node_kind::variable;
  using sources_t = std::remove_cvref_t<decltype(ctx.sources)>;
  auto check = [&](const extents_t<R>& e) {
    if (!extents_match<S>(e))
      throw shape_error(describe(leaf) + ": expects " + type_string<Leaf>() + " but was given " +
                        std::string(dtype_name(dtype_v<T>)) + format_extents(e));
  };
  if constexpr (index != Ctx::npos) {
    using binding = std::remove_cvref_t<std::tuple_element_t<index, sources_t>>;
    static_assert(fed_dtype_matches_leaf<Leaf, typename binding::value_type>::value,
                  "symflow: the value fed to this placeholder or variable has the wrong dtype (leaf below)");
    static_assert(fed_rank_matches_leaf<Leaf, binding::rank>::value,
                  "symflow: the value fed to this placeholder or variable has the wrong rank (leaf below)");
    if constexpr (std::is_same_v<typename binding::value_type, T> && binding::rank == R) {
      const auto& v = std::get<index>(ctx.sources).value;
      check(v.extents());
      if constexpr (is_device_feed_v<binding>) return memory_eval<T, R>::on_device(v.data(), v.extents(), v.strides());
      else return memory_eval<T, R>::on_host(v.data(), v.extents(), v.strides());
    }
  } else if constexpr (is_variable && (Ctx::device_params_index() != Ctx::npos || Ctx::host_params_index() != Ctx::npos)) {
    const std::string name(Leaf::name.view());
    if constexpr (Ctx::device_params_index() != Ctx::npos) {
      const device_params& store = std::get<Ctx::device_params_index()>(ctx.sources);
      if (store.contains(name)) {
        const auto v = store.template view<T, dyn_shape<R>>(name);
        check(v.extents());
        return memory_eval<T, R>::on_device(v.data(), v.extents(), v.strides());
      }
    }
    if constexpr (Ctx::host_params_index() != Ctx::npos) {
      const params& store = std::get<Ctx::host_params_index()>(ctx.sources);
      if (store.contains(name)) {
        const auto v = store.template view<T, dyn_shape<R>>(name);
        check(v.extents());
        return memory_eval<T, R>::on_host(v.data(), v.extents(), v.strides());
      }
    }
    throw value_error(describe(leaf) + ": variable '" + name + "' has no value in the params store");
    return memory_eval<T, R>{};
  } else if constexpr (is_variable) {
    static_assert(every_variable_has_a_value<Leaf, false>::value,
                  "symflow: a variable has no value: feed it (cuda::feed(W, tensor)) or pass a params or "
                  "cuda::device_params store to cuda::eval (variable below)");
  } else {
    static_assert(every_placeholder_is_fed<Leaf, false>::value,
                  "symflow: a placeholder is not fed: pass cuda::feed(x, tensor) or x = tensor to cuda::eval "
                  "(placeholder below)");
  }
}

template <expression E, class Ctx>
auto make_evaluator(const E& node, Ctx& ctx) {
  using T = typename E::value_type;
  constexpr std::size_t R = E::rank;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    return named_leaf_evaluator(node, ctx);
  } else if constexpr (E::kind == node_kind::constant) {
    return memory_eval<T, R>::on_host(node.value->data(), node.value->extents(), node.value->strides());
  } else if constexpr (E::kind == node_kind::literal) {
    return literal_eval<T>{{}, T(node.value)};
  } else if constexpr (E::kind == node_kind::elementwise) {
    auto ev = std::apply(
        [&](const auto&... a) {
          using eval_t = elementwise_eval<typename E::op_type, T, R, decltype(make_evaluator(a, ctx))...>;
          return eval_t{{make_evaluator(a, ctx)...}, {}};
        },
        node.args);
    ev.extents.fill(1);
    std::apply(
        [&](const auto&... c) {
          const bool ok = (broadcast_into<R>(ev.extents, c.extents) && ...);
          if (!ok) {
            std::string shapes;
            ((shapes += (shapes.empty() ? "" : " and ") + format_extents(c.extents)), ...);
            throw shape_error(describe(node) + ": cannot broadcast operand shapes " + shapes);
          }
        },
        ev.children);
    return ev;
  } else if constexpr (E::kind == node_kind::reduction) {
    auto operand = make_evaluator(std::get<0>(node.args), ctx);
    return reduction_eval<E, decltype(operand)>(std::move(operand));
  } else if constexpr (E::kind == node_kind::view) {
    auto operand = make_evaluator(std::get<0>(node.args), ctx);
    return view_eval<E, decltype(operand)>(std::move(operand), node);
  } else {
    static_assert(E::kind == node_kind::kernel, "symflow::cuda: unknown node kind");
    return std::apply(
        [&](const auto&... a) {
          return kernel_eval<E, decltype(make_evaluator(a, ctx))...>(node, make_evaluator(a, ctx)...);
        },
        node.args);
  }
}

// ---- running fusion groups --------------------------------------------------------------------

struct leaf_record {
  const void* data;
  std::size_t element_size;
};

// Runs the fusion group rooted at `root` over its extents, writing every element of `out` (dense).
template <class Ctx, class T, class H>
void run_map(H& root, Ctx& ctx, T* out) {
  constexpr int FR = H::rank == 0 ? 1 : int(H::rank);
  group_frame f = frame_of<H::rank>(root.extents);
  const std::size_t n = f.size();
  if (n == 0) return;
  root.bind(f);
  frame_strides out_strides{};
  {
    std::size_t acc = 1;
    for (int a = int(f.rank); a-- > 0;) {
      out_strides[a] = acc;
      acc *= f.extents[a];
    }
  }
  std::vector<frame_strides*> arrays{&out_strides};
  std::vector<leaf_record> leaves;
  root.visit([&](frame_strides& s, const void* data, std::size_t size, bool scalar) {
    if (scalar) return;
    arrays.push_back(&s);
    leaves.push_back({data, size});
  });
  collapse(f, arrays.data(), arrays.size());

  constexpr int V = dev::vector_width;
  auto aligned = [](const void* p, std::size_t size) {
    const std::size_t need = std::min<std::size_t>(16, size * V);
    return reinterpret_cast<std::uintptr_t>(p) % need == 0;
  };
  bool dense = f.rank == 1 && aligned(out, sizeof(T));
  for (std::size_t k = 0; k < leaves.size() && dense; ++k)
    dense = (*arrays[k + 1])[0] == 1 && aligned(leaves[k].data, leaves[k].element_size);

  using U = dev::canonical_t<T>;
  const auto d = root.template lower<FR>();
  using ev_t = dev::canonical_t<std::remove_const_t<decltype(d)>>;
  const cudaStream_t s = ctx.stream;
  if (dense) {
    const std::size_t threads = (n + V - 1) / V;
    const std::size_t blocks = (threads + dev::block_threads - 1) / dev::block_threads;
    dev::map_dense_kernel<U, ev_t, V><<<unsigned(blocks), dev::block_threads, 0, s>>>(out, d, n);
    SYMFLOW_CUDA_CHECK_LAUNCH("map_dense_kernel");
  } else if (n <= std::size_t(UINT32_MAX)) {
    dev::index_frame<std::uint32_t> fi{int(f.rank), {}};
    for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = std::uint32_t(f.extents[a]);
    dev::map_strided_kernel<U, ev_t, std::uint32_t, FR>
        <<<dev::grid_for(n, dev::block_threads), dev::block_threads, 0, s>>>(out, d, fi, n);
    SYMFLOW_CUDA_CHECK_LAUNCH("map_strided_kernel");
  } else {
    dev::index_frame<std::uint64_t> fi{int(f.rank), {}};
    for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = f.extents[a];
    dev::map_strided_kernel<U, ev_t, std::uint64_t, FR>
        <<<dev::grid_for(n, dev::block_threads), dev::block_threads, 0, s>>>(out, d, fi, n);
    SYMFLOW_CUDA_CHECK_LAUNCH("map_strided_kernel");
  }
}

// Reduces the fusion group rooted at `operand` over the axes in `mask` into `out` (dense, the kept
// extents in order), evaluating the operand on the fly.
template <class Op, class T, class Ctx, class H, std::size_t RI>
void run_reduce(H& operand, Ctx& ctx, const std::array<bool, RI>& mask, T* out, std::size_t out_size,
                std::size_t count) {
  constexpr int FR = RI == 0 ? 1 : int(RI);
  const cudaStream_t s = ctx.stream;
  const T identity = Op::template identity<T>();
  group_frame f = frame_of<RI>(operand.extents);
  if (out_size == 0) return;
  if (f.size() == 0) {
    dev::fill(out, out_size, T(Op::finish(identity, count)), s);
    return;
  }
  operand.bind(f);
  frame_strides out_strides{};
  {
    std::size_t acc = 1;
    for (int a = int(f.rank); a-- > 0;) {
      bool reduced = true;
      if constexpr (RI > 0) reduced = mask[std::size_t(a)];
      out_strides[a] = reduced ? 0 : acc;
      if (!reduced) acc *= f.extents[a];
    }
  }
  std::vector<frame_strides*> arrays{&out_strides};
  operand.visit([&](frame_strides& st, const void*, std::size_t, bool scalar) {
    if (!scalar) arrays.push_back(&st);
  });
  collapse(f, arrays.data(), arrays.size());

  dev::reduce_frame rf{int(f.rank), 0u, -1, -1, {}};
  int n_reduced = 0, n_kept = 0, last_reduced = -1, last_kept = -1;
  for (int a = 0; a < int(f.rank); ++a) {
    rf.extents[a] = f.extents[a];
    if (out_strides[a] == 0) {
      rf.reduced |= 1u << a;
      ++n_reduced;
      last_reduced = a;
    } else {
      ++n_kept;
      last_kept = a;
    }
  }
  if (n_reduced == 1) rf.single_reduced = last_reduced;
  if (n_kept == 1) rf.single_kept = last_kept;
  // With no reduced (or no kept) axis left the decoding is trivial: index 0 everywhere.
  if (n_reduced == 0) rf.single_reduced = FR;  // matches no axis
  if (n_kept == 0) rf.single_kept = FR;

  using U = dev::canonical_t<T>;
  using O = dev::canonical_t<Op>;
  const auto d = operand.template lower<FR>();
  using ev_t = dev::canonical_t<std::remove_const_t<decltype(d)>>;
  const std::size_t target_threads = std::size_t(detail::sm_count()) * 2048;
  const bool inner_reduced = (rf.reduced >> (f.rank - 1)) & 1u;
  std::size_t chunks = 1;
  int group_log2 = 5;
  if (inner_reduced) {
    group_log2 = count >= 2048 ? 8 : 5;
    const std::size_t group = std::size_t(1) << group_log2;
    const std::size_t busy = out_size * group;
    if (busy < target_threads)
      chunks = std::min((target_threads + busy - 1) / busy, (count + group * 16 - 1) / (group * 16));
  } else {
    if (out_size < target_threads)
      chunks = std::min((target_threads + out_size - 1) / out_size, (count + 63) / 64);
  }
  chunks = std::max<std::size_t>(1, std::min<std::size_t>(chunks, 65535));
  const std::size_t chunk = (count + chunks - 1) / chunks;
  chunks = (count + chunk - 1) / chunk;
  const bool partial = chunks > 1;
  T* dst = partial ? ctx.template allocate<T>(chunks * out_size) : out;

  if (inner_reduced) {
    const std::size_t per_block = std::size_t(dev::block_threads) >> group_log2;
    const dim3 grid(dev::grid_for(out_size, per_block, 65535u * 32u), unsigned(chunks));
    dev::reduce_rows_kernel<O, U, ev_t, FR>
        <<<grid, dev::block_threads, 0, s>>>(d, rf, dst, out_size, count, chunk, identity, group_log2, partial);
    SYMFLOW_CUDA_CHECK_LAUNCH("reduce_rows_kernel");
  } else {
    const dim3 grid(dev::grid_for(out_size, dev::block_threads, 65535u * 32u), unsigned(chunks));
    dev::reduce_cols_kernel<O, U, ev_t, FR>
        <<<grid, dev::block_threads, 0, s>>>(d, rf, dst, out_size, count, chunk, identity, partial);
    SYMFLOW_CUDA_CHECK_LAUNCH("reduce_cols_kernel");
  }
  if (partial) {
    dev::reduce_finish_kernel<O, U><<<dev::grid_for(out_size, dev::block_threads), dev::block_threads, 0, s>>>(
        dst, out, out_size, int(chunks), count, identity);
    SYMFLOW_CUDA_CHECK_LAUNCH("reduce_finish_kernel");
  }
}

// The root of an evaluation: reductions and kernels write straight into `out`; anything else runs
// as one fused map (which also copies a leaf or view into dense memory).
template <class Ev, class Ctx, class T>
void compute(Ev& ev, Ctx& ctx, T* out) {
  if constexpr (requires { ev.compute_into(out, ctx); }) {
    ev.compute_into(out, ctx);
  } else {
    ev.prepare(ctx);
    run_map(ev, ctx, out);
  }
}

}  // namespace detail
}  // namespace symflow::cuda
