// scan (nn/scan.hpp) with token ids as xs, embedded inside the body, and a placeholder of the outer
// model read by the body: gradients of the table and the placeholder against central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>

#include "scan_support.hpp"

namespace {
using namespace symflow;
using namespace scan_testing;

// Token ids as xs: the body embeds them, so the table's gradient comes back through the steps while
// the ids have none; a placeholder of the outer model (a per-unit gate) is read inside the body.
TEST(ScanBodyLeaves, IntegerInputsAndOuterPlaceholdersInTheBody) {
  constexpr std::size_t steps = 4, vocabulary = 6;
  auto ids = placeholder<"ids", std::int32_t, shape<dyn, batch>>();
  auto h0 = placeholder<"h0", double, shape<batch, H>>();
  auto gate = placeholder<"gate", double, shape<H>>();
  nn::embedding<"emb", vocabulary, in, double> emb;
  nn::gru_cell<"gru", in, H, double> cell;
  params p = nn::parameters(emb, cell).initial_values(23);
  const auto step = [&](const auto& id, const auto& h) { return cell(emb(id), h) * gate; };
  const auto loss = sum(square(scan(step, h0, ids)));
  tensor<std::int32_t, shape<dyn, batch>> iv({steps, batch}, uninitialized);
  const std::int32_t picks[] = {5, 0, 2, 2, 0, 5, 1, 3};
  std::copy(std::begin(picks), std::end(picks), iv.begin());
  const auto hv = random_values<shape<batch, H>>({batch, H}, 6);
  const auto gv = random_values<shape<H>>({H}, 7);
  const auto value = [&] { return eval(loss, ids = iv, h0 = hv, gate = gv, p)[0]; };
  const auto [dtable, dgate] = std::apply([&](const auto&... g) { return eval(g..., ids = iv, h0 = hv, gate = gv, p); },
                                          grad(loss, emb.table.var, gate));
  auto table = p.view<double, shape<vocabulary, in>>("emb/table");
  for (std::size_t i = 0; i < table.size(); ++i)
    EXPECT_NEAR(dtable.data()[i], central_difference(table.data() + i, value), 1e-7) << "table[" << i << "]";
  EXPECT_EQ(dtable(4, 0), 0.0);  // id 4 never appears
  auto gv_mutable = gv;
  const auto value_of_gate = [&] { return eval(loss, ids = iv, h0 = hv, gate = gv_mutable, p)[0]; };
  for (std::size_t i = 0; i < H; ++i)
    EXPECT_NEAR(dgate.data()[i], central_difference(gv_mutable.data() + i, value_of_gate), 1e-7) << "gate[" << i << "]";
}

}  // namespace
