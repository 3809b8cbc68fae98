#pragma once
// One fusion group of the interpreter run as one pass over memory, in cache-sized tiles: either a
// program of steps (each member's SIMD loop over a tile held in L1, in turn) or a generated pass
// (pass_codegen.hpp: every member in registers). Both compute each element the same way, so the
// choice, the tile size and the thread count never change a result.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "../core/aligned_buffer.hpp"
#include "../eval/numerics.hpp"
#include "../eval/cpu/fused_loop.hpp"
#include "../core/parallel.hpp"
#include "op_table.hpp"
#include "pass_members.hpp"
#include "pass_reductions.hpp"
#include "plan.hpp"
#include "run_options.hpp"
#include "tile_copies.hpp"
#include "../ir/value.hpp"

namespace symflow {

class fused_pass {
 public:
  // `checking`: stored members are scanned for NaN and infinities as they are written.
  fused_pass(std::vector<fused_pass_input> inputs, std::vector<fused_pass_member> members, runtime_extents extents,
             const interpreter_options& options, bool checking, std::vector<fused_pass_reduction> reductions = {})
      : inputs_(std::move(inputs)), members_(std::move(members)), extents_(std::move(extents)),
        reductions_(std::move(reductions)) {
    plan_index_space();
    choose_tile(options);
    plan_row_tiles();
    build_program(checking);
    if (!reductions_.empty()) {  // the interpreter's tiles: a generated pass keeps no rows
      std::vector<dtype> types;
      for (const auto& r : reductions_) types.push_back(members_[r.member].type);
      const std::size_t row = extents_.back();  // reductions_ only for rank >= 1 (the planner)
      columns_ = pass_column_reductions(reductions_, types, element_count(extents_) / row, row);
      return;
    }
    std::vector<char> streamed;
    for (const step& st : steps_) streamed.push_back(st.stream);
    native_ = generated_pass_for(options, inputs_, members_, streamed);
    // A generated pass keeps its members in registers and reads its inputs as it computes (no
    // bursts of one op over a tile), so small tiles gain nothing and cost calls.
    if (native_ && options.tile_elements == 0 && tile_ < native_pass_tile)
      tile_ = row_tiles_ ? native_pass_tile / dims_[1] * dims_[1] : native_pass_tile;
  }

  bool native() const noexcept { return native_ != nullptr; }
  // Members computed in the loop of the member reading them (chain_pairs), when not native.
  std::size_t chained() const noexcept { return native_ ? 0 : chained_; }
  std::size_t tile() const noexcept { return tile_; }
  // Whole rows per tile, when tiles hold several (plan_row_tiles; at most the pass's rows); else 1.
  std::size_t rows_per_tile() const noexcept { return row_tiles_ ? std::min(tile_ / dims_[1], dims_[0]) : 1; }

  // The same pass over other memory (a later run of the same plan, runtime/pass_cache.hpp): the
  // inputs' elements, the stored members' storage and the reductions' results, in the order the
  // pass was built with (a member stored then is stored now). The program, the tile and the
  // threads' tile buffers are kept.
  void rebind(const std::vector<const void*>& inputs, const std::vector<void*>& storage,
              const std::vector<void*>& reduction_out) {
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      inputs_[k].data = inputs[k];
      flat_base_[k] = static_cast<const char*>(inputs[k]);
    }
    for (std::size_t k = 0; k < members_.size(); ++k) {
      members_[k].storage = storage[k];
      steps_[k].storage = static_cast<char*>(storage[k]);
    }
    for (std::size_t r = 0; r < reductions_.size(); ++r) reductions_[r].out = reduction_out[r];
    ++binding_;  // the lanes' splats of whole inputs are filled again
  }

  // Runs the pass over every element; returns whether a checked member holds NaN or an infinity.
  bool run() {
    if (element_count(extents_) == 0) return false;
    std::atomic<bool> nonfinite{false};
    std::vector<lane>& lanes = lanes_;  // kept from run to run: their buffers are allocated once
    if (lanes.size() < std::size_t(std::max(1, cpu::max_threads()))) lanes.resize(std::size_t(std::max(1, cpu::max_threads())));
    // With reductions over rows, threads' shares start on whole rows of the index space too (a row
    // is never split between two threads).
    // With reductions over columns, on whole blocks of rows (pass_reductions.hpp).
    std::size_t align = reductions_.empty() || dims_.size() == 1 ? tile_ : std::lcm(tile_, dims_.back());
    if (!columns_.empty()) align = std::lcm(align, columns_.block_rows() * extents_.back());
    cpu::parallel_chunks(element_count(extents_), align, [&](std::size_t thread, std::size_t begin, std::size_t end) {
      lane local;
      run_chunk(thread < lanes.size() ? lanes[thread] : local, begin, end, nonfinite);
    });
    columns_.finish([&](std::size_t r) { return reductions_[r].out; });
    return nonfinite.load();
  }

 private:
  static constexpr std::size_t native_pass_tile = 512;
  // Tiles, and the threads' shares, start on a multiple of the widest SIMD packet within a row (or
  // in the row's scalar tail), as in a single-threaded pass: each element is then computed the same
  // way, packet or scalar, whatever the thread count, so results do not depend on it.
  static constexpr std::size_t packet_grid = 16;

  // Member k of the program: its kernel with operands read through a pointer table (inputs first,
  // then members) and its result in a tile buffer or in its storage.
  struct step {
    tile_function run = nullptr;
    std::array<std::size_t, 3> in{};  // pointer-table indices of the operands
    std::size_t out = 0;              // pointer-table index of the result
    int buffer = -1;                  // the tile buffer holding the result; -1: its storage
    bool stream = false;              // stored: copied from the buffer with streaming stores
    bool check = false;               // stored under check_numerics: scanned per tile
    dtype type = dtype::f32;
    char* storage = nullptr;          // stored: the value's elements
    std::size_t esize = 0;
  };

  // Per thread, set up once for the pass (threads take several chunks): tile buffers, splats, the
  // pointer table.
  struct lane {
    bool ready = false;
    std::size_t binding = 0;  // the rebind its splats and pointer table are filled for
    std::vector<aligned_buffer<unsigned char>> buffers, splats;
    std::vector<const void*> ptr;
    std::vector<void*> out;  // a generated pass's stored tiles
    std::vector<std::size_t> index;
    pass_column_reductions::lane columns;
  };

  // Strides of each input in the pass's index space (0 along broadcast axes), then axes merged where
  // every input is contiguous across them.
  void plan_index_space() {
    const std::size_t nx = inputs_.size();
    std::vector<std::vector<std::size_t>> strides;
    for (const auto& x : inputs_) strides.push_back(broadcast_strides(extents_.size(), x.extents));
    merged_axes m = symflow::merge_axes(extents_, strides);
    dims_ = std::move(m.dims);
    dstrides_ = std::move(m.strides);
    splat_all_.resize(nx);
    inner_splat_.resize(nx);
    flat_base_.resize(nx);
    flat_step_.resize(nx);
    for (std::size_t k = 0; k < nx; ++k) {
      inner_splat_[k] = dstrides_[k].back() == 0;
      splat_all_[k] = std::all_of(dstrides_[k].begin(), dstrides_[k].end(), [](std::size_t s) { return s == 0; });
      // One merged axis: an input's tile starts at base + pos * step (bytes; 0 for a splat).
      flat_base_[k] = static_cast<const char*>(inputs_[k].data);
      flat_step_[k] = splat_all_[k] ? 0 : dstrides_[k][0] * dtype_size(inputs_[k].type);
    }
  }

  void choose_tile(const interpreter_options& options) {
    std::size_t wanted = options.tile_elements;
    if (wanted == 0) {  // automatic: small tiles for passes that stream from memory
      std::size_t bytes = 0;
      for (const auto& x : inputs_)
        if (element_count(x.extents) > 1) bytes += element_count(x.extents) * dtype_size(x.type);
      for (const auto& m : members_)
        if (m.storage) bytes += element_count(extents_) * dtype_size(m.type);
      wanted = bytes >= (std::size_t(2) << 20) ? 128 : 512;
    }
    tile_ = (std::max(packet_grid, wanted) + packet_grid - 1) / packet_grid * packet_grid;
    if (!reductions_.empty()) {
      // Whole rows per tile, on the packet grid: a multiple of the row and of packet_grid.
      const std::size_t unit = std::lcm(extents_.back(), packet_grid);
      tile_ = std::max<std::size_t>(1, tile_ / unit) * unit;
    }
  }

  // Tiles of several whole rows, where the index space is [rows, inner] (axes not merged because
  // an input broadcasts along one of them), the row is short and on the packet grid, and every input
  // is one of the row_input kinds (tile_copies.hpp): a tile then costs one lookup per input instead
  // of one per input and row, and each op's loop runs over more elements per call. Each row still
  // starts on the packet grid, so every element is computed as in a tile of one row (same bits).
  void plan_row_tiles() {
    row_tiles_ = dims_.size() == 2 && dims_[0] > 1 && dims_[1] % packet_grid == 0 && dims_[1] < tile_ &&
                 fused_pass_detail::classify_row_inputs(dims_[1], dstrides_, splat_all_, row_kind_);
    if (row_tiles_) tile_ = tile_ / dims_[1] * dims_[1];
  }

  // Tile buffers are assigned like registers: a buffer is reused once the last step reading its
  // member has run, so the working set is the values live at once (W2, 9 members: 3 buffers), not one
  // buffer per member. A stored member of at least cpu::streaming_store_bytes is computed into a
  // buffer and copied out with streaming stores (as compiled run_map writes such outputs: the CPU
  // does not read the lines first).
  void build_program(bool checking) {
    const std::size_t nx = inputs_.size(), nm = members_.size(), total = element_count(extents_);
    steps_.assign(nm, {});
    std::vector<std::size_t> last_read(nm);
    for (std::size_t k = 0; k < nm; ++k) {
      last_read[k] = k;
      const auto& in = members_[k].operands;
      for (std::size_t j = 0; j < in.size() && j < 3; ++j) {
        steps_[k].in[j] = in[j];
        if (in[j] >= nx) last_read[in[j] - nx] = k;
      }
    }
    for (const auto& r : reductions_) last_read[r.member] = nm;  // read after the tile's last step
    const std::vector<char> folded = chain_pairs(last_read);
    std::vector<int> free_buffers;
    for (std::size_t k = 0; k < nm; ++k) {
      step& st = steps_[k];
      const fused_pass_member& m = members_[k];
      st.out = nx + k;
      if (folded[k]) continue;  // computed by its reader's loop, in a register (chain_pairs)
      if (!st.run) st.run = m.kernel.run;
      st.type = m.type;
      st.check = checking && m.storage;
      st.esize = dtype_size(m.type);
      st.storage = static_cast<char*>(m.storage);
      st.stream = m.storage && fused_pass_detail::can_stream && total * st.esize >= cpu::streaming_store_bytes;
      if (!m.storage || st.stream) {
        const auto reuse = std::find_if(free_buffers.begin(), free_buffers.end(),
                                        [&](int b) { return buffer_esize_[std::size_t(b)] == st.esize; });
        if (reuse != free_buffers.end()) {
          st.buffer = *reuse;
          free_buffers.erase(reuse);
        } else {
          st.buffer = int(buffer_esize_.size());
          buffer_esize_.push_back(st.esize);
        }
      }
      // After step k, buffers whose member nothing later reads are free (k's own included: its
      // result is copied out, or unread, by then).
      for (std::size_t r = 0; r <= k; ++r)
        if (last_read[r] == k && steps_[r].buffer >= 0) free_buffers.push_back(steps_[r].buffer);
    }
  }

  // Members computed in the loop of the member reading them (chained_kernels.hpp): k where one
  // later member c is the only reader of k's value (no other member, no reduction) and k is not
  // stored. Step c then runs the pair over k's two operands and its own other one; k's operands are
  // read at step c instead (last_read), and their tile buffers stay theirs until then. One pair per
  // step: a member computing a pair is not folded into its reader, and a reader takes one member.
  std::vector<char> chain_pairs(std::vector<std::size_t>& last_read) {
    const std::size_t nx = inputs_.size(), nm = members_.size();
    std::vector<char> folded(nm, 0), pairs(nm, 0);
    std::vector<std::size_t> readers(nm, 0), reader(nm, 0);
    for (std::size_t c = 0; c < nm; ++c)
      for (auto at : members_[c].operands)
        if (at >= nx) {
          ++readers[at - nx];
          reader[at - nx] = c;
        }
    for (const auto& r : reductions_) {
      ++readers[r.member];
      reader[r.member] = nm;  // read by no member's step
    }
    for (std::size_t k = 0; k < nm; ++k) {
      const fused_pass_member& first = members_[k];
      if (pairs[k] || first.storage || readers[k] != 1 || reader[k] >= nm || first.operands.size() != 2) continue;
      const std::size_t c = reader[k];
      const fused_pass_member& second = members_[c];
      if (pairs[c] || second.operands.size() != 2 || first.type != second.type) continue;
      const int position = second.operands[0] == nx + k ? 0 : 1;
      const tile_function run = chained_tile_function(first.type, first.kernel.chain, second.kernel.chain, position);
      if (!run) continue;
      folded[k] = 1;
      pairs[c] = 1;
      steps_[c].run = run;
      steps_[c].in = {first.operands[0], first.operands[1], second.operands[std::size_t(1 - position)]};
      for (auto at : first.operands)
        if (at >= nx) last_read[at - nx] = std::max(last_read[at - nx], c);
      ++chained_;
    }
    return folded;
  }

  // A lane's tile buffers and splats, allocated at its first chunk; its pointer table and the
  // splats of whole inputs, filled again after a rebind.
  void prepare(lane& ln) const {
    const std::size_t nx = inputs_.size(), nm = members_.size();
    if (!ln.ready) {
      ln.ready = true;
      ln.ptr.assign(nx + nm, nullptr);
      ln.index.assign(dims_.size(), 0);
      for (auto esize : buffer_esize_) ln.buffers.emplace_back(tile_ * esize);
      ln.splats.resize(nx);
      for (std::size_t k = 0; k < nx; ++k)
        if (inner_splat_[k] || (row_tiles_ && row_kind_[k] == fused_pass_detail::row_input::repeated))
          ln.splats[k] = aligned_buffer<unsigned char>(tile_ * dtype_size(inputs_[k].type));
      for (std::size_t k = 0; k < nm; ++k)
        if (steps_[k].buffer >= 0) ln.ptr[nx + k] = ln.buffers[std::size_t(steps_[k].buffer)].data();
    } else if (ln.binding == binding_) {
      return;
    }
    ln.binding = binding_;
    for (std::size_t k = 0; k < nx; ++k) {
      const fused_pass_input& x = inputs_[k];
      if (splat_all_[k]) {
        fused_pass_detail::fill_splat(ln.splats[k].data(), x.data, x.type, tile_);
        ln.ptr[k] = ln.splats[k].data();
      } else if (row_tiles_ && row_kind_[k] == fused_pass_detail::row_input::repeated) {
        fused_pass_detail::fill_repeated_row(ln.splats[k].data(), x.data, x.type, dims_[1], tile_);
        ln.ptr[k] = ln.splats[k].data();
      }
    }
  }

  // Points the pointer table's inputs at the tile starting at `pos`; returns the tile's length.
  std::size_t locate_tile(lane& ln, std::size_t pos, std::size_t end) const {
    const std::size_t nx = inputs_.size();
    if (dims_.size() == 1) {
      for (std::size_t k = 0; k < nx; ++k)
        if (flat_step_[k]) ln.ptr[k] = flat_base_[k] + pos * flat_step_[k];
      return std::min(tile_, end - pos);
    }
    const std::size_t inner = dims_.back();
    if (row_tiles_) {  // pos and end on whole rows (plan_row_tiles, run)
      const std::size_t n = std::min(tile_, end - pos), first = pos / inner;
      for (std::size_t k = 0; k < nx; ++k) {
        if (splat_all_[k]) continue;
        const fused_pass_input& x = inputs_[k];
        const std::size_t esize = dtype_size(x.type);
        if (row_kind_[k] == fused_pass_detail::row_input::contiguous) {
          ln.ptr[k] = static_cast<const char*>(x.data) + pos * esize;
        } else if (row_kind_[k] == fused_pass_detail::row_input::per_row) {
          const char* value = static_cast<const char*>(x.data) + first * dstrides_[k][0] * esize;
          for (std::size_t r = 0; r < n / inner; ++r, value += dstrides_[k][0] * esize)
            fused_pass_detail::fill_splat(ln.splats[k].data() + r * inner * esize, value, x.type, inner);
          ln.ptr[k] = ln.splats[k].data();
        }
      }
      return n;
    }
    std::size_t row = pos / inner, col = pos % inner;
    const std::size_t n = std::min({tile_, inner - col, end - pos});
    for (std::size_t d = dims_.size() - 1; d-- > 0;) {
      ln.index[d] = row % dims_[d];
      row /= dims_[d];
    }
    for (std::size_t k = 0; k < nx; ++k) {
      if (splat_all_[k]) continue;
      const fused_pass_input& x = inputs_[k];
      const std::size_t esize = dtype_size(x.type);
      std::size_t at = col * dstrides_[k].back();
      for (std::size_t d = 0; d + 1 < dims_.size(); ++d) at += ln.index[d] * dstrides_[k][d];
      if (inner_splat_[k]) {
        fused_pass_detail::fill_splat(ln.splats[k].data(), static_cast<const char*>(x.data) + at * esize, x.type, n);
        ln.ptr[k] = ln.splats[k].data();
      } else {
        ln.ptr[k] = static_cast<const char*>(x.data) + at * esize;
      }
    }
    return n;
  }

  void run_chunk(lane& ln, std::size_t begin, std::size_t end, std::atomic<bool>& nonfinite) const {
    const std::size_t total = element_count(extents_), inner = dims_.back();
    const std::size_t packet_end = inner / packet_grid * packet_grid;
    const auto snap = [&](std::size_t p) {
      const std::size_t r = p % inner;
      return r < packet_end ? p - r % packet_grid : p;
    };
    begin = snap(begin);
    end = end == total ? end : snap(end);
    if (begin >= end) return;
    prepare(ln);
    bool streamed = false;
    const void** const ptr = ln.ptr.data();
    for (std::size_t pos = begin; pos < end;) {
      const std::size_t n = locate_tile(ln, pos, end);
      if (native_) {
        // Stored members go straight to their storage (streamed ones with streaming stores).
        ln.out.clear();
        for (const step& st : steps_)
          if (st.storage) ln.out.push_back(st.storage + pos * st.esize);
        native_(ptr, ln.out.data(), n);
        std::size_t j = 0;
        for (const step& st : steps_) {
          if (!st.storage) continue;
          streamed = streamed || st.stream;
          if (st.check && !all_finite(st.type, ln.out[j], n)) nonfinite.store(true, std::memory_order_relaxed);
          ++j;
        }
      } else {
        for (const step& st : steps_) {
          if (!st.run) continue;  // folded into its reader's step (chain_pairs)
          if (st.buffer < 0) ptr[st.out] = st.storage + pos * st.esize;
          void* out = const_cast<void*>(ptr[st.out]);
          const void* args[3] = {ptr[st.in[0]], ptr[st.in[1]], ptr[st.in[2]]};
          st.run(args, out, n);
          if (st.stream) {
            fused_pass_detail::stream_copy(st.storage + pos * st.esize, out, n * st.esize);
            streamed = true;
          }
          if (st.check && !all_finite(st.type, out, n)) nonfinite.store(true, std::memory_order_relaxed);
        }
        // Tiles hold whole rows (choose_tile): each row of the tile reduced as a unit would.
        const std::size_t row = reductions_.empty() ? 1 : extents_.back();  // rank >= 1 (the planner)
        for (const auto& r : reductions_) {
          const step& st = steps_[r.member];
          if (!r.columns)
            r.reduce_rows(ptr[st.out], st.type, n / row, row, static_cast<char*>(r.out) + pos / row * st.esize);
        }
        if (!columns_.empty())
          columns_.add(ln.columns, pos / row, n / row, [&](std::size_t r) { return ptr[steps_[reductions_[r].member].out]; });
      }
      pos += n;
    }
    columns_.flush(ln.columns);  // the chunk ends on a whole block (run)
    if (streamed) cpu::detail::stream_fence();
  }

  std::vector<fused_pass_input> inputs_;
  std::vector<fused_pass_member> members_;
  runtime_extents extents_;
  std::vector<fused_pass_reduction> reductions_;
  pass_column_reductions columns_;
  std::vector<std::size_t> dims_;                   // merged axes
  std::vector<std::vector<std::size_t>> dstrides_;  // per input, along the merged axes
  std::vector<char> splat_all_, inner_splat_;
  std::vector<const char*> flat_base_;
  std::vector<std::size_t> flat_step_;
  std::size_t tile_ = 0;
  std::vector<step> steps_;
  std::vector<std::size_t> buffer_esize_;
  bool row_tiles_ = false;            // tiles of whole rows (plan_row_tiles)
  std::vector<fused_pass_detail::row_input> row_kind_;   // per input, when row_tiles_
  pass_function native_ = nullptr;
  std::size_t chained_ = 0;
  std::vector<lane> lanes_;  // per thread
  std::size_t binding_ = 1;  // counts rebinds (a fresh lane has binding 0)
};

}  // namespace symflow
