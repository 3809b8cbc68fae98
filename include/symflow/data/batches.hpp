#pragma once
// Mini-batches: which examples each batch of an epoch holds (in order, or shuffled by a seed), and
// copying those rows of a data tensor into a reusable batch tensor whose leading extent is dyn.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "shuffle.hpp"

namespace symflow {

// What happens to the examples left over when the batch size does not divide the count.
enum class last_batch { keep, drop };

// The order of one epoch's examples, cut into batches of batch_size; the last batch is shorter
// unless dropped.
class batch_plan {
 public:
  // In storage order: 0, 1, ..., example_count - 1.
  batch_plan(std::size_t example_count, std::size_t batch_size, last_batch last = last_batch::keep)
      : order_(example_count), batch_size_(checked(batch_size)), last_(last) {
    std::iota(order_.begin(), order_.end(), std::size_t(0));
  }
  // Shuffled: shuffled_indices(example_count, seed) (see shuffle.hpp for the exact algorithm).
  batch_plan(std::size_t example_count, std::size_t batch_size, std::uint64_t seed, last_batch last = last_batch::keep)
      : order_(shuffled_indices(example_count, seed)), batch_size_(checked(batch_size)), last_(last) {}

  std::size_t batch_size() const { return batch_size_; }
  std::size_t batch_count() const {
    const std::size_t full = order_.size() / batch_size_;
    return last_ == last_batch::keep && order_.size() % batch_size_ ? full + 1 : full;
  }
  // The example indices of batch b (0 <= b < batch_count()).
  std::span<const std::size_t> batch(std::size_t b) const {
    if (b >= batch_count())
      throw value_error("batch_plan: batch " + std::to_string(b) + " of " + std::to_string(batch_count()));
    const std::size_t begin = b * batch_size_;
    return std::span<const std::size_t>(order_).subspan(begin, std::min(batch_size_, order_.size() - begin));
  }
  const std::vector<std::size_t>& order() const { return order_; }

 private:
  static std::size_t checked(std::size_t batch_size) {
    if (batch_size == 0) throw value_error("batch_plan: the batch size must be at least 1");
    return batch_size;
  }
  std::vector<std::size_t> order_;
  std::size_t batch_size_;
  last_batch last_;
};

// Copies rows (indices along axis 0) of source into out, in the order given. out keeps its storage
// when it already has the right extents, so a loop over equal-sized batches allocates once.
template <class T, shape_spec S>
  requires(S::rank >= 1 && S::extents[0] == dyn)
void gather_rows(const tensor<T, S>& source, std::span<const std::size_t> rows, tensor<T, S>& out) {
  // An empty batch is a mistake upstream (an empty data set or split): a loss averaged over it is
  // 0/0 = NaN, found much later. Refused here, where the cause is still visible.
  if (rows.empty()) throw value_error("gather_rows: an empty batch (0 rows; a mean loss over it would be NaN)");
  extents_t<S::rank> e = source.extents();
  const std::size_t row_elements = e[0] ? source.size() / e[0] : 0;
  for (std::size_t r : rows)
    if (r >= e[0])
      throw value_error("gather_rows: row " + std::to_string(r) + " of a tensor with " + std::to_string(e[0]) + " rows");
  e[0] = rows.size();
  if (out.extents() != e) out = tensor<T, S>(e, uninitialized);
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy_n(source.data() + rows[i] * row_elements, row_elements, out.data() + i * row_elements);
}

// Rows [begin, end) of t as a view, without copying (for batches in storage order).
template <class T, shape_spec S>
  requires(S::rank >= 1 && S::extents[0] == dyn)
tensor_view<const T, S> row_range(const tensor<T, S>& t, std::size_t begin, std::size_t end) {
  if (begin > end || end > t.extent(0))
    throw value_error("row_range: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a tensor with " +
                      std::to_string(t.extent(0)) + " rows");
  extents_t<S::rank> e = t.extents();
  const std::size_t row_elements = e[0] ? t.size() / e[0] : 0;
  e[0] = end - begin;
  return tensor_view<const T, S>(t.data() + begin * row_elements, e);
}

}  // namespace symflow
