#pragma once
// One check shared by the op tests: the run-time gradient of a loss's graph (differentiate on
// to_graph(loss), run by the interpreter) equals the compiled gradient, element by element.
// (tests/runtime_grad_support.hpp has the multi-leaf form the graph tests use, with the JSON reader.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace symflow::testing {

template <class Loss, class X, class T, class S>
void expect_runtime_gradient_matches(const Loss& loss, const X& x, const tensor<T, S>& value, double tolerance) {
  const std::string name(X::name.view());
  const graph differentiated = differentiate(to_graph(loss), {name});
  runtime_feeds feeds;
  feeds.insert_or_assign(name, runtime_tensor(value));
  const auto out = interpreter(differentiated).run(feeds);
  const auto want = eval(grad(loss, x), x = value);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[1].extents(), std::vector<std::size_t>(want.extents().begin(), want.extents().end()));
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(out[1].data<T>()[k], want.data()[k], tolerance) << k;
}

}  // namespace symflow::testing
