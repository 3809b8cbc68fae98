#pragma once
#include <memory>
#include <string>

#include "../core/tensor.hpp"
#include "fixed_string.hpp"
#include "node.hpp"

namespace symflow {

// A value bound to a named leaf for one evaluation: `x = images` or `feed<"x">(images)`.
// It only points at the caller's memory, which must outlive the evaluation.
template <fixed_string Name, class T, std::size_t Rank>
struct feed_binding {
  static constexpr bool is_feed_binding = true;
  static constexpr auto name = Name;
  using value_type = T;
  static constexpr std::size_t rank = Rank;
  tensor_view<const T, dyn_shape<Rank>> value;
};

// Detected through a member rather than a partial specialisation: nvcc 13 does not match partial
// specialisations over class-type template arguments such as the name.
template <class T>
inline constexpr bool is_feed_binding_v = requires { requires T::is_feed_binding; };

template <fixed_string Name, class T, class S>
auto feed(const tensor_view<T, S>& value) {
  using U = std::remove_const_t<T>;
  return feed_binding<Name, U, S::rank>{
      tensor_view<const U, dyn_shape<S::rank>>(value.data(), value.extents(), value.strides())};
}
template <fixed_string Name, class T, class S>
auto feed(const tensor<T, S>& value) {
  return feed<Name>(value.view());
}

namespace detail {
// Shared by placeholder and variable: both are named leaves whose value arrives at evaluation.
template <fixed_string Name, class T, shape_spec S>
struct named_leaf : expression_tag {
  static_assert(is_compute_dtype_v<T>,
                "symflow: expressions compute in float, double, int32_t, int64_t or bool; a storage type "
                "(Eigen::half, Eigen::bfloat16, the small and unsigned integers) is held in a tensor and "
                "converted with convert<float>(t) (or cast in a graph value, whose interpreter widens it)");
  using value_type = T;
  using shape_type = S;
  static constexpr std::size_t rank = S::rank;
  static constexpr auto name = Name;
  node_info info;

  explicit named_leaf(source_site where) : info(capture_node_info(where)) {}

  template <class V>
  auto bind(const V& value) const {
    using bound = std::remove_cvref_t<V>;
    static_assert(is_tensor_v<bound> || is_tensor_view_v<bound>,
                  "symflow: a named leaf is bound to a symflow::tensor or tensor_view");
    using U = std::remove_const_t<typename bound::value_type>;
    static_assert(std::is_same_v<U, T>,
                  "symflow: the value fed to a placeholder or variable has the wrong dtype "
                  "(see the leaf's name and types in the instantiation above)");
    static_assert(bound::rank == S::rank,
                  "symflow: the value fed to a placeholder or variable has the wrong rank");
    return feed<Name>(value);
  }
};
}  // namespace detail

// An input of the model, named at compile time and fed at evaluation: `x = images`.
template <fixed_string Name, class T, shape_spec S>
struct placeholder : detail::named_leaf<Name, T, S> {
  static constexpr node_kind kind = node_kind::placeholder;
  static constexpr std::string_view op_name = "placeholder";
  placeholder(source_site where = source_site::current())
      : detail::named_leaf<Name, T, S>(where) {}
  template <class V>
    requires(is_tensor_v<std::remove_cvref_t<V>> || is_tensor_view_v<std::remove_cvref_t<V>>)
  auto operator=(const V& value) const {
    return this->bind(value);
  }
};

// A trained parameter, named at compile time; its value lives in a parameter store (or is fed).
template <fixed_string Name, class T, shape_spec S>
struct variable : detail::named_leaf<Name, T, S> {
  static constexpr node_kind kind = node_kind::variable;
  static constexpr std::string_view op_name = "variable";
  variable(source_site where = source_site::current())
      : detail::named_leaf<Name, T, S>(where) {}
  template <class V>
    requires(is_tensor_v<std::remove_cvref_t<V>> || is_tensor_view_v<std::remove_cvref_t<V>>)
  auto operator=(const V& value) const {
    return this->bind(value);
  }
};

// A tensor baked into the expression. Shared, so copying the expression copies no elements.
template <class T, shape_spec S>
struct constant_node : expression_tag {
  static_assert(is_compute_dtype_v<T>,
                "symflow: constant(t): expressions compute in float, double, int32_t, int64_t or bool; "
                "convert a tensor of a storage type first (convert<float>(t))");
  static constexpr node_kind kind = node_kind::constant;
  static constexpr std::string_view op_name = "constant";
  using value_type = T;
  using shape_type = S;
  static constexpr std::size_t rank = S::rank;
  std::shared_ptr<const tensor<T, S>> value;
  node_info info;
};

template <class T, class S>
auto constant(tensor<T, S> value, source_site where = source_site::current()) {
  return constant_node<T, S>{{}, std::make_shared<const tensor<T, S>>(std::move(value)),
                             capture_node_info(where)};
}

// A scalar whose value is known when the expression is built (`2.0f * x`).
template <class T>
struct scalar_literal : expression_tag {
  static constexpr node_kind kind = node_kind::literal;
  static constexpr std::string_view op_name = "literal";
  using value_type = T;
  using shape_type = shape<>;
  static constexpr std::size_t rank = 0;
  T value;
  node_info info{};
};

// A scalar whose value is part of the type: zero and one (and small integers the simplifier
// folds). Its value is visible to type-level rewrites such as x * 0 -> 0.
template <class T, long long Value>
struct static_literal : expression_tag {
  static constexpr node_kind kind = node_kind::literal;
  static constexpr std::string_view op_name = "literal";
  using value_type = T;
  using shape_type = shape<>;
  static constexpr std::size_t rank = 0;
  static constexpr T value = static_cast<T>(Value);
  node_info info{};
};

template <class T>
using zero = static_literal<T, 0>;
template <class T>
using one = static_literal<T, 1>;

template <class E>
inline constexpr bool is_static_literal_v = false;
template <class T, long long V>
inline constexpr bool is_static_literal_v<static_literal<T, V>> = true;

// Turns an operand into an expression: arithmetic scalars become literals of dtype T.
template <class T, class X>
auto as_expression(const X& x) {
  if constexpr (expression<X>) return x;
  else return scalar_literal<T>{{}, static_cast<T>(x)};
}

}  // namespace symflow
