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
std::string format_element(T value) {
  if constexpr (std::is_same_v<T, bool>) return value ? "True" : "False";
  else return std::to_string(value);
}

// How numpy lays out floating-point elements (floatmode "maxprec", sign "-"): fixed notation with
// at most `precision` digits after the point, trailing zeros trimmed ("2.", "1.5"), the integer parts
// right-aligned and the fractions left-aligned on the point ("[1.5  2.   3.25]"); scientific
// notation when a non-zero magnitude is >= 1e8 or < 1e-4, or the largest over the smallest exceeds
// 1000, with every mantissa given the same number of digits ("[1.0e-05 1.5e+00]").
struct float_layout {
  bool scientific = false;
  int precision = 4;
  std::size_t exp_digits = 2;  // scientific: exponent digits, the same for all
  std::size_t pad_left = 0;    // characters before the point
  std::size_t pad_right = 0;   // fixed: characters after the point

  // "%.*f" with trailing zeros dropped (keeping the point), or "%.*e" with the mantissa so trimmed.
  static std::string trimmed(double v, bool scientific, int precision) {
    char buf[512];
    std::snprintf(buf, sizeof buf, scientific ? "%#.*e" : "%#.*f", precision, v);
    std::string s = buf;
    const auto e = scientific ? s.find('e') : s.size();
    std::string mantissa = s.substr(0, e);
    const auto last = mantissa.find_last_not_of('0');
    mantissa.erase(std::max(last, mantissa.find('.')) + 1);
    return mantissa + s.substr(e);
  }
  // Splits "m.ffe+xx" into the part before the point, the fraction and the exponent digits.
  static void split(const std::string& s, std::string& whole, std::string& frac, std::string& exp) {
    const auto dot = s.find('.');
    const auto e = s.find('e');
    whole = s.substr(0, dot);
    frac = s.substr(dot + 1, (e == std::string::npos ? s.size() : e) - dot - 1);
    exp = e == std::string::npos ? "" : s.substr(e + 2);
  }

  template <class T>
  void observe(T x) {  // first pass over the finite values: sizes
    if (!std::isfinite(x)) return;
    std::string whole, frac, exp;
    split(trimmed(double(x), scientific, precision), whole, frac, exp);
    pad_left = std::max(pad_left, whole.size());
    pad_right = std::max(pad_right, frac.size());
    exp_digits = std::max(exp_digits, exp.size());
  }
  template <class T>
  std::string format(T x) const {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    std::string whole, frac, exp;
    if (scientific) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%#.*e", int(pad_right), double(x));
      const std::string s = buf;
      split(s, whole, frac, exp);
      exp.insert(0, exp_digits - std::min(exp_digits, exp.size()), '0');
      exp.insert(0, 1, s[s.find('e') + 1]);
      return std::string(pad_left - std::min(pad_left, whole.size()), ' ') + whole + "." + frac + "e" + exp;
    }
    split(trimmed(double(x), false, precision), whole, frac, exp);
    return std::string(pad_left - std::min(pad_left, whole.size()), ' ') + whole + "." + frac +
           std::string(pad_right - std::min(pad_right, frac.size()), ' ');
  }
};

template <class T, class S>
class tensor_printer {
  static constexpr std::size_t rank = S::rank;

 public:
  explicit tensor_printer(const tensor_view<const T, S>& v) : v_(v), opt_(print_options()) {
    summarise_ = v.size() > opt_.threshold;
    if constexpr (is_floating_dtype_v<T>) {  // f16 and bf16 through their exact f32 values
      double max_abs = 0, min_abs = INFINITY;
      visit_kept([&](T x) {
        const double v = double(compute_type_t<T>(x));
        if (std::isfinite(v) && v != 0) {
          max_abs = std::max(max_abs, std::abs(v));
          min_abs = std::min(min_abs, std::abs(v));
        }
      });
      float_.precision = opt_.precision;
      float_.scientific = max_abs > 0 && (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1000);
      visit_kept([&](T x) { float_.observe(compute_type_t<T>(x)); });
    }
    visit_kept([&](T x) { width_ = std::max(width_, element(x).size()); });
  }

  void print(std::ostream& os) const {
    if constexpr (rank == 0) {
      os << element(v_.data()[0]);
    } else {
      extents_t<rank> idx{};
      print_axis(os, idx, 0);
    }
  }

 private:
  std::string element(T x) const {
    if constexpr (is_floating_dtype_v<T>) return float_.format(compute_type_t<T>(x));
    else return format_element(x);
  }

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
        std::string s = element(at(idx));
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
  float_layout float_;
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
