// Every elementwise op's derivative rule, checked against float64 central differences on random
// inputs (away from kinks). The loss weights each element differently (sum(f(x) * c)) so that a
// wrong element or a transposed gradient cannot cancel out.
#include "grad_elementwise_support.hpp"

TEST(GradElementwise, Exp) { check_unary([](auto v) { return exp(v); }, 0.1, 2); }
TEST(GradElementwise, Log) { check_unary([](auto v) { return log(v); }, 0.2, 3, false); }
TEST(GradElementwise, Log1p) { check_unary([](auto v) { return log1p(v); }, 0.0, 3, false); }
TEST(GradElementwise, Sqrt) { check_unary([](auto v) { return sqrt(v); }, 0.2, 3, false); }
TEST(GradElementwise, Rsqrt) { check_unary([](auto v) { return rsqrt(v); }, 0.2, 3, false); }
TEST(GradElementwise, Square) { check_unary([](auto v) { return square(v); }, 0.1, 2); }
TEST(GradElementwise, Neg) { check_unary([](auto v) { return -v; }, 0.1, 2); }
TEST(GradElementwise, Abs) { check_unary([](auto v) { return abs(v); }, 0.1, 2); }
TEST(GradElementwise, Sin) { check_unary([](auto v) { return sin(v); }, 0.1, 3); }
TEST(GradElementwise, Cos) { check_unary([](auto v) { return cos(v); }, 0.1, 3); }
TEST(GradElementwise, Tanh) { check_unary([](auto v) { return tanh(v); }, 0.1, 2); }
TEST(GradElementwise, Sigmoid) { check_unary([](auto v) { return sigmoid(v); }, 0.1, 3); }
TEST(GradElementwise, Relu) { check_unary([](auto v) { return relu(v); }, 0.1, 2); }
TEST(GradElementwise, Softplus) { check_unary([](auto v) { return softplus(v); }, 0.1, 3); }
TEST(GradElementwise, ScalarArithmetic) {
  check_unary([](auto v) { return 2.5f * v - v / 4.0f + 1.0f; }, 0.1, 2);
  check_unary([](auto v) { return 3.0f / v; }, 0.5, 2);
}
