#pragma once
// Shared by the CNN op tests (cnn_*_test.cpp): direct float64 loops and random inputs.
#include <cmath>
#include <random>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>

#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;

namespace {

using any4 = shape<dyn, dyn, dyn, dyn>;

// The model's first layer has its shape fixed at compile time, batch aside.
using fashion_conv = decltype(conv2d<1, padding::same>(placeholder<"x", float, shape<dyn, 28, 28, 1>>(),
                                                        variable<"W", float, shape<5, 5, 1, 32>>()));
static_assert(std::is_same_v<shape_of<fashion_conv>, shape<dyn, 28, 28, 32>>);
static_assert(std::is_same_v<shape_of<decltype(max_pool2d<2>(std::declval<fashion_conv>()))>, shape<dyn, 14, 14, 32>>);
static_assert(std::is_same_v<shape_of<decltype(conv2d<2, padding::valid>(placeholder<"x", float, shape<4, 9, 8, 3>>(),
                                                                        variable<"W", float, shape<3, 2, 3, 5>>()))>,
                             shape<4, 4, 4, 5>>);
static_assert(std::is_same_v<shape_of<decltype(conv2d<3, padding::same>(placeholder<"x", float, shape<4, 10, 7, 3>>(),
                                                                       variable<"W", float, shape<dyn, dyn, 3, 5>>()))>,
                             shape<4, 4, 3, 5>>);

// --- float64 references: the definitions, written out directly ---

struct conv_case {
  std::size_t n, h, w, c, kh, kw, o;  // c and o count all groups; the filter is [kh, kw, c / groups, o]
};

// span: the dilated window's extent, (k - 1) * dilation + 1.
inline std::size_t out_extent(std::size_t in, std::size_t span, std::size_t s, bool same) {
  return same ? (in + s - 1) / s : (in - span) / s + 1;
}
inline std::ptrdiff_t pad_before(std::size_t in, std::size_t span, std::size_t s, bool same) {
  if (!same) return 0;
  const std::ptrdiff_t total = std::ptrdiff_t((out_extent(in, span, s, same) - 1) * s + span) - std::ptrdiff_t(in);
  return std::max<std::ptrdiff_t>(total, 0) / 2;
}

// y[n, i, j, o] = sum over the taps (a, b) and the channels c of o's group of
// x[n, i*s + a*d - pad_top, j*s + b*d - pad_left, c] * w[a, b, c - group start, o].
template <class T>
std::vector<double> reference_conv(const conv_case& k, const T* x, const T* w, std::size_t s, bool same,
                                   std::size_t d = 1, std::size_t groups = 1) {
  const std::size_t span_h = (k.kh - 1) * d + 1, span_w = (k.kw - 1) * d + 1;
  const std::size_t oh = out_extent(k.h, span_h, s, same), ow = out_extent(k.w, span_w, s, same);
  const std::ptrdiff_t pt = pad_before(k.h, span_h, s, same), pl = pad_before(k.w, span_w, s, same);
  const std::size_t cg = k.c / groups, og = k.o / groups;
  std::vector<double> y(k.n * oh * ow * k.o, 0.0);
  for (std::size_t n = 0; n < k.n; ++n)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t o = 0; o < k.o; ++o) {
          const std::size_t c0 = (o / og) * cg;
          double acc = 0;
          for (std::size_t a = 0; a < k.kh; ++a)
            for (std::size_t b = 0; b < k.kw; ++b) {
              const std::ptrdiff_t r = std::ptrdiff_t(i * s + a * d) - pt, q = std::ptrdiff_t(j * s + b * d) - pl;
              if (r < 0 || q < 0 || r >= std::ptrdiff_t(k.h) || q >= std::ptrdiff_t(k.w)) continue;
              for (std::size_t c = 0; c < cg; ++c)
                acc += double(x[((n * k.h + std::size_t(r)) * k.w + std::size_t(q)) * k.c + c0 + c]) *
                       double(w[((a * k.kw + b) * cg + c) * k.o + o]);
            }
          y[((n * oh + i) * ow + j) * k.o + o] = acc;
        }
  return y;
}

template <class T>
std::vector<double> reference_pool(const T* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c, std::size_t k,
                                   std::size_t s, bool max) {
  const std::size_t oh = (h - k) / s + 1, ow = (w - k) / s + 1;
  std::vector<double> y;
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t ch = 0; ch < c; ++ch) {
          double acc = max ? -INFINITY : 0.0;
          for (std::size_t a = 0; a < k; ++a)
            for (std::size_t d = 0; d < k; ++d) {
              const double v = x[((b * h + i * s + a) * w + j * s + d) * c + ch];
              acc = max ? std::max(acc, v) : acc + v;
            }
          y.push_back(max ? acc : acc / double(k * k));
        }
  return y;
}

template <class T, class S>
void expect_near_all(const tensor<T, S>& got, const std::vector<double>& want, double tolerance, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(double(got.data()[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, tolerance) << what << ": element " << at << " is " << got.data()[at] << ", expected " << want[at];
}

template <std::size_t S, padding P, class T, std::size_t D = 1, std::size_t G = 1>
void check_conv_forward(const conv_case& k, unsigned seed, double tolerance) {
  const auto x = placeholder<"x", T, any4>();
  const auto w = placeholder<"w", T, any4>();
  const auto xv = random_tensor<T, any4>({k.n, k.h, k.w, k.c}, -1, 1, seed);
  const auto wv = random_tensor<T, any4>({k.kh, k.kw, k.c / G, k.o}, -1, 1, seed + 1);
  const auto y = eval(conv2d<S, P, D, G>(x, w), x = xv, w = wv);
  const bool same = P == padding::same;
  const extents_t<4> want_extents{k.n, out_extent(k.h, (k.kh - 1) * D + 1, S, same),
                                  out_extent(k.w, (k.kw - 1) * D + 1, S, same), k.o};
  EXPECT_EQ(y.extents(), want_extents);
  expect_near_all(y, reference_conv(k, xv.data(), wv.data(), S, same, D, G), tolerance, "conv2d");
}

}  // namespace
