// Storage dtypes (core/dtype.hpp: f16, bf16, i8, u8, i16, u16, u32, u64) against references written
// here: f16 and bf16 decoded from their bit fields by the IEEE formulas; rounding to them checked
// against the nearest of all 65536 patterns (ties to even, overflow at the midpoint past the largest
// finite value) for random doubles, floats and integers incl. NaN, ±Inf, -0, subnormals and exact
// ties; integer narrowing modulo 2^n and float-to-integer saturation; graphs on storage dtypes run by
// the interpreter against float64 arithmetic on the widened values, rounded once; the result dtypes
// the dtype rule gives; gradients through f16 parameters; .npy files of every NumPy dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <symflow/io/binary.hpp>
#include <symflow/io/json.hpp>
#include <symflow/io/npy.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;

// --- References -------------------------------------------------------------------------------

// The value of a 16-bit float pattern with `mantissa_bits` fraction bits and `exponent_bits`
// exponent bits (f16: 10 and 5, bf16: 7 and 8), by the IEEE 754 formulas.
double decode16(std::uint16_t bits, int mantissa_bits, int exponent_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const bool negative = bits >> 15;
  const unsigned exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const unsigned fraction = bits & ((1u << mantissa_bits) - 1);
  double v;
  if (exponent == (1u << exponent_bits) - 1) v = fraction ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (exponent == 0) v = std::ldexp(double(fraction), 1 - bias - mantissa_bits);
  else v = std::ldexp(double(fraction | (1u << mantissa_bits)), int(exponent) - bias - mantissa_bits);
  return negative ? -v : v;
}

template <class H>
constexpr int mantissa_bits_of = std::is_same_v<H, Eigen::half> ? 10 : 7;
template <class H>
constexpr int exponent_bits_of = std::is_same_v<H, Eigen::half> ? 5 : 8;

template <class H>
std::uint16_t bits_of(H h) {
  return std::bit_cast<std::uint16_t>(h);
}
template <class H>
double value_of(H h) {
  return decode16(bits_of(h), mantissa_bits_of<H>, exponent_bits_of<H>);
}

// The pattern nearest to x (exact in long double, as every input here is), ties to the even
// pattern; beyond the largest finite value, the infinity where x is at or past the midpoint to the
// next power of two (IEEE overflow under round-to-nearest).
template <class H>
std::uint16_t nearest_pattern(long double x) {
  const int m = mantissa_bits_of<H>, e = exponent_bits_of<H>;
  if (std::isnan(x)) return 0;  // not compared: NaN is checked as NaN
  const bool negative = std::signbit(x);
  const long double a = std::fabs(x);
  const std::uint16_t sign = negative ? 0x8000 : 0;
  const std::uint16_t infinity = std::uint16_t(((1u << e) - 1) << m);
  // Finite non-negative patterns are ordered like their values: binary search.
  std::uint16_t lo = 0, hi = std::uint16_t(infinity - 1);  // largest finite
  const long double max = decode16(hi, m, e);
  if (a >= max) {
    const long double next = std::ldexp(1.0L, (1 << (e - 1)));  // 2^(emax+1)
    return a >= (max + next) / 2 ? std::uint16_t(sign | infinity) : std::uint16_t(sign | hi);
  }
  while (hi - lo > 1) {
    const std::uint16_t mid = std::uint16_t((lo + hi) / 2);
    if (decode16(mid, m, e) <= a) lo = mid;
    else hi = mid;
  }
  const long double below = decode16(lo, m, e), above = decode16(hi, m, e);
  std::uint16_t pick;
  if (a - below < above - a) pick = lo;
  else if (above - a < a - below) pick = hi;
  else pick = (lo & 1) ? hi : lo;
  return std::uint16_t(sign | pick);
}

template <class H, class From>
void expect_rounds_once(From x) {
  const H got = ops::cast_op<H>::apply(x);
  if (std::isnan(static_cast<long double>(x))) {
    EXPECT_TRUE(std::isnan(value_of(got))) << double(x);
    return;
  }
  EXPECT_EQ(bits_of(got), nearest_pattern<H>(static_cast<long double>(x)))
      << "x = " << static_cast<long double>(x) << " (" << (std::is_same_v<H, Eigen::half> ? "f16" : "bf16") << ")";
}

// Inputs that exercise every path: exact ties and near-ties at several magnitudes (the double
// 1 + 2^-11 + 2^-40 rounds to float as 1 + 2^-11, a tie for f16), the overflow boundary, subnormals,
// -0, ±Inf, NaN, and random doubles over the whole exponent range of both formats.
std::vector<double> rounding_inputs() {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, std::numeric_limits<double>::quiet_NaN(),
                           65504.0, 65519.99, 65520.0, -65520.0, 1e6, 3.4e38, 3.5e38, 1e300, 5.96e-8, 2.98e-8,
                           2.9802322387695312e-08, 1e-40, 1e-46};
  for (int exp : {-20, -14, -3, 0, 7, 15, 100}) {
    for (int mbits : {7, 10}) {
      const double ulp = std::ldexp(1.0, exp - mbits);
      for (double tiny : {0.0, std::ldexp(1.0, exp - 40), -std::ldexp(1.0, exp - 40), std::ldexp(1.0, exp - 26)}) {
        v.push_back(std::ldexp(1.0, exp) + ulp / 2 + tiny);
        v.push_back(std::ldexp(1.0, exp) + 3 * ulp / 2 + tiny);
        v.push_back(-(std::ldexp(1.0, exp) + ulp / 2 + tiny));
      }
    }
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-140, 130);
  for (int i = 0; i < 20000; ++i) v.push_back((rng() & 1 ? -1 : 1) * std::ldexp(mant(rng), ex(rng)));
  return v;
}

TEST(StorageDtypes, TableRowsComputeInTheirWideDtypes) {
  EXPECT_EQ(compute_dtype(dtype::f16), dtype::f32);
  EXPECT_EQ(compute_dtype(dtype::bf16), dtype::f32);
  for (dtype d : {dtype::i8, dtype::u8, dtype::i16, dtype::u16}) EXPECT_EQ(compute_dtype(d), dtype::i32);
  EXPECT_EQ(compute_dtype(dtype::u32), dtype::i64);
  EXPECT_EQ(compute_dtype(dtype::u64), dtype::i64);
  for (dtype d : {dtype::f32, dtype::f64, dtype::i32, dtype::i64, dtype::boolean}) {
    EXPECT_TRUE(is_compute_dtype(d));
    EXPECT_EQ(compute_dtype(d), d);
  }
  EXPECT_FALSE(is_compute_dtype(dtype::f16));
  static_assert(std::is_same_v<compute_type_t<Eigen::bfloat16>, float>);
  static_assert(std::is_same_v<compute_type_t<std::uint32_t>, std::int64_t>);
  static_assert(is_floating_dtype_v<Eigen::half> && !is_compute_dtype_v<Eigen::half>);
  EXPECT_THROW(visit_compute_dtype(dtype::f16, [](auto) {}), value_error);
}

TEST(StorageDtypes, WideningIsExactForEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = std::uint16_t(b);
    const auto h = std::bit_cast<Eigen::half>(bits);
    const auto bf = std::bit_cast<Eigen::bfloat16>(bits);
    const float fh = ops::cast_op<float>::apply(h), fb = ops::cast_op<float>::apply(bf);
    const double rh = decode16(bits, 10, 5), rb = decode16(bits, 7, 8);
    if (std::isnan(rh)) EXPECT_TRUE(std::isnan(fh));
    else ASSERT_EQ(double(fh), rh) << "f16 pattern " << b;
    if (std::isnan(rb)) EXPECT_TRUE(std::isnan(fb));
    else ASSERT_EQ(double(fb), rb) << "bf16 pattern " << b;
    if (!std::isnan(rh)) EXPECT_EQ(std::signbit(fh), bool(bits >> 15));
  }
}

TEST(StorageDtypes, NarrowingRoundsOnceToNearestEven) {
  for (double x : rounding_inputs()) {
    expect_rounds_once<Eigen::half>(x);
    expect_rounds_once<Eigen::bfloat16>(x);
    expect_rounds_once<Eigen::half>(float(x));
    expect_rounds_once<Eigen::bfloat16>(float(x));
  }
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    const auto x = std::int64_t(rng()) >> (rng() % 64);
    expect_rounds_once<Eigen::half>(x);
    expect_rounds_once<Eigen::bfloat16>(x);
    expect_rounds_once<Eigen::bfloat16>(std::int32_t(x));
  }
  // The double-rounding trap of converting through float: 1 + 2^-11 + 2^-40 must round up in f16.
  EXPECT_EQ(double(ops::cast_op<Eigen::half>::apply(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))),
            1.0 + std::ldexp(1.0, -10));
  EXPECT_TRUE(std::signbit(float(ops::cast_op<Eigen::half>::apply(-0.0))));
}

TEST(StorageDtypes, IntegerWidthsWrapAndSaturateLikeCast) {
  EXPECT_EQ(ops::cast_op<std::int8_t>::apply(std::int32_t(200)), std::int8_t(-56));   // modulo 2^8
  EXPECT_EQ(ops::cast_op<std::uint8_t>::apply(std::int32_t(-1)), std::uint8_t(255));
  EXPECT_EQ(ops::cast_op<std::uint16_t>::apply(std::int64_t(65536 + 7)), std::uint16_t(7));
  EXPECT_EQ(ops::cast_op<std::uint8_t>::apply(-1.5f), std::uint8_t(0));   // saturating from floats
  EXPECT_EQ(ops::cast_op<std::uint8_t>::apply(300.0f), std::uint8_t(255));
  EXPECT_EQ(ops::cast_op<std::uint8_t>::apply(255.9f), std::uint8_t(255));
  EXPECT_EQ(ops::cast_op<std::uint8_t>::apply(NAN), std::uint8_t(0));
  EXPECT_EQ(ops::cast_op<std::int8_t>::apply(-128.9), std::int8_t(-128));
  EXPECT_EQ(ops::cast_op<std::int8_t>::apply(-129.0), std::int8_t(-128));
  EXPECT_EQ(ops::cast_op<std::uint64_t>::apply(1e19), std::uint64_t(10000000000000000000ull));
  EXPECT_EQ(ops::cast_op<std::uint64_t>::apply(2e19), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(ops::cast_op<std::uint32_t>::apply(-INFINITY), std::uint32_t(0));
  EXPECT_EQ(ops::cast_op<std::int16_t>::apply(Eigen::half(-2.75f)), std::int16_t(-2));  // through f32
  EXPECT_EQ(ops::cast_op<std::int32_t>::apply(std::numeric_limits<Eigen::half>::infinity()),
            std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(ops::cast_op<bool>::apply(Eigen::half(-0.0f)), false);
  EXPECT_EQ(ops::cast_op<float>::apply(std::uint64_t(1) << 63), 9.223372036854775808e18f);
  // convert<To> on tensors applies the same rules.
  const tensor<float, shape<4>> f{1.5f, -0.0f, 65520.0f, NAN};
  const auto h = convert<Eigen::half>(f);
  EXPECT_EQ(float(h(0)), 1.5f);
  EXPECT_TRUE(std::signbit(float(h(1))));
  EXPECT_TRUE(std::isinf(float(h(2))));
  EXPECT_TRUE(std::isnan(float(h(3))));
  EXPECT_EQ(convert<float>(h)(0), 1.5f);
}

// --- Graphs on storage dtypes ------------------------------------------------------------------

template <class T>
runtime_tensor storage_tensor(const std::vector<double>& values, runtime_extents extents) {
  runtime_tensor t(dtype_v<T>, std::move(extents));
  for (std::size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = ops::cast_op<T>::apply(values[i]);
  return t;
}

std::vector<double> random_values(std::size_t n, std::uint64_t seed, double scale = 2.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(StorageDtypes, ElementwiseChainRoundsEachNodeToItsDtype) {
  for (dtype d : {dtype::f16, dtype::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    constexpr std::size_t rows = 3, cols = 37;  // odd extents: tails of every SIMD width
    graph_builder b;
    auto a = b.input("a", d, {rows, cols});
    auto c = b.input("c", d, {rows, cols});
    auto y = b.apply("tanh", {b.apply("add", {b.apply("mul", {a, c}), c})});
    EXPECT_EQ(y.value_type(), d);  // f16 in, f16 out
    const graph g = b.build({y});
    auto av = random_values(rows * cols, 1), cv = random_values(rows * cols, 2);
    av[4] = NAN;
    av[5] = INFINITY;
    cv[6] = -0.0;
    visit_dtype(d, [&](auto zero) {
      using H = decltype(zero);
      runtime_feeds feeds;
      feeds.insert_or_assign("a", storage_tensor<H>(av, {rows, cols}));
      feeds.insert_or_assign("c", storage_tensor<H>(cv, {rows, cols}));
      const auto out = run_graph(g, feeds);
      ASSERT_EQ(out[0].type(), d);
      // Each node's result is rounded to the storage dtype, as the graph types say (and PyTorch's
      // half ops do): float64 per op on the rounded values, then rounded; f32 compute may differ from
      // that by one unit in the last place of the storage dtype (tanh's own rounding).
      auto round = [](double v) { return double(float(ops::cast_op<H>::apply(v))); };
      for (std::size_t i = 0; i < rows * cols; ++i) {
        const double x = round(av[i]), z = round(cv[i]);
        const double want = std::tanh(round(round(x * z) + z));
        const double got = double(float(out[0].data<H>()[i]));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << i;
          continue;
        }
        const double ulp = std::ldexp(1.0, std::max(std::ilogb(want), -14) - mantissa_bits_of<H>);
        EXPECT_LE(std::fabs(got - want), ulp) << "element " << i << ": " << got << " vs " << want;
      }
    });
  }
}

TEST(StorageDtypes, ReductionsMatmulAndIndicesKeepTheStorageDtype) {
  graph_builder b;
  auto x = b.input("x", dtype::f16, {5, 7});
  auto w = b.input("w", dtype::f16, {7, 3});
  auto s = b.apply("sum", {x}, {{"axes", std::vector<std::int64_t>{1}}, {"keepdims", false}});
  auto m = b.apply("matmul", {x, w});
  auto less = b.apply("less", {x, x});
  auto idx = b.input("idx", dtype::i32, {4});
  auto u = b.input("u", dtype::u8, {6});
  auto gathered = b.apply("gather", {u, idx}, {{"axis", std::int64_t(0)}});
  auto wrapped = b.apply("add", {u, u});
  EXPECT_EQ(s.value_type(), dtype::f16);
  EXPECT_EQ(m.value_type(), dtype::f16);
  EXPECT_EQ(less.value_type(), dtype::boolean);
  EXPECT_EQ(gathered.value_type(), dtype::u8);
  EXPECT_EQ(wrapped.value_type(), dtype::u8);
  const graph g = b.build({s, m, gathered, wrapped});
  const auto xv = random_values(35, 3), wv = random_values(21, 4);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", storage_tensor<Eigen::half>(xv, {5, 7}));
  feeds.insert_or_assign("w", storage_tensor<Eigen::half>(wv, {7, 3}));
  runtime_tensor it(dtype::i32, {4});
  const std::int32_t picks[4] = {5, 0, 2, 5};
  std::memcpy(it.bytes(), picks, sizeof picks);
  feeds.insert_or_assign("idx", std::move(it));
  feeds.insert_or_assign("u", storage_tensor<std::uint8_t>({0, 100, 200, 255, 128, 7}, {6}));
  const auto out = run_graph(g, feeds);
  auto stored = [](double v) { return double(float(Eigen::half(float(v)))); };
  for (std::size_t r = 0; r < 5; ++r) {
    double want = 0;
    for (std::size_t k = 0; k < 7; ++k) want += stored(xv[r * 7 + k]);
    EXPECT_NEAR(float(out[0].data<Eigen::half>()[r]), want, std::fabs(want) * 1e-3 + 1e-3) << r;
    for (std::size_t c = 0; c < 3; ++c) {
      double dot = 0;
      for (std::size_t k = 0; k < 7; ++k) dot += stored(xv[r * 7 + k]) * stored(wv[k * 3 + c]);
      EXPECT_NEAR(float(out[1].data<Eigen::half>()[r * 3 + c]), dot, std::fabs(dot) * 1e-3 + 1e-3) << r << "," << c;
    }
  }
  const std::uint8_t gathered_want[4] = {7, 0, 200, 7}, wrapped_want[6] = {0, 200, 144, 254, 0, 14};
  EXPECT_EQ(std::memcmp(out[2].bytes(), gathered_want, 4), 0);
  EXPECT_EQ(std::memcmp(out[3].bytes(), wrapped_want, 6), 0);
}

TEST(StorageDtypes, MixedAndRefusedOperands) {
  graph_builder b;
  auto h = b.input("h", dtype::f16, {3});
  auto d = b.input("d", dtype::f64, {3});
  EXPECT_THROW(b.apply("add", {h, d}), value_error);  // f32 + f64 after widening: refused as ever
  auto i = b.input("i", dtype::i8, {3});
  auto c = b.apply("cast", {i}, {{"to", std::string("f16")}});
  EXPECT_EQ(c.value_type(), dtype::f16);
}

TEST(StorageDtypes, LiteralsOfStorageDtypes) {
  graph_builder b;
  auto x = b.input("x", dtype::f16, {2});
  auto u = b.input("u", dtype::u8, {2});
  auto y = b.apply("mul", {x, b.literal(0.375, dtype::f16)});
  auto v = b.apply("add", {u, b.literal(250, dtype::u8)});
  EXPECT_EQ(y.value_type(), dtype::f16);
  EXPECT_EQ(v.value_type(), dtype::u8);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", storage_tensor<Eigen::half>({3.0, -65504.0}, {2}));
  feeds.insert_or_assign("u", storage_tensor<std::uint8_t>({5, 10}, {2}));
  const auto out = run_graph(b.build({y, v}), feeds);
  EXPECT_EQ(float(out[0].data<Eigen::half>()[0]), 1.125f);
  EXPECT_EQ(float(out[0].data<Eigen::half>()[1]), -24560.0f);  // -24564 rounded to f16 (ulp 16)
  EXPECT_EQ(out[1].data<std::uint8_t>()[0], 255);
  EXPECT_EQ(out[1].data<std::uint8_t>()[1], 4);  // 260 modulo 256
}

TEST(StorageDtypes, GradientFlowsToF16Parameters) {
  // loss = sum(cast(w * x, f32)); d loss / d w = x (stored as f16).
  graph_builder b;
  auto w = b.parameter("w", dtype::f16, {9});
  auto x = b.input("x", dtype::f16, {9});
  auto loss = b.apply("sum", {b.apply("cast", {b.apply("mul", {w, x})}, {{"to", std::string("f32")}})},
                      {{"axes", std::vector<std::int64_t>{0}}, {"keepdims", false}});
  const graph g = b.build({loss});
  const graph dg = differentiate(g, {"w"});
  ASSERT_EQ(dg.outputs.size(), 2u);
  EXPECT_EQ(dg.type_of(dg.outputs[1]).type, dtype::f16);
  const auto wv = random_values(9, 5), xv = random_values(9, 6);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", storage_tensor<Eigen::half>(xv, {9}));
  params store;
  tensor<Eigen::half, shape<9>> wt;
  for (std::size_t i = 0; i < 9; ++i) wt(i) = ops::cast_op<Eigen::half>::apply(wv[i]);
  store.set("w", wt);
  const auto out = interpreter(dg).run(feeds, &store);
  for (std::size_t i = 0; i < 9; ++i)
    EXPECT_EQ(bits_of(out[1].data<Eigen::half>()[i]), bits_of(ops::cast_op<Eigen::half>::apply(xv[i]))) << i;
}

TEST(StorageDtypes, NpyFilesHoldEveryNumPyDtype) {
  for (dtype d : {dtype::f16, dtype::i8, dtype::u8, dtype::i16, dtype::u16, dtype::u32, dtype::u64}) {
    graph_tensor t;
    t.type = d;
    t.extents = {3};
    t.bytes.resize(3 * dtype_size(d));
    for (std::size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<unsigned char>(i * 37 + 1);
    const auto file = write_npy(t);
    const graph_tensor back = read_npy(file);
    EXPECT_EQ(back.type, d);
    EXPECT_EQ(back.bytes, t.bytes);
  }
  graph_tensor bf;
  bf.type = dtype::bf16;
  bf.extents = {1};
  bf.bytes.resize(2);
  EXPECT_THROW(write_npy(bf), npy_error);  // NumPy has no bfloat16
}

// A graph with parameters and constants of every storage dtype, patterns chosen to catch a lossy
// format (NaN, ±Inf, -0, subnormals, u64 above 2^63, negative small integers): JSON and .sfg give
// the same graph back, and it runs the same.
TEST(StorageDtypes, GraphFilesKeepEveryStorageDtypeBitForBit) {
  graph_builder b;
  std::vector<graph_handle> outs;
  std::mt19937_64 rng(9);
  for (std::size_t r = compute_dtype_count; r < dtype_count; ++r) {
    const dtype d = dtype_infos[r].type;
    graph_tensor t;
    t.type = d;
    t.extents = {5};
    t.bytes.resize(5 * dtype_size(d));
    for (auto& byte : t.bytes) byte = static_cast<unsigned char>(rng());
    if (is_floating_dtype(d)) {  // NaN, +Inf, -0 in f16 and bf16 patterns, then a subnormal
      const std::uint16_t special[4] = {std::uint16_t(d == dtype::f16 ? 0x7e00 : 0x7fc0),
                                        std::uint16_t(d == dtype::f16 ? 0x7c00 : 0x7f80), 0x8000, 0x0001};
      std::memcpy(t.bytes.data(), special, sizeof special);
    } else if (d == dtype::u64) {
      t.bytes[7] = 0xFF;  // element 0 above 2^63
    }
    auto c = b.constant(t);
    outs.push_back(b.apply("neg", {c}));
    outs.push_back(c);
  }
  const graph g = b.build(outs);
  const graph from_json = load_graph_json(save_graph_json(g));
  const graph from_binary = load_graph_binary(save_graph_binary(g));
  ASSERT_EQ(from_json.constants.size(), g.constants.size());
  for (std::size_t i = 0; i < g.constants.size(); ++i) {
    SCOPED_TRACE(std::string(dtype_name(g.constants[i].data.type)));
    const auto& want = g.constants[i].data;
    EXPECT_EQ(from_binary.constants[i].data, want);
    EXPECT_EQ(from_json.constants[i].data.type, want.type);
    // JSON holds numbers: every pattern but a NaN's payload comes back.
    for (std::size_t k = 0; k < want.bytes.size(); k += dtype_size(want.type)) {
      const auto* a = want.bytes.data() + k;
      const auto* z = from_json.constants[i].data.bytes.data() + k;
      visit_dtype(want.type, [&](auto zero) {
        using T = decltype(zero);
        T x, y;
        std::memcpy(&x, a, sizeof x);
        std::memcpy(&y, z, sizeof y);
        if constexpr (is_floating_dtype_v<T>)
          if (std::isnan(float(x))) {
            EXPECT_TRUE(std::isnan(float(y)));
            return;
          }
        EXPECT_EQ(std::memcmp(a, z, sizeof x), 0) << "element " << k / sizeof x;
      });
    }
  }
  const auto ran = run_graph(g, {}), ran_json = run_graph(from_json, {});
  for (std::size_t k = 0; k < ran.size(); ++k) {
    ASSERT_EQ(ran[k].type(), g.type_of(g.outputs[k]).type);
    ASSERT_EQ(ran[k].byte_size(), ran_json[k].byte_size());
  }
  // neg of an i8 -128 wraps to -128; of a u8 x to 256 - x: computed in i32 and narrowed.
  for (std::size_t k = 0; k < ran.size(); k += 2) {
    visit_dtype(ran[k].type(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_integral_v<T>) {
        for (std::size_t i = 0; i < 5; ++i) {
          const T x = ran[k + 1].data<T>()[i];
          EXPECT_EQ(ran[k].data<T>()[i], static_cast<T>(T(0) - x)) << dtype_name(ran[k].type());
        }
      } else {
        for (std::size_t i = 0; i < 5; ++i) {
          const float x = float(ran[k + 1].data<T>()[i]), y = float(ran[k].data<T>()[i]);
          if (std::isnan(x)) EXPECT_TRUE(std::isnan(y));
          else EXPECT_EQ(std::bit_cast<std::uint32_t>(y), std::bit_cast<std::uint32_t>(-x));
        }
      }
    });
  }
}

}  // namespace
