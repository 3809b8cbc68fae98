#pragma once
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace symflow {

// NumPy-like printing options; change them through print_options() (process-wide, like numpy's).
struct print_settings {
  int precision = 4;            // digits after the decimal point
  std::size_t threshold = 1000;  // more elements than this are summarised with "..."
  std::size_t edge_items = 3;    // elements kept at each end of a summarised axis
};

inline print_settings& print_options() {
  static print_settings settings;
  return settings;
}

namespace detail {

template <class T>
std::string format_element(T value, bool scientific, int precision) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(value);
  } else {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, scientific ? "%.*e" : "%.*f", precision, static_cast<double>(value));
    std::string s = buf;
    if (!scientific) {  // numpy trims trailing zeros but keeps the point: 1.5000 -> 1.5, 2.0000 -> 2.
      auto dot = s.find('.');
      if (dot != std::string::npos) {
        auto last = s.find_last_not_of('0');
        s.erase(std::max(last, dot) + 1);
      }
    }
    return s;
  }
}

template <class T, class S>
class tensor_printer {
  static constexpr std::size_t rank = S::rank;

 public:
  explicit tensor_printer(const tensor_view<const T, S>& v) : v_(v), opt_(print_options()) {
    summarise_ = v.size() > opt_.threshold;
    if constexpr (std::is_floating_point_v<T>) {
      double max_abs = 0, min_abs = INFINITY;
      visit_kept([&](T x) {
        if (std::isfinite(x) && x != 0) {
          max_abs = std::max(max_abs, std::abs(double(x)));
          min_abs = std::min(min_abs, std::abs(double(x)));
        }
      });
      scientific_ = max_abs >= 1e8 || (min_abs < 1e-4 && max_abs > 0);
    }
    visit_kept([&](T x) { width_ = std::max(width_, format_element(x, scientific_, opt_.precision).size()); });
  }

  void print(std::ostream& os) const {
    if constexpr (rank == 0) {
      os << format_element(v_.data()[0], scientific_, opt_.precision);
    } else {
      extents_t<rank> idx{};
      print_axis(os, idx, 0);
    }
  }

 private:
  std::vector<std::size_t> kept_indices(std::size_t axis) const {
    std::vector<std::size_t> out;
    std::size_t n = v_.extent(axis);
    if (summarise_ && n > 2 * opt_.edge_items) {
      for (std::size_t i = 0; i < opt_.edge_items; ++i) out.push_back(i);
      out.push_back(dyn);  // the ellipsis
      for (std::size_t i = n - opt_.edge_items; i < n; ++i) out.push_back(i);
    } else {
      for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    }
    return out;
  }

  template <class F>
  void visit_kept(F&& f) const {
    if constexpr (rank == 0) {
      f(v_.data()[0]);
    } else {
      extents_t<rank> idx{};
      visit_axis(f, idx, 0);
    }
  }
  template <class F>
  void visit_axis(F& f, extents_t<rank>& idx, std::size_t axis) const {
    for (std::size_t i : kept_indices(axis)) {
      if (i == dyn) continue;
      idx[axis] = i;
      if (axis + 1 == rank) f(at(idx));
      else visit_axis(f, idx, axis + 1);
    }
  }
  T at(const extents_t<rank>& idx) const {
    std::size_t off = 0;
    for (std::size_t a = 0; a < rank; ++a) off += idx[a] * v_.strides()[a];
    return v_.data()[off];
  }

  void print_axis(std::ostream& os, extents_t<rank>& idx, std::size_t axis) const {
    os << '[';
    bool first = true;
    for (std::size_t i : kept_indices(axis)) {
      if (!first) {
        if (axis + 1 == rank) os << ' ';
        else os << std::string(rank - axis - 1, '\n') << std::string(axis + 1, ' ');
      }
      first = false;
      if (i == dyn) {
        os << "...";
        continue;
      }
      idx[axis] = i;
      if (axis + 1 == rank) {
        std::string s = format_element(at(idx), scientific_, opt_.precision);
        os << std::string(width_ - s.size(), ' ') << s;
      } else {
        print_axis(os, idx, axis + 1);
      }
    }
    os << ']';
  }

  tensor_view<const T, S> v_;
  print_settings opt_;
  bool summarise_ = false;
  bool scientific_ = false;
  std::size_t width_ = 0;
};

}  // namespace detail

template <class T, class S>
std::ostream& operator<<(std::ostream& os, const tensor_view<T, S>& v) {
  detail::tensor_printer<std::remove_const_t<T>, S>(tensor_view<const std::remove_const_t<T>, S>(
                                                        v.data(), v.extents(), v.strides()))
      .print(os);
  return os;
}

template <class T, class S>
std::ostream& operator<<(std::ostream& os, const tensor<T, S>& t) {
  return os << t.view();
}

}  // namespace symflow
