// gather / embedding (ops/gather.hpp) and gather_elements (ops/gather_elements.hpp, against
// numpy.take_along_axis / torch.gather) against numpy.take's rules written out here, at every axis of a
// rank-3 operand with odd extents (negative axes and negative indices included, scalar and rank-2
// indices), typed and through graph handles run by the interpreter (bit for bit); the gradient, with
// repeated indices, against central finite differences in float64; out-of-range indices are errors
// that name the index, in both paths, never reads out of bounds.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <symflow/debug/check_gradient.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;

constexpr std::size_t d0 = 4, d1 = 5, d2 = 3;
using cube = shape<d0, d1, d2>;

tensor<float, cube> data_values() {
  tensor<float, cube> t({d0, d1, d2}, uninitialized);
  std::mt19937 rng(5);
  std::normal_distribution<float> n;
  for (auto& v : t) v = n(rng);
  t(1, 2, 0) = std::numeric_limits<float>::quiet_NaN();
  t(2, 0, 1) = -0.0f;
  return t;
}

// numpy.take(data, indices, axis) with 1-D indices at result coordinate c: c[axis] is a position
// in the indices.
float reference(const tensor<float, cube>& x, std::size_t axis, const std::vector<std::int64_t>& idx, std::size_t c[3]) {
  const std::size_t ext[3] = {d0, d1, d2};
  const std::int64_t v = idx[c[axis]];
  std::size_t at[3] = {c[0], c[1], c[2]};
  at[axis] = std::size_t(v < 0 ? v + std::int64_t(ext[axis]) : v);
  return x(at[0], at[1], at[2]);
}

template <class Got>
void expect_take(const Got& got, const tensor<float, cube>& x, std::size_t axis, const std::vector<std::int64_t>& idx) {
  const std::size_t ext[3] = {d0, d1, d2};
  std::vector<std::size_t> out_ext;
  for (std::size_t a = 0; a < 3; ++a)
    if (a == axis) out_ext.push_back(idx.size());
    else out_ext.push_back(ext[a]);
  ASSERT_EQ(got.size(), out_ext[0] * out_ext[1] * out_ext[2]);
  std::size_t flat = 0;
  for (std::size_t i = 0; i < out_ext[0]; ++i)
    for (std::size_t j = 0; j < out_ext[1]; ++j)
      for (std::size_t k = 0; k < out_ext[2]; ++k, ++flat) {
        std::size_t c[3] = {i, j, k};
        const float want = reference(x, axis, idx, c);
        const float g = got.data()[flat];
        EXPECT_EQ(std::memcmp(&g, &want, sizeof(float)), 0) << "axis " << axis << " at " << i << "," << j << "," << k;
      }
}

std::vector<float> run_handles(const tensor<float, cube>& xv, const tensor<std::int64_t, shape<dyn>>& iv, std::int64_t axis) {
  graph_builder b;
  auto h = b.input("x", dtype::f32, {std::int64_t(d0), std::int64_t(d1), std::int64_t(d2)});
  auto i = b.input("i", dtype::i64, {-1});
  const graph g = b.build({gather(h, i, axis)});
  runtime_feeds feeds;
  runtime_tensor tx(dtype::f32, runtime_extents{d0, d1, d2}), ti(dtype::i64, runtime_extents{iv.size()});
  std::memcpy(tx.bytes(), xv.data(), tx.byte_size());
  std::memcpy(ti.bytes(), iv.data(), ti.byte_size());
  feeds.insert_or_assign("x", std::move(tx));
  feeds.insert_or_assign("i", std::move(ti));
  const auto out = run_graph(g, feeds);
  std::vector<float> v(out.at(0).byte_size() / sizeof(float));
  std::memcpy(v.data(), out.at(0).bytes(), out.at(0).byte_size());
  return v;
}

TEST(Gather, TakesSlicesAtEveryAxisWithNegativeIndicesTypedAndInGraphs) {
  auto x = placeholder<"x", float, cube>();
  auto i = placeholder<"i", std::int64_t, shape<dyn>>();
  const auto xv = data_values();
  tensor<std::int64_t, shape<dyn>> iv({7}, uninitialized);
  const std::int64_t picks[] = {0, -1, 2, 2, -3, 1, 0};  // repeats and negatives; all valid for extents >= 3
  std::copy(std::begin(picks), std::end(picks), iv.begin());
  const std::vector<std::int64_t> idx(std::begin(picks), std::end(picks));
  const auto [g0, g1, g2, gm1] = eval(gather<0>(x, i), gather<1>(x, i), gather<2>(x, i), gather<-1>(x, i), x = xv, i = iv);
  expect_take(g0, xv, 0, idx);
  expect_take(g1, xv, 1, idx);
  expect_take(g2, xv, 2, idx);
  expect_take(gm1, xv, 2, idx);
  auto same_as_graph = [&](const auto& typed, std::int64_t axis) {
    const auto graph = run_handles(xv, iv, axis);
    ASSERT_EQ(graph.size(), typed.size());
    EXPECT_EQ(std::memcmp(graph.data(), typed.data(), graph.size() * sizeof(float)), 0) << axis;
  };
  same_as_graph(g0, 0);
  same_as_graph(g1, 1);
  same_as_graph(g2, -1);
}

TEST(Gather, EmbeddingOfABatchOfSequencesAndScalarIndices) {
  auto table = placeholder<"table", float, shape<6, 4>>();
  auto ids = placeholder<"ids", std::int32_t, shape<dyn, 3>>();
  auto one = placeholder<"one", std::int32_t, shape<>>();
  tensor<float, shape<6, 4>> tv({6, 4}, uninitialized);
  for (std::size_t k = 0; k < tv.size(); ++k) tv.data()[k] = float(k);
  tensor<std::int32_t, shape<dyn, 3>> iv({2, 3}, uninitialized);
  const std::int32_t v[] = {5, 0, 5, 3, -1, 2};
  std::copy(std::begin(v), std::end(v), iv.begin());
  tensor<std::int32_t, shape<>> ov({}, uninitialized);
  ov() = 4;
  const auto [e, row] = eval(embedding(table, ids), gather<0>(table, one), table = tv, ids = iv, one = ov);
  ASSERT_EQ(e.extent(0), 2u);
  ASSERT_EQ(e.extent(1), 3u);
  ASSERT_EQ(e.extent(2), 4u);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t w = 0; w < 4; ++w) {
        const std::int32_t id = v[b * 3 + t] < 0 ? v[b * 3 + t] + 6 : v[b * 3 + t];
        EXPECT_EQ(e(b, t, w), tv(std::size_t(id), w));
      }
  ASSERT_EQ(row.size(), 4u);
  for (std::size_t w = 0; w < 4; ++w) EXPECT_EQ(row[w], tv(4, w));
}

TEST(Gather, GradientAddsRepeatedSlicesAndMatchesFiniteDifferences) {
  auto x = placeholder<"x", double, shape<d0, d1, d2>>();
  auto i = placeholder<"i", std::int64_t, shape<dyn>>();
  auto w = placeholder<"w", double, shape<d0, dyn, d2>>();
  tensor<double, cube> xv({d0, d1, d2}, uninitialized);
  tensor<std::int64_t, shape<dyn>> iv({6}, uninitialized);
  tensor<double, shape<d0, dyn, d2>> wv({d0, 6, d2}, uninitialized);
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& v : xv) v = u(rng);
  for (auto& v : wv) v = u(rng);
  const std::int64_t picks[] = {1, 1, -1, 0, 1, 3};
  std::copy(std::begin(picks), std::end(picks), iv.begin());
  const auto loss = sum(square(gather<1>(x, i)) * w);
  const auto c = check_gradient(loss, x, x = xv, i = iv, w = wv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  // Row 1 is picked three times: its adjoint is the sum of three terms; row 2 is never picked.
  const auto dx = eval(grad(loss, x), x = xv, i = iv, w = wv);
  for (std::size_t a = 0; a < d0; ++a)
    for (std::size_t k = 0; k < d2; ++k) {
      EXPECT_EQ(dx(a, 2, k), 0.0);
      const double want = 2 * xv(a, 1, k) * (wv(a, 0, k) + wv(a, 1, k) + wv(a, 4, k));
      EXPECT_NEAR(dx(a, 1, k), want, 1e-12);
    }
}

TEST(Gather, AnIndexOutsideTheAxisIsAnErrorNamingIt) {
  auto x = placeholder<"x", float, cube>();
  auto i = placeholder<"i", std::int64_t, shape<dyn>>();
  const auto xv = data_values();
  for (std::int64_t bad : {std::int64_t(d1), -std::int64_t(d1) - 1, std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max()}) {
    tensor<std::int64_t, shape<dyn>> iv({3}, uninitialized);
    iv[0] = 0;
    iv[1] = bad;
    iv[2] = 1;
    try {
      (void)eval(gather<1>(x, i), x = xv, i = iv);
      ADD_FAILURE() << "index " << bad << " accepted";
    } catch (const value_error& e) {
      EXPECT_NE(std::string(e.what()).find("index " + std::to_string(bad)), std::string::npos) << e.what();
    }
    EXPECT_THROW(run_handles(xv, iv, 1), value_error) << bad;
  }
}

TEST(GatherElements, PicksPerElementIndicesAndAddsThemBack) {
  auto x = placeholder<"x", double, shape<d0, d1, d2>>();
  auto i = placeholder<"i", std::int32_t, shape<d0, dyn, d2>>();
  tensor<double, cube> xv({d0, d1, d2}, uninitialized);
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& v : xv) v = u(rng);
  // Indices of shape [d0, 2, d2] along axis 1 (shorter than data there is allowed), with repeats
  // and negatives.
  tensor<std::int32_t, shape<d0, dyn, d2>> iv({d0, 2, d2}, uninitialized);
  std::uniform_int_distribution<int> pick(-int(d1), int(d1) - 1);
  for (auto& v : iv) v = pick(rng);
  iv(0, 0, 0) = 3;
  iv(0, 1, 0) = -2;  // the same element twice: its adjoint is the sum
  const auto y = eval(gather_elements<1>(x, i), x = xv, i = iv);
  for (std::size_t a = 0; a < d0; ++a)
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t c = 0; c < d2; ++c) {
        const int k = iv(a, b, c) < 0 ? iv(a, b, c) + int(d1) : iv(a, b, c);
        EXPECT_EQ(y(a, b, c), xv(a, std::size_t(k), c));
      }
  auto w = placeholder<"w", double, shape<d0, dyn, d2>>();
  tensor<double, shape<d0, dyn, d2>> wv({d0, 2, d2}, uninitialized);
  for (auto& v : wv) v = u(rng);
  const auto loss = sum(exp(gather_elements<-2>(x, i)) * w);
  const auto c = check_gradient(loss, x, x = xv, i = iv, w = wv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  const auto dx = eval(grad(loss, x), x = xv, i = iv, w = wv);
  EXPECT_NEAR(dx(0, 3, 0), std::exp(xv(0, 3, 0)) * (wv(0, 0, 0) + wv(0, 1, 0)), 1e-12);
}

TEST(GatherElements, IndicesLongerThanDataOrOutOfRangeAreRefused) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto i = placeholder<"i", std::int64_t, shape<dyn, dyn>>();
  tensor<float, shape<dyn, 3>> xv({2, 3}, uninitialized);
  for (auto& v : xv) v = 1;
  tensor<std::int64_t, shape<dyn, dyn>> too_long({3, 2}, uninitialized), bad({2, 2}, uninitialized);
  for (auto& v : too_long) v = 0;
  for (auto& v : bad) v = 0;
  bad(1, 1) = 3;
  EXPECT_THROW((void)eval(gather_elements<1>(x, i), x = xv, i = too_long), shape_error);
  EXPECT_THROW((void)eval(gather_elements<1>(x, i), x = xv, i = bad), value_error);
}

}  // namespace
