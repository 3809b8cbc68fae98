#pragma once
// Host side of the CUDA evaluator. It mirrors the CPU evaluator: building the tree checks every
// runtime extent before any work; prepare() materialises what cannot fuse (kernels, views of computed
// values, inner reductions); each fusion group is then lowered to a name-free device evaluator
// (device.hpp) and run by one templated kernel (kernels.hpp). Dispatch is on node_kind only;
// everything op-specific comes from the op type (its scalar function, identity/combine/finish, layout
// rule or kernel).
#include <algorithm>
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
#include <symflow/eval/cpu/context.hpp>
#include <symflow/eval/cpu/frame.hpp>
#include <symflow/expr/broadcast.hpp>
#include <symflow/expr/elementwise.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/reduction.hpp>
#include <symflow/expr/same_value.hpp>
#include <symflow/expr/structural.hpp>
#include <symflow/expr/to_string.hpp>

#include "device.hpp"
#include "device_tensor.hpp"
#include "evaluation_context.hpp"
#include "leaf_slots.hpp"
#include "kernels.hpp"
#include "placement_log.hpp"

namespace symflow::cuda {

namespace detail {

// ---- where evaluators come from (placement log) -----------------------------------------------

// "dense1/relu", "log_softmax/sum{axes=[1], keepdims}", "x": a node as the placement log names it.
template <expression E>
std::string node_label(const E& e) {
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    return e.info.scoped_name(E::name.view());
  } else if constexpr (E::kind == node_kind::constant) {
    return e.info.scoped_name("constant");
  } else if constexpr (E::kind == node_kind::literal) {
    return symflow::detail::literal_string(e.value);
  } else {
    std::string s = e.info.scoped_name(E::op_name);
    const std::string attributes = symflow::detail::attribute_string(e);
    if (!attributes.empty()) s += "{" + attributes + "}";
    return s;
  }
}

// "f32[256,1024]": a result as the placement log shows it.
template <class T, std::size_t R>
std::string value_type_string(const extents_t<R>& e) {
  return std::string(dtype_name(dtype_v<T>)) + format_extents(e);
}

// The symbolic node an evaluator was built from, type-erased: two pointers per evaluator, formatted
// only when the placement log asks.
struct node_ref {
  const void* node = nullptr;
  std::string (*label)(const void*) = nullptr;
  std::string text() const { return label ? label(node) : std::string("?"); }
};
template <expression E>
node_ref ref_of(const E& e) {
  return {&e, [](const void* p) { return node_label(*static_cast<const E*>(p)); }};
}

// What a computation reads from memory: a visitor receives each leaf's data, the bytes it spans,
// its rank, extents and strides (outputs are checked against it before they are written).
struct memory_read {
  const void* data;
  std::size_t span_bytes;
  std::size_t rank;
  const std::size_t* extents;
  const std::size_t* strides;
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
  static device_leaf of_shared(const shared_value& v) {
    device_leaf l;
    l.data = static_cast<const T*>(v.data);
    l.rank = v.rank;
    l.extents = v.extents;
    l.strides = v.strides;
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
  template <class F>
  void visit_reads(F&& f) const {
    if (data) f(memory_read{data, span() * sizeof(T), rank, extents.data(), strides.data()});
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
// Besides prepare/bind/visit/lower, every evaluator can describe the part of its fusion group it
// heads (`describe`, for the placement log) and list the memory its group reads (`visit_reads`,
// valid after prepare).

// A value already in memory: a feed, a variable, a constant. Host memory is uploaded by prepare().
// Key is the leaf's node type for placeholders and variables (one memory per evaluation, whatever
// the occurrence), void for constants (two constants of one type may hold different values).
template <class T, std::size_t R, class Key = void>
struct memory_eval {
  using value_type = T;
  static constexpr std::size_t rank = R;
  using keys = typename key_add<key_list<>, Key>::type;
  extents_t<R> extents{};
  device_leaf<T> leaf;
  const T* host = nullptr;  // set while the value still has to be uploaded
  node_ref source{};

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
  template <class F>
  void visit_reads(F&& f) const {
    leaf.visit_reads(f);
  }
  void describe(std::string& out) const { out += source.text(); }
  template <int FR, class Keys>
  auto lower() const {
    if constexpr (std::is_void_v<Key>) {
      return leaf.template lower<FR, R == 0>();
    } else {
      constexpr int slot = key_index<Key, Keys>::value;
      static_assert(slot >= 0, "symflow::cuda: a named leaf is missing from its group's key list");
      if constexpr (R == 0) return dev::scalar_slot<T, slot>{};
      else return dev::leaf_slot<T, FR, slot>{};
    }
  }
  template <class Keys, int N, int FR>
  void fill_table(dev::leaf_table<N, FR>& table) const {
    if constexpr (!std::is_void_v<Key>) {
      constexpr int slot = key_index<Key, Keys>::value;
      table.p[slot] = leaf.data;
      for (int a = 0; a < FR; ++a) table.s[slot][a] = leaf.in_frame[a];
    }
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
  template <class F>
  void visit_reads(F&&) const {}
  void describe(std::string& out) const { out += symflow::detail::literal_string(value); }
  template <int FR, class Keys>
  auto lower() const {
    return dev::literal<T>{value};
  }
  template <class Keys, int N, int FR>
  void fill_table(dev::leaf_table<N, FR>&) const {}
};

// A literal whose value its type carries (static_literal): a constant in the kernel.
template <class T, long long Value>
struct fixed_literal_eval {
  using value_type = T;
  static constexpr std::size_t rank = 0;
  extents_t<0> extents{};
  template <class Ctx>
  void prepare(Ctx&) {}
  void bind(const group_frame&) {}
  template <class F>
  void visit(F&&) {}
  template <class F>
  void visit_reads(F&&) const {}
  void describe(std::string& out) const { out += symflow::detail::literal_string(T(Value)); }
  template <int FR, class Keys>
  auto lower() const {
    return dev::fixed_literal<T, Value>{};
  }
  template <class Keys, int N, int FR>
  void fill_table(dev::leaf_table<N, FR>&) const {}
};

template <class Op, class T, std::size_t R, class... C>
struct elementwise_eval {
  using value_type = T;
  static constexpr std::size_t rank = R;
  using keys = merged_keys_t<C...>;
  std::tuple<C...> children;
  extents_t<R> extents{};
  node_ref source{};

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
  template <class F, std::size_t... I>
  void visit_reads(F&& f, std::index_sequence<I...>) const {
    ((reads_operand<Op, I>() ? std::get<I>(children).visit_reads(f) : void()), ...);
  }
  template <class F>
  void visit_reads(F&& f) const {
    visit_reads(f, std::index_sequence_for<C...>{});
  }
  template <std::size_t... I>
  void describe(std::string& out, std::index_sequence<I...>) const {
    ((out += (I == 0 ? "" : ", "), reads_operand<Op, I>() ? std::get<I>(children).describe(out) : void(out += "_")),
     ...);
  }
  void describe(std::string& out) const {
    out += source.text() + "(";
    describe(out, std::index_sequence_for<C...>{});
    out += ")";
  }
  template <int FR, class Keys, std::size_t I>
  auto lower_child() const {
    using V = typename std::tuple_element_t<I, std::tuple<C...>>::value_type;
    if constexpr (reads_operand<Op, I>()) return std::get<I>(children).template lower<FR, Keys>();
    else return dev::unread<V>{};
  }
  template <int FR, class Keys>
  auto lower() const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      using result = dev::map<Op, T, decltype(lower_child<FR, Keys, I>())...>;
      return result{dev::make_pack(lower_child<FR, Keys, I>()...)};
    }(std::index_sequence_for<C...>{});
  }
  template <class Keys, int N, int FR>
  void fill_table(dev::leaf_table<N, FR>& table) const {
    for_read_const([&](const auto& c) { c.template fill_table<Keys>(table); });
  }
  template <class F, std::size_t... I>
  void for_read_const(F&& f, std::index_sequence<I...>) const {
    ((reads_operand<Op, I>() ? f(std::get<I>(children)) : void()), ...);
  }
  template <class F>
  void for_read_const(F&& f) const {
    for_read_const(f, std::index_sequence_for<C...>{});
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
  node_ref source{};
  const device_leaf<T>& as_leaf() const { return result; }
  void bind(const group_frame& f) { result.bind(f); }
  template <class F>
  void visit(F&& f) {
    result.template visit<R == 0>(f);
  }
  template <class F>
  void visit_reads(F&& f) const {
    result.visit_reads(f);
  }
  // Inside another group: a value another kernel computed.
  void describe(std::string& out) const {
    out += '[';
    out += source.text();
    out += ']';
  }
  template <int FR, class Keys>
  auto lower() const {
    return result.template lower<FR, R == 0>();
  }
  template <class Keys, int N, int FR>
  void fill_table(dev::leaf_table<N, FR>&) const {}
  void set_dense(const T* data) {
    result = device_leaf<T>::template of<R>(data, extents, row_major_strides<R>(extents));
    ready = true;
  }
  // Computes the value once per evaluation: an identical node met earlier is read instead.
  template <class Node, class Ctx, class Compute>
  void prepare_shared(const Node& node, Ctx& ctx, Compute&& compute) {
    if (ready) return;
    if (const shared_value* v = ctx.find_shared(node)) {
      result = device_leaf<T>::of_shared(*v);
      ready = true;
      return;
    }
    T* out = ctx.template allocate<T>(element_count<R>(extents));
    compute(out);
    set_dense(out);
    shared_value v;
    v.data = out;
    v.rank = R;
    v.extents = result.extents;
    v.strides = result.strides;
    ctx.remember(node, v);
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
                std::size_t count, const node_ref& source);

template <class Node, class C>
struct reduction_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  using Op = typename Node::op_type;
  using node_type = Node;
  C operand;
  const Node* node;
  std::size_t reduced_count = 1;

  reduction_eval(C c, const Node& n) : operand(std::move(c)), node(&n) {
    this->extents = reduction_result_extents<Node>(operand.extents, reduced_count);
    this->source = ref_of(n);
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx) {
    operand.prepare(ctx);
    run_reduce<Op, T>(operand, ctx, Node::mask, out, element_count<Node::rank>(this->extents), reduced_count,
                      this->source);
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) { compute_into(out, ctx); });
  }
  // As the root of an evaluation (computing into the output): what its kernel reads.
  template <class Ctx>
  void prepare_operands(Ctx& ctx) {
    operand.prepare(ctx);
  }
  template <class F>
  void visit_root_reads(F&& f) const {
    operand.visit_reads(f);
  }
};

template <class Node, class C>
struct view_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  C operand;
  typename Node::op_type op;
  view_eval(C c, const Node& node) : operand(std::move(c)), op(node.op) {
    this->extents = op.infer_extents(describe_later(node), operand.extents);
    this->source = ref_of(node);
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
  // A view of memory heading a group (a copy): it names what it views.
  void describe(std::string& out) const {
    out += this->source.text() + "(";
    operand.describe(out);
    out += ")";
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
  const Node* node;
  kernel_eval(const Node& n, C... c) : operands(std::move(c)...), op(n.op), node(&n) {
    this->extents =
        std::apply([&](const auto&... o) { return op.infer_extents(describe_later(n), o.extents...); }, operands);
    this->source = ref_of(n);
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx);  // kernel_ops.hpp
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) { compute_into(out, ctx); });
  }
  // Operands the op does not read (reduced_count's) are neither computed nor counted as read.
  template <class Ctx, std::size_t... I>
  void prepare_operands(Ctx& ctx, std::index_sequence<I...>) {
    ((reads_operand<Op, I>() ? std::get<I>(operands).prepare(ctx) : void()), ...);
  }
  template <class Ctx>
  void prepare_operands(Ctx& ctx) {
    prepare_operands(ctx, std::index_sequence_for<C...>{});
  }
  template <class F, std::size_t... I>
  void visit_root_reads(F&& f, std::index_sequence<I...>) const {
    ((reads_operand<Op, I>() ? std::get<I>(operands).visit_reads(f) : void()), ...);
  }
  template <class F>
  void visit_root_reads(F&& f) const {
    visit_root_reads(f, std::index_sequence_for<C...>{});
  }
  std::string operand_list() const {
    std::string s;
    std::apply([&](const auto&... o) { ((s += (s.empty() ? "" : ", "), o.describe(s)), ...); }, operands);
    return s;
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
      if constexpr (is_device_feed_v<binding>) return memory_eval<T, R, Leaf>::on_device(v.data(), v.extents(), v.strides());
      else return memory_eval<T, R, Leaf>::on_host(v.data(), v.extents(), v.strides());
    }
  } else if constexpr (is_variable && (Ctx::device_params_index() != Ctx::npos || Ctx::host_params_index() != Ctx::npos)) {
    const std::string name(Leaf::name.view());
    if constexpr (Ctx::device_params_index() != Ctx::npos) {
      const device_params& store = std::get<Ctx::device_params_index()>(ctx.sources);
      if (store.contains(name)) {
        const auto v = store.template view<T, dyn_shape<R>>(name);
        check(v.extents());
        return memory_eval<T, R, Leaf>::on_device(v.data(), v.extents(), v.strides());
      }
    }
    if constexpr (Ctx::host_params_index() != Ctx::npos) {
      const params& store = std::get<Ctx::host_params_index()>(ctx.sources);
      if (store.contains(name)) {
        const auto v = store.template view<T, dyn_shape<R>>(name);
        check(v.extents());
        return memory_eval<T, R, Leaf>::on_host(v.data(), v.extents(), v.strides());
      }
    }
    throw value_error(describe(leaf) + ": variable '" + name + "' has no value in the params store");
    return memory_eval<T, R, Leaf>{};
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

template <class T, long long Value>
fixed_literal_eval<T, Value> static_literal_evaluator(const static_literal<T, Value>&) {
  return {};
}

template <expression E, class Ctx>
auto make_evaluator(const E& node, Ctx& ctx) {
  using T = typename E::value_type;
  constexpr std::size_t R = E::rank;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    auto ev = named_leaf_evaluator(node, ctx);
    ev.source = ref_of(node);
    return ev;
  } else if constexpr (E::kind == node_kind::literal && is_static_literal_v<E>) {
    return static_literal_evaluator(node);
  } else if constexpr (E::kind == node_kind::constant) {
    auto ev = memory_eval<T, R>::on_host(node.value->data(), node.value->extents(), node.value->strides());
    ev.source = ref_of(node);
    return ev;
  } else if constexpr (E::kind == node_kind::literal) {
    return literal_eval<T>{{}, T(node.value)};
  } else if constexpr (E::kind == node_kind::elementwise) {
    auto ev = std::apply(
        [&](const auto&... a) {
          using eval_t = elementwise_eval<typename E::op_type, T, R, decltype(make_evaluator(a, ctx))...>;
          return eval_t{{make_evaluator(a, ctx)...}, {}, ref_of(node)};
        },
        node.args());
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
    auto operand = make_evaluator(std::get<0>(node.args()), ctx);
    return reduction_eval<E, decltype(operand)>(std::move(operand), node);
  } else if constexpr (E::kind == node_kind::view) {
    auto operand = make_evaluator(std::get<0>(node.args()), ctx);
    return view_eval<E, decltype(operand)>(std::move(operand), node);
  } else {
    static_assert(E::kind == node_kind::kernel, "symflow::cuda: unknown node kind");
    return std::apply(
        [&](const auto&... a) {
          return kernel_eval<E, decltype(make_evaluator(a, ctx))...>(node, make_evaluator(a, ctx)...);
        },
        node.args());
  }
}

// The fusion group an evaluator heads, as text: "dense1/relu(dense1/add([dense1/matmul], b1))".
template <class H>
std::string describe_group(const H& head) {
  std::string s;
  head.describe(s);
  return s;
}

// Root evaluators that are maps (elementwise, a leaf or view copied out) prepare themselves; roots
// computed straight into the output (reductions, kernels) only their operands.
template <class Ev, class Ctx>
void prepare_root(Ev& ev, Ctx& ctx) {
  if constexpr (requires { ev.prepare_operands(ctx); }) ev.prepare_operands(ctx);
  else ev.prepare(ctx);
}
template <class Ev, class F>
void visit_root_reads(const Ev& ev, F&& f) {
  if constexpr (requires { ev.visit_root_reads(f); }) ev.visit_root_reads(f);
  else ev.visit_reads(f);
}

}  // namespace detail
}  // namespace symflow::cuda

// The fusion-group runners (run_map, run_reduce, compute) are in fusion_groups.hpp.
