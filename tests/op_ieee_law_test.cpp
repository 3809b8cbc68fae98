// The IEEE law of elementwise ops: a value gets the same bits whether it falls in a SIMD packet or in
// a scalar tail, and special values (NaN, ±Inf, ±0, denormals, huge and extreme integers) have the
// meaning the op's file documents, for every op the graph registry lists (no hand-made op list: an
// op added to `registered_ops` is checked here with every dtype its rule accepts).
//
// Each op runs through the interpreter's own tile kernel (the op's packet function over whole
// packets, its scalar function over the tail) on vectors of lengths around the packet size
// (symflow::simd::packet_size, so AVX2 and AVX-512 builds both test their own width), with special
// values at every position, and each element is compared with the op's scalar function:
//  - bitwise, except that any NaN equals any NaN (payloads may differ; the sign of zero and of
//    infinities may not);
//  - against the op's own formula evaluated in long double (std:: math, no packets): the same
//    NaN-ness, the same infinities, the same sign of an exact zero, and within a few ulps otherwise
//    (ulps of the smallest denormal in the denormal range).
// The first comparison cannot see a result that depends on the packet width: a transcendental op's
// scalar function is lane 0 of its packet function on this build's width. The second one does, where
// a width gets the formula wrong: softplus and sigmoid called Eigen's pexp past exp's normal range
// (specials below -87 in f32, -708 in f64), which clamps there with SSE/AVX2 and flushes with AVX-512.
// Integer dtypes take INT_MIN, INT_MAX, -1 and 0 operands: run under UBSan this also checks that no
// op has undefined behaviour (signed overflow, division by zero, out-of-range conversions).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <symflow/ir/op_registry.hpp>
#include <symflow/runtime/op_table.hpp>
#include <symflow/symflow.hpp>

namespace sf = symflow;

namespace {

using all_dtypes = std::tuple<float, double, std::int32_t, std::int64_t, bool>;

// Plain arrays: std::vector<bool> is packed and has no data().
template <class T>
struct buffer {
  std::unique_ptr<T[]> p;
  std::size_t n = 0;
  explicit buffer(std::size_t size) : p(new T[size]()), n(size) {}
  T& operator[](std::size_t i) { return p[i]; }
  const T& operator[](std::size_t i) const { return p[i]; }
  const T* data() const { return p.get(); }
  T* data() { return p.get(); }
};

template <class T>
std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (std::is_integral_v<T>) {
    return {T(0), T(1), T(-1), T(2), T(-2), T(7), T(-7), L::min(), T(L::min() + 1), L::max()};
  } else {
    const T nan = L::quiet_NaN();
    return {nan,
            -nan,
            L::infinity(),
            -L::infinity(),
            T(0),
            -T(0),
            L::denorm_min(),
            -L::denorm_min(),
            L::min() / 2,
            -L::min() / 2,
            L::min(),
            -L::min(),
            T(1),
            T(-1),
            T(0.5),
            T(-0.5),
            T(1) + L::epsilon(),
            T(1) - L::epsilon() / 2,
            T(3),
            T(-2.5),
            T(88.8),
            T(-88.8),
            // Where exp stops being a normal number: Eigen's packet exp differs with the packet
            // width there (f32 below -87.3: clamped with SSE/AVX2, flushed to 0 with AVX-512; f64
            // below -708), so an op that reaches it without exp's fallback shows it here.
            T(-87.5),
            T(-95),
            T(-103.5),
            T(-104),
            T(-708.5),
            T(-730),
            T(-745),
            T(710),
            T(-746),
            T(1e30),
            T(-1e30),
            L::max(),
            L::lowest()};
  }
}

// Ordinary values around the special one: moderate magnitudes, both signs.
template <class T>
T ordinary_value(std::size_t i, std::size_t operand) {
  static constexpr double v[] = {0.75, -1.25, 2.5, -0.375, 1.5, 3.0, -2.0};
  const double x = v[(i + 3 * operand) % 7];
  if constexpr (std::is_same_v<T, bool>) return (i + operand) % 2 != 0;
  else if constexpr (std::is_integral_v<T>) return T(x * 4);
  else return T(x);
}

template <class T>
std::string show(T v) {
  std::ostringstream s;
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", double(v));
    s << buf;
  } else {
    s << +v;
  }
  return s.str();
}

template <class T>
bool same_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    return std::bit_cast<U>(a) == std::bit_cast<U>(b);
  } else {
    return a == b;
  }
}

// Floating operands promoted to long double (the reference), others as they are.
template <class T>
auto promoted(T v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<long double>(v);
  else return v;
}

// Result tolerance against the long double reference, in units of the result's epsilon: Eigen's
// packet math is specified to a few ulps; 16 leaves headroom far below any real defect.
constexpr long double ulps = 16;

template <class R>
std::string reference_mismatch(R got, long double want) {
  if constexpr (!std::is_floating_point_v<R>) {
    return {};
  } else {
    using L = std::numeric_limits<R>;
    if (std::isnan(want)) return std::isnan(got) ? std::string() : "want NaN";
    if (std::isnan(got)) return "got NaN, want " + show(double(want));
    const R rounded = static_cast<R>(want);  // ±Inf where the exact value overflows R
    if (std::isinf(rounded) || std::isinf(got))
      return got == rounded ? std::string() : "want " + show(rounded);
    if (rounded == 0 && got == 0)
      return std::signbit(rounded) == std::signbit(got) ? std::string() : "wrong sign of zero";
    // In the denormal range an ulp is the smallest denormal: the same 16 of them. (An absolute slack
    // of the smallest normal here let softplus(-88.8f) be 0 with AVX-512 and softplus(-Inf) be
    // 2.9e-39 with AVX2, where the result must be exp(x), a denormal, or 0 on every width.)
    const long double err = std::fabs(static_cast<long double>(got) - want);
    if (err <= ulps * (L::epsilon() * std::fabs(want) + static_cast<long double>(L::denorm_min()))) return {};
    return "want " + show(rounded) + " within " + std::to_string(int(ulps)) + " ulp";
  }
}

// Failures, each kind (op, operands and message, whatever the position) listed once.
struct report {
  std::size_t failures = 0;
  std::set<std::string> kinds;
  std::string text;
  void add(const std::string& where, const std::string& what, const std::string& message) {
    ++failures;
    if (kinds.size() < 60 && kinds.insert(what + message).second) text += what + where + ": " + message + "\n";
  }
};

// Attributes for ops with a runtime instance (cast's `to`): every dtype in turn.
struct every_dtype_attributes {
  sf::dtype d;
  sf::dtype dtype_of(std::string_view) const { return d; }
};

template <class Op, class... Ts>
struct law_check {
  using R = typename Op::template result_type<Ts...>;
  static constexpr std::size_t N = sizeof...(Ts);
  static constexpr std::size_t width = sf::simd::packet_size<R>;

  std::string name;
  report& out;

  std::string describe(const std::tuple<buffer<Ts>...>& in, std::size_t i) const {
    std::string s = name + "(";
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((s += (I ? ", " : "") + std::string(sf::dtype_name(sf::dtype_v<Ts>)) + " " + show(std::get<I>(in)[i])), ...);
    }(std::index_sequence_for<Ts...>{});
    return s + ")";
  }
  static std::string position(std::size_t n, std::size_t i) {
    return " at " + std::to_string(i) + " of " + std::to_string(n) + " (packet width " + std::to_string(width) + ")";
  }

  void run(const std::tuple<buffer<Ts>...>& in, std::size_t n) const {
    buffer<R> got(n);
    const void* ptrs[N];
    [&]<std::size_t... I>(std::index_sequence<I...>) { ((ptrs[I] = std::get<I>(in).data()), ...); }(std::index_sequence_for<Ts...>{});
    sf::runtime_detail::tile_kernel<Op, R, Ts...>(ptrs, got.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const R scalar = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return static_cast<R>(Op::apply(std::get<I>(in)[i]...));
      }(std::index_sequence_for<Ts...>{});
      if (!same_value(got[i], scalar))
        out.add(position(n, i), describe(in, i), "vector path " + show(got[i]) + ", scalar function " + show(scalar));
      const auto want = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return Op::apply(promoted(std::get<I>(in)[i])...);
      }(std::index_sequence_for<Ts...>{});
      if constexpr (std::is_floating_point_v<R>) {
        const std::string why = reference_mismatch<R>(got[i], static_cast<long double>(want));
        if (!why.empty()) out.add(position(n, i), describe(in, i), "got " + show(got[i]) + ", " + why);
      }
    }
  }

  void operator()() const {
    const std::tuple<std::vector<Ts>...> specials{special_values<Ts>()...};
    std::vector<std::size_t> lengths{1, width + 1, 2 * width + 1, 37};
    if (width > 1) lengths.push_back(width - 1);
    for (std::size_t n : lengths) {
      // Each operand's specials alone at every position among ordinary values.
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        auto fill = [&] { return std::tuple<buffer<Ts>...>{[&] {
                            buffer<Ts> v(n);
                            for (std::size_t i = 0; i < n; ++i) v[i] = ordinary_value<Ts>(i, I);
                            return v;
                          }()...}; };
        (
            [&] {
              for (const auto s : std::get<I>(specials))
                for (std::size_t pos = 0; pos < n; ++pos) {
                  auto in = fill();
                  std::get<I>(in)[pos] = s;
                  run(in, n);
                }
            }(),
            ...);
      }(std::index_sequence_for<Ts...>{});
      // Every combination of specials (all operands at once) at every position: vector k holds
      // combinations k, k+1, ... so that across the vectors each one meets each position once.
      std::size_t combos = 1;
      std::size_t sizes[N] = {};
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((sizes[I] = std::get<I>(specials).size(), combos *= sizes[I]), ...);
      }(std::index_sequence_for<Ts...>{});
      for (std::size_t k = 0; k < combos; ++k) {
        std::tuple<buffer<Ts>...> in{buffer<Ts>(n)...};
        for (std::size_t i = 0; i < n; ++i) {
          std::size_t c = (k + i) % combos;
          [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((std::get<I>(in)[i] = std::get<I>(specials)[c % sizes[I]], c /= sizes[I]), ...);
          }(std::index_sequence_for<Ts...>{});
        }
        run(in, n);
      }
    }
  }
};

template <class Op>
constexpr std::size_t arity_of = sf::runtime_detail::arity<Op>;

// Runs the law for every operand dtype tuple the op accepts; returns how many it accepted.
template <class Op, class... Ts>
std::size_t check_all_dtypes(const std::string& name, report& out) {
  if constexpr (sizeof...(Ts) == arity_of<Op>) {
    if constexpr (Op::template accepts<Ts...>) {
      law_check<Op, Ts...>{name, out}();
      return 1;
    } else {
      return 0;
    }
  } else {
    return std::apply([&](auto... t) { return (check_all_dtypes<Op, Ts..., decltype(t)>(name, out) + ...); }, all_dtypes{});
  }
}

template <class Op>
std::size_t check_op(report& out) {
  const std::string name(Op::name);
  if constexpr (requires { Op::with_runtime_instance(every_dtype_attributes{}, [](auto) { return std::size_t(0); }); }) {
    std::size_t accepted = 0;
    for (auto d : {sf::dtype::f32, sf::dtype::f64, sf::dtype::i32, sf::dtype::i64, sf::dtype::boolean})
      accepted += Op::with_runtime_instance(every_dtype_attributes{d}, [&](auto op) {
        using O = decltype(op);
        return check_all_dtypes<O>(name + "<" + std::string(sf::dtype_name(d)) + ">", out);
      });
    return accepted;
  } else {
    return check_all_dtypes<Op>(name, out);
  }
}

}  // namespace

TEST(OpIeeeLaw, EveryRegisteredElementwiseOpPacketEqualsScalarAtEveryPosition) {
  std::size_t ops = 0;
  std::apply(
      [&](auto... entry) {
        (
            [&] {
              using E = decltype(entry);
              if constexpr (E::kind == sf::node_kind::elementwise) {
                using Op = typename E::type;
                report out;
                const std::size_t accepted = check_op<Op>(out);
                EXPECT_GT(accepted, 0u) << Op::name << ": no dtype checked";
                EXPECT_EQ(out.failures, 0u) << Op::name << ": " << out.failures << " mismatches\n" << out.text;
                ++ops;
              }
            }(),
            ...);
      },
      sf::registered_ops{});
  EXPECT_GE(ops, 30u);
}
