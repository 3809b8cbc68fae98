#pragma once
// The evaluator of an elementwise node: fused into its consumer's kernel, it lowers to a dev::map of
// its operands' device evaluators. Operands its op does not read are neither prepared nor lowered.
#include <cstddef>
#include <string>
#include <tuple>
#include <utility>

#include <symflow/core/tensor.hpp>

#include "device.hpp"
#include "device_leaf.hpp"
#include "leaf_slots.hpp"
#include "node_labels.hpp"

namespace symflow::cuda {
namespace detail {

// Ops may leave an operand unread (expand_as uses its second operand for its extents only).
template <class Op, std::size_t I>
constexpr bool reads_operand() {
  if constexpr (requires { Op::template reads_operand<I>; }) return Op::template reads_operand<I>;
  else return true;
}

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

}  // namespace detail
}  // namespace symflow::cuda
