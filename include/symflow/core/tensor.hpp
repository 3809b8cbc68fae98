#pragma once
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "aligned_buffer.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "shape.hpp"

namespace symflow {

// Tag: allocate without initialising (the caller writes every element, e.g. an evaluation output).
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
inline constexpr uninitialized_t uninitialized{};

// A non-owning, possibly strided window onto elements of type T laid out with the given extents.
template <class T, shape_spec S>
class tensor_view {
 public:
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
  static constexpr std::size_t rank = S::rank;

  tensor_view() = default;
  tensor_view(T* data, const extents_t<rank>& extents)
      : tensor_view(data, extents, row_major_strides<rank>(extents)) {}
  tensor_view(T* data, const extents_t<rank>& extents, const extents_t<rank>& strides)
      : data_(data), extents_(extents), strides_(strides) {
    if (!extents_match<S>(extents_))
      throw shape_error("tensor_view: extents " + format_extents(extents_) +
                        " do not fit the static shape " + shape_string<S>());
  }
  // A view of mutable elements converts to a view of const ones.
  template <class U>
    requires(std::is_const_v<T> && std::is_same_v<std::remove_const_t<T>, U>)
  tensor_view(const tensor_view<U, S>& other)
      : data_(other.data()), extents_(other.extents()), strides_(other.strides()) {}

  T* data() const noexcept { return data_; }
  const extents_t<rank>& extents() const noexcept { return extents_; }
  std::size_t extent(std::size_t axis) const noexcept { return extents_[axis]; }
  const extents_t<rank>& strides() const noexcept { return strides_; }
  std::size_t size() const noexcept { return element_count<rank>(extents_); }
  bool is_contiguous() const noexcept {
    return size() == 0 || strides_ == row_major_strides<rank>(extents_);
  }

  template <class... I>
    requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  T& operator()(I... index) const noexcept {
    std::size_t offset = 0, axis = 0;
    ((offset += static_cast<std::size_t>(index) * strides_[axis++]), ...);
    return data_[offset];
  }

 private:
  T* data_ = nullptr;
  extents_t<rank> extents_{};
  extents_t<rank> strides_{};
};

namespace detail {
template <class T, std::size_t Rank>
struct nested_init {
  using type = std::initializer_list<typename nested_init<T, Rank - 1>::type>;
};
template <class T>
struct nested_init<T, 1> {
  using type = std::initializer_list<T>;
};
template <class T>
struct nested_init<T, 0> {
  using type = T;
};

template <class T, std::size_t Rank, std::size_t Axis, class List>
void read_extents(const List& list, extents_t<Rank>& extents, bool& ragged) {
  if constexpr (Axis < Rank) {
    if constexpr (Axis + 1 < Rank) {
      bool first = true;
      for (const auto& sub : list) {
        if (first) extents[Axis] = list.size();
        extents_t<Rank> inner = extents;
        read_extents<T, Rank, Axis + 1>(sub, inner, ragged);
        if (!first && inner != extents) ragged = true;
        extents = inner;
        first = false;
      }
      if (first) extents[Axis] = 0;
    } else {
      extents[Axis] = list.size();
    }
  }
}

template <class T, std::size_t Rank, std::size_t Axis, class List>
void copy_nested(const List& list, T*& out) {
  if constexpr (Axis + 1 < Rank) {
    for (const auto& sub : list) copy_nested<T, Rank, Axis + 1>(sub, out);
  } else {
    for (const auto& x : list) *out++ = x;
  }
}
}  // namespace detail

// An owning, dense, row-major tensor. Extents marked `dyn` in S are fixed when the tensor is built.
// Copies are deep (value semantics, like an Eigen matrix); moves are cheap.
template <class T, shape_spec S>
class tensor {
  static_assert(is_supported_dtype_v<T>,
                "symflow: tensor element types are float, double, int32_t, int64_t, bool and the storage types "
                "Eigen::half, Eigen::bfloat16, int8_t, uint8_t, int16_t, uint16_t, uint32_t, uint64_t");

 public:
  using value_type = T;
  using shape_type = S;
  static constexpr std::size_t rank = S::rank;
  using nested_list = typename detail::nested_init<T, rank>::type;

  // Fully static shapes allocate zero-filled storage; shapes with dyn extents start empty.
  tensor() {
    if constexpr (S::is_static) {
      extents_ = S::extents;
      buffer_ = aligned_buffer<T>(element_count<rank>(extents_));
      fill(T{});
    }
  }
  explicit tensor(const extents_t<rank>& extents) : tensor(extents, uninitialized) { fill(T{}); }
  tensor(const extents_t<rank>& extents, uninitialized_t) : extents_(checked(extents)) {
    buffer_ = aligned_buffer<T>(element_count<rank>(extents_));
  }
  tensor(const extents_t<rank>& extents, T value) : tensor(extents, uninitialized) { fill(value); }

  // tensor<float, shape<2, 3>> t{{1, 2, 3}, {4, 5, 6}};  a rank-0 tensor takes a plain value.
  tensor(nested_list values)
    requires(rank > 0)
  {
    extents_t<rank> e{};
    bool ragged = false;
    detail::read_extents<T, rank, 0>(values, e, ragged);
    if (ragged) throw shape_error("tensor: nested initializer lists are ragged");
    extents_ = checked(e);
    buffer_ = aligned_buffer<T>(element_count<rank>(extents_));
    T* out = buffer_.data();
    detail::copy_nested<T, rank, 0>(values, out);
  }
  tensor(T value)
    requires(rank == 0)
      : buffer_(1) {
    buffer_.data()[0] = value;
  }

  // Copies the elements of any view with compatible shape (strided views included).
  template <class U, shape_spec S2>
    requires(std::is_same_v<std::remove_const_t<U>, T> && S2::rank == rank)
  static tensor copy_of(const tensor_view<U, S2>& v) {
    tensor t(v.extents(), uninitialized);
    std::size_t i = 0;
    for_each_index(v.extents(), [&](const extents_t<rank>& idx) {
      std::size_t off = 0;
      for (std::size_t a = 0; a < rank; ++a) off += idx[a] * v.strides()[a];
      t.data()[i++] = v.data()[off];
    });
    return t;
  }

  T* data() noexcept { return buffer_.data(); }
  const T* data() const noexcept { return buffer_.data(); }
  const extents_t<rank>& extents() const noexcept { return extents_; }
  std::size_t extent(std::size_t axis) const noexcept { return extents_[axis]; }
  extents_t<rank> strides() const noexcept { return row_major_strides<rank>(extents_); }
  std::size_t size() const noexcept { return element_count<rank>(extents_); }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size(); }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size(); }

  void fill(T value) { std::fill(begin(), end(), value); }

  T& operator[](std::size_t linear) noexcept { return data()[linear]; }
  const T& operator[](std::size_t linear) const noexcept { return data()[linear]; }
  template <class... I>
    requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  T& operator()(I... index) noexcept {
    return data()[offset_of(index...)];
  }
  template <class... I>
    requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
  const T& operator()(I... index) const noexcept {
    return data()[offset_of(index...)];
  }

  tensor_view<T, S> view() noexcept { return {data(), extents_}; }
  tensor_view<const T, S> view() const noexcept { return {data(), extents_}; }
  operator tensor_view<T, S>() noexcept { return view(); }
  operator tensor_view<const T, S>() const noexcept { return view(); }

  template <class F>
  static void for_each_index(const extents_t<rank>& extents, F&& f) {
    if (element_count<rank>(extents) == 0) return;
    extents_t<rank> idx{};
    for (;;) {
      f(idx);
      std::size_t axis = rank;
      while (axis > 0) {
        --axis;
        if (++idx[axis] < extents[axis]) break;
        idx[axis] = 0;
        if (axis == 0) return;
      }
      if constexpr (rank == 0) return;
    }
  }

 private:
  static extents_t<rank> checked(const extents_t<rank>& e) {
    if (!extents_match<S>(e))
      throw shape_error("tensor: extents " + format_extents(e) + " do not fit the static shape " +
                        shape_string<S>());
    return e;
  }
  template <class... I>
  std::size_t offset_of(I... index) const noexcept {
    std::size_t offset = 0, axis = 0;
    [[maybe_unused]] const auto s = strides();  // unused by a rank-0 tensor
    ((offset += static_cast<std::size_t>(index) * s[axis++]), ...);
    return offset;
  }

  aligned_buffer<T> buffer_;
  extents_t<rank> extents_{};
};

template <class T>
inline constexpr bool is_tensor_v = false;
template <class T, class S>
inline constexpr bool is_tensor_v<tensor<T, S>> = true;

template <class T>
inline constexpr bool is_tensor_view_v = false;
template <class T, class S>
inline constexpr bool is_tensor_view_v<tensor_view<T, S>> = true;

}  // namespace symflow
