// The seed example: y = x * w + b with x = 10, w = 4, b = 2. Building y computes nothing; printing it
// shows the symbolic node; evaluating it with feeds gives 42.
#include <iostream>
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<>>();
  auto w = variable<"w", float, shape<>>();
  auto b = variable<"b", float, shape<>>();

  auto y = x * w + b;
  std::cout << "expression: " << to_string(y) << "\n";

  params parameters;
  parameters.set("w", tensor<float, shape<>>(4.0f));
  parameters.set("b", tensor<float, shape<>>(2.0f));
  const tensor<float, shape<>> x_value(10.0f);

  const auto result = eval(y, x = x_value, parameters);
  std::cout << "value: " << result << "\n";
  return result[0] == 42.0f ? 0 : 1;
}
