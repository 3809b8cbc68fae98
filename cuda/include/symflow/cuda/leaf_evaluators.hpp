#pragma once
// Evaluators of the leaves of a fusion group: a value already in memory (a feed, a variable, a
// constant; host memory is uploaded by prepare()), a literal carried as a kernel argument, and a
// literal whose value its type carries (a constant in the kernel). The evaluator interface is
// described in evaluators.hpp.
#include <cstddef>
#include <string>
#include <type_traits>

#include <symflow/core/tensor.hpp>
#include <symflow/expr/to_string.hpp>

#include "device.hpp"
#include "device_leaf.hpp"
#include "leaf_slots.hpp"
#include "node_labels.hpp"

namespace symflow::cuda {
namespace detail {

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

}  // namespace detail
}  // namespace symflow::cuda
