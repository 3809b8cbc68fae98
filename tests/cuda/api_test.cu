// The CUDA backend's API: device tensors, feeds from host and device, parameter stores, streams,
// error reporting before any work, eval_into reuse, strided device views.
#include <gtest/gtest.h>

#include <symflow/cuda.hpp>
#include <symflow/ops/all.hpp>
#include <symflow/symbolic/gradient.hpp>

#include "gpu_harness.cuh"

namespace symflow_cuda_test {
namespace {
using namespace symflow;

tensor<float, shape<dyn, dyn>> iota(std::size_t rows, std::size_t cols, float scale = 1.0f) {
  tensor<float, shape<dyn, dyn>> t(extents_t<2>{rows, cols}, uninitialized);
  for (std::size_t k = 0; k < t.size(); ++k) t[k] = scale * float(k % 97) - 3.0f;
  return t;
}

TEST(CudaRuntime, ReportsDeviceOrSkipsCleanly) {
  const std::string what = cuda::device_description();
  EXPECT_FALSE(what.empty());
  if (!cuda::device_available()) GTEST_SKIP() << "symflow::cuda: GPU test skipped, " << what;
  RecordProperty("device", what);
}

TEST_F(Gpu, DeviceTensorRoundTrip) {
  const auto h = iota(13, 7);
  auto d = cuda::to_device(h);
  EXPECT_EQ(d.extents(), h.extents());
  const auto back = d.to_host();
  ASSERT_EQ(back.size(), h.size());
  for (std::size_t k = 0; k < h.size(); ++k) EXPECT_EQ(back[k], h[k]);
  auto moved = std::move(d);
  EXPECT_EQ(d.data(), nullptr);
  const auto copy = moved.clone();
  EXPECT_NE(copy.data(), moved.data());
  EXPECT_EQ(copy.to_host()[12], h[12]);
}

TEST_F(Gpu, HostFeedsAndHostParams) {
  auto x = placeholder<"x", float, shape<dyn, dyn>>();
  auto w = variable<"w", float, shape<dyn>>();
  const auto xh = iota(5, 4);
  tensor<float, shape<dyn>> wh({1.f, 2.f, 3.f, 4.f});
  params p;
  p.set("w", wh);
  const auto y = cuda::eval(x * w + x, x = xh, p).to_host();  // x is used twice, uploaded once
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 0; c < 4; ++c) EXPECT_FLOAT_EQ(y(r, c), xh(r, c) * wh(c) + xh(r, c));
}

TEST_F(Gpu, DeviceParamsWinOverHostParams) {
  auto x = placeholder<"x", float, shape<dyn>>();
  auto w = variable<"w", float, shape<dyn>>();
  tensor<float, shape<dyn>> xh({1.f, 2.f, 3.f});
  params host;
  host.set("w", tensor<float, shape<dyn>>({10.f, 10.f, 10.f}));
  cuda::device_params dev;
  dev.set("w", tensor<float, shape<dyn>>({2.f, 2.f, 2.f}));
  const auto dx = cuda::to_device(xh);
  const auto y = cuda::eval(x * w, cuda::feed(x, dx), host, dev).to_host();
  EXPECT_FLOAT_EQ(y[2], 6.f);
  // download replaces the host entries
  dev.download(host);
  EXPECT_FLOAT_EQ((host.view<float, shape<dyn>>("w")(0)), 2.f);
  cuda::device_params uploaded;
  uploaded.upload(host);
  EXPECT_TRUE(uploaded.contains("w"));
  EXPECT_FLOAT_EQ(cuda::eval(sum(x * w), cuda::feed(x, dx), uploaded).to_host()[0], 12.f);
}

TEST_F(Gpu, StreamsAndOptions) {
  cuda::stream s;
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> xh(extents_t<1>{1 << 20}, 1.5f);
  auto dx = cuda::to_device(xh, s);
  const auto y = cuda::eval(sum(x * 2.0f), cuda::feed(x, dx), cuda::options{s});
  EXPECT_EQ(y.stream().handle, s.get());
  EXPECT_FLOAT_EQ(y.to_host(s)[0], 3.0f * float(1 << 20));
}

TEST_F(Gpu, ShapeErrorsBeforeAnyWork) {
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  tensor<float, shape<dyn>> ah(extents_t<1>{5}, 1.f), bh(extents_t<1>{6}, 1.f);
  const auto da = cuda::to_device(ah), db = cuda::to_device(bh);
  try {
    (void)cuda::eval(a + b, cuda::feed(a, da), cuda::feed(b, db));
    FAIL() << "expected a shape_error";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[5] and [6]"), std::string::npos) << e.what();
  }
  auto m = placeholder<"m", float, shape<dyn, 3>>();
  tensor<float, shape<dyn, dyn>> wrong(extents_t<2>{2, 4}, 1.f);
  const auto dm = cuda::to_device(wrong);
  EXPECT_THROW((void)cuda::eval(m * 2.0f, cuda::feed<"m">(dm.view())), shape_error);
  auto v = variable<"v", float, shape<dyn>>();
  params empty;
  EXPECT_THROW((void)cuda::eval(v * 2.0f, empty), value_error);
}

TEST_F(Gpu, EvalIntoReusesItsOutput) {
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> xh({1.f, 2.f, 3.f, 4.f, 5.f});
  const auto dx = cuda::to_device(xh);
  cuda::device_tensor<float, shape<dyn>> out;
  cuda::eval_into(out, exp(x), cuda::feed(x, dx));
  const float* first = out.data();
  cuda::eval_into(out, x * 3.0f, cuda::feed(x, dx));
  EXPECT_EQ(out.data(), first);
  EXPECT_FLOAT_EQ(out.to_host()[4], 15.f);
}

TEST_F(Gpu, StridedDeviceViewsAsFeeds) {
  // A column-major matrix seen through a strided device_view: its transpose is dense.
  auto x = placeholder<"x", float, shape<dyn, dyn>>();
  const auto h = iota(6, 9);  // stored [6,9]; viewed as [9,6] with strides {1, 9}
  const auto d = cuda::to_device(h);
  const cuda::device_view<const float, shape<dyn, dyn>> v(d.data(), {9, 6}, {1, 9});
  const auto y = cuda::eval(x * 1.0f, cuda::feed<"x">(v)).to_host();
  for (std::size_t r = 0; r < 9; ++r)
    for (std::size_t c = 0; c < 6; ++c) EXPECT_EQ(y(r, c), h(c, r));
  const auto t = cuda::eval(matmul(x, transpose(x)), cuda::feed<"x">(v)).to_host();
  EXPECT_EQ(t.extent(0), 9u);
  EXPECT_EQ(t.extent(1), 9u);
}

TEST_F(Gpu, EmptyTensorsAndReductionsOfNothing) {
  auto x = placeholder<"x", float, shape<dyn, dyn>>();
  tensor<float, shape<dyn, dyn>> h(extents_t<2>{0, 5});
  const auto d = cuda::to_device(h);
  EXPECT_EQ(cuda::eval(x * 2.0f, cuda::feed(x, d)).size(), 0u);
  const auto s = cuda::eval(sum(x, axes<0>), cuda::feed(x, d)).to_host();
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0], 0.f);
  EXPECT_TRUE(std::isnan(cuda::eval(mean(x), cuda::feed(x, d)).to_host()[0]));
}

}  // namespace
}  // namespace symflow_cuda_test

namespace symflow_cuda_test {
namespace {
using namespace symflow;

// A whole step (forward matmul + bias + relu, and the gradient of a loss) captured as one CUDA graph
// and replayed: replays see new input values written into the same device buffers.
TEST_F(Gpu, CapturedGraphReplaysAStep) {
  auto x = placeholder<"x", float, shape<dyn, 8>>();
  auto W = variable<"W", float, shape<8, 4>>();
  auto b = variable<"b", float, shape<4>>();
  const auto y = relu(matmul(x, W) + b);
  const auto dW = grad(mean(square(y)), W);
  tensor<float, shape<dyn, 8>> xh(extents_t<2>{64, 8}, uninitialized);
  tensor<float, shape<8, 4>> Wh;
  tensor<float, shape<4>> bh;
  for (std::size_t k = 0; k < xh.size(); ++k) xh[k] = float(k % 13) * 0.1f - 0.5f;
  for (std::size_t k = 0; k < Wh.size(); ++k) Wh[k] = float(k % 7) * 0.2f - 0.6f;
  for (std::size_t k = 0; k < bh.size(); ++k) bh[k] = 0.05f * float(k);
  cuda::stream s;
  auto dx = cuda::to_device(xh, s);
  auto dWv = cuda::to_device(Wh, s);
  auto dbv = cuda::to_device(bh, s);
  cuda::device_tensor<float, shape<dyn, 4>> y_out(extents_t<2>{64, 4}, s);
  cuda::device_tensor<float, shape<8, 4>> dW_out(extents_t<2>{8, 4}, s);
  auto step = [&] {
    cuda::eval_into(y_out, y, cuda::feed(x, dx), cuda::feed(W, dWv), cuda::feed(b, dbv), cuda::options{s});
    cuda::eval_into(dW_out, dW, cuda::feed(x, dx), cuda::feed(W, dWv), cuda::feed(b, dbv), cuda::options{s});
  };
  step();  // first use creates the cuBLAS handle outside the capture
  const auto y_ref = y_out.to_host(s);
  const auto dW_ref = dW_out.to_host(s);
  const cuda::graph g = cuda::graph::capture(s, step);
  EXPECT_GT(g.node_count(), 3u);
  SYMFLOW_CUDA_CHECK(cudaMemsetAsync(y_out.data(), 0, y_out.bytes(), s.get()));
  SYMFLOW_CUDA_CHECK(cudaMemsetAsync(dW_out.data(), 0, dW_out.bytes(), s.get()));
  g.launch(s);
  const auto y1 = y_out.to_host(s);
  const auto dW1 = dW_out.to_host(s);
  for (std::size_t k = 0; k < y1.size(); ++k) EXPECT_EQ(y1[k], y_ref[k]);
  for (std::size_t k = 0; k < dW1.size(); ++k) EXPECT_EQ(dW1[k], dW_ref[k]);
  // New inputs in the same buffers: the replay computes with them.
  for (std::size_t k = 0; k < xh.size(); ++k) xh[k] *= 2.0f;
  dx.copy_from_host(xh, s);
  g.launch(s);
  const auto y2 = y_out.to_host(s);
  const auto y2_ref = cuda::eval(y, x = xh, cuda::feed(W, dWv), cuda::feed(b, dbv), cuda::options{s}).to_host(s);
  for (std::size_t k = 0; k < y2.size(); ++k) EXPECT_FLOAT_EQ(y2[k], y2_ref[k]);
}

}  // namespace
}  // namespace symflow_cuda_test
