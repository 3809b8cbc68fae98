#include <gtest/gtest.h>

#include <symflow/symflow.hpp>

using namespace symflow;

TEST(Seed, ExpressionIsSymbolicUntilEvaluated) {
  auto x = placeholder<"x", float, shape<>>();
  auto w = variable<"w", float, shape<>>();
  auto b = variable<"b", float, shape<>>();
  auto y = x * w + b;
  EXPECT_EQ(to_string(y), "add(mul(x:f32[], w:f32[]), b:f32[]) : f32[]");
  EXPECT_EQ(to_string(y).find("42"), std::string::npos);

  const tensor<float, shape<>> xv(10.f), wv(4.f), bv(2.f);
  EXPECT_EQ(eval(y, x = xv, w = wv, b = bv)[0], 42.f);
  params p;
  p.set("w", wv);
  p.set("b", bv);
  EXPECT_EQ(eval(y, x = xv, p)[0], 42.f);
}
