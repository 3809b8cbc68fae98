// A program that uses symflow the way a downstream project does: one include, one target.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto b = variable<"b", float, shape<2>>();
  auto y = scope("dense", [&] { return relu(matmul(x, W) + b); });

  params p;
  p.set("W", tensor<float, shape<3, 2>>{{1.f, -1.f}, {2.f, 0.5f}, {-1.f, 3.f}});
  p.set("b", tensor<float, shape<2>>{0.5f, -5.f});
  const tensor<float, shape<dyn, 3>> xv{{1.f, 2.f, 3.f}, {-1.f, 0.f, 2.f}};

  const auto r = eval(y, x = xv, p);
  const auto total = eval(sum(y), x = xv, p);
  std::cout << to_string(y) << "\n" << r << "\n" << "sum = " << total << "\n";

  // x W + b = [[2.5, 4], [-2.5, 2]]; relu -> [[2.5, 4], [0, 2]]; sum = 8.5
  const float expected[4] = {2.5f, 4.f, 0.f, 2.f};
  bool ok = r.extents() == extents_t<2>{2, 2} && total[0] == 8.5f &&
            to_string(y) == "relu(add(matmul(x:f32[?,3], W:f32[3,2]), b:f32[2])) : f32[?,2]";
  for (int i = 0; i < 4; ++i) ok = ok && r[i] == expected[i];
  std::cout << (ok ? "consumer: ok" : "consumer: WRONG RESULT") << std::endl;
  return ok ? 0 : 1;
}
