#pragma once
// The compact binary form of a graph value (see docs/graph.md for the layout).
//
//   header (28 bytes): magic "SYMFLOWG", u32 version (1), u32 flags (bit 0: parameter values
//   embedded), u64 payload size, u32 CRC-32 (IEEE) of the payload; then the payload.
//
// All integers are little-endian; floats are their IEEE bits. The reader checks every size against
// the bytes that remain before it allocates, so a hostile count fails with an error instead of an
// allocation larger than the file.
#include <array>
#include <bit>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "../core/excerpt.hpp"
#include "../core/file_limits.hpp"
#include "files.hpp"
#include "../core/utf8.hpp"
#include "../ir/graph.hpp"
#include "../ir/validate.hpp"

namespace symflow {

inline constexpr std::array<char, 8> graph_binary_magic{'S', 'Y', 'M', 'F', 'L', 'O', 'W', 'G'};
inline constexpr std::uint32_t graph_binary_version = 1;
inline constexpr std::size_t graph_binary_header_size = 28;

struct graph_save_options {
  bool embed_parameters = true;  // write parameter values the graph holds (embed_parameters())
};

namespace detail {
inline std::uint32_t crc32(const unsigned char* data, std::size_t n) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

class binary_writer {
 public:
  std::vector<unsigned char> bytes;
  template <class U>
  void uint(U v) {
    for (std::size_t i = 0; i < sizeof(U); ++i) bytes.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void u8(std::uint8_t v) { bytes.push_back(v); }
  void u32(std::uint32_t v) { uint(v); }
  void u64(std::uint64_t v) { uint(v); }
  void i64(std::int64_t v) { uint(static_cast<std::uint64_t>(v)); }
  void f64(double v) { uint(std::bit_cast<std::uint64_t>(v)); }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void extents(const std::vector<std::int64_t>& e) {
    u8(static_cast<std::uint8_t>(e.size()));
    for (auto x : e) i64(x);
  }
  void type(const graph_type& t) {
    u8(static_cast<std::uint8_t>(t.type));
    extents(t.shape);
  }
  void location(const graph_location& l) {
    str(l.file);
    u32(l.line);
  }
  // Element bytes are written as stored (little-endian on the hosts symflow supports).
  void tensor(const graph_tensor& t) {
    u8(static_cast<std::uint8_t>(t.type));
    extents(t.extents);
    u64(t.bytes.size());
    bytes.insert(bytes.end(), t.bytes.begin(), t.bytes.end());
  }
};

class binary_reader {
 public:
  binary_reader(const unsigned char* data, std::size_t size, std::size_t base) : p_(data), n_(size), base_(base) {}

  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
    throw graph_error("graph binary: " + what + " (at byte " + std::to_string(base_ + at) + ")");
  }
  std::size_t remaining() const { return n_ - pos_; }
  void need(std::uint64_t k, const char* what) const {
    if (k > remaining())
      fail(std::string("truncated: ") + what + " needs " + std::to_string(k) + " bytes, " +
           std::to_string(remaining()) + " remain");
  }
  template <class U>
  U uint(const char* what) {
    need(sizeof(U), what);
    U v = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(static_cast<U>(p_[pos_ + i]) << (8 * i));
    pos_ += sizeof(U);
    return v;
  }
  std::uint8_t u8(const char* what) { return uint<std::uint8_t>(what); }
  std::uint32_t u32(const char* what) { return uint<std::uint32_t>(what); }
  std::uint64_t u64(const char* what) { return uint<std::uint64_t>(what); }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(uint<std::uint64_t>(what)); }
  double f64(const char* what) { return std::bit_cast<double>(uint<std::uint64_t>(what)); }
  std::string str(const char* what) {
    const std::uint32_t n = u32(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    if (!valid_utf8(s)) fail(std::string(what) + " is not valid UTF-8");
    pos_ += n;
    return s;
  }
  // A count of entries, each at least min_bytes long: refused when the rest of the payload cannot hold them.
  std::uint32_t count(const char* what, std::size_t min_bytes) {
    const std::size_t at = pos_;
    const std::uint32_t n = u32(what);
    if (static_cast<std::uint64_t>(n) * min_bytes > remaining())
      fail_at(at, std::string("count of ") + what + " is " + std::to_string(n) + ", more than the " +
           std::to_string(remaining()) + " remaining bytes can hold");
    return n;
  }
  dtype type_code(const char* what) {
    const std::uint8_t d = u8(what);
    if (!find_dtype_info(static_cast<dtype>(d))) fail(std::string("unknown dtype code ") + std::to_string(d) + " in " + what);
    return static_cast<dtype>(d);
  }
  std::vector<std::int64_t> extents(const char* what) {
    const std::uint8_t rank = u8(what);
    if (rank > graph_max_rank) fail(std::string("rank ") + std::to_string(rank) + " of " + what + " exceeds " + std::to_string(graph_max_rank));
    need(std::uint64_t(rank) * 8, what);
    std::vector<std::int64_t> e(rank);
    for (auto& x : e) x = i64(what);
    return e;
  }
  graph_type type(const char* what) {
    graph_type t;
    t.type = type_code(what);
    t.shape = extents(what);
    return t;
  }
  graph_location location(const char* what) {
    graph_location l;
    l.file = str(what);
    l.line = u32(what);
    return l;
  }
  graph_tensor tensor(const char* what) {
    graph_tensor t;
    t.type = type_code(what);
    const std::size_t extents_at = pos_;
    t.extents = extents(what);
    const std::uint64_t elements = checked_element_count(
        "graph binary", std::string(what) + " at byte " + std::to_string(base_ + extents_at), t.extents, false);
    const std::uint64_t n = u64(what);
    if (n != elements * dtype_size(t.type))
      fail(std::string(what) + ": " + std::to_string(n) + " bytes of data for " + std::to_string(elements) + " " +
           std::string(dtype_name(t.type)) + " elements");
    need(n, what);
    t.bytes.assign(p_ + pos_, p_ + pos_ + n);
    pos_ += n;
    return t;
  }
  bool at_end() const { return pos_ == n_; }

 private:
  const unsigned char* p_;
  std::size_t n_, pos_ = 0, base_;
};
}  // namespace detail

namespace detail {
// The payload of one graph (a sub-graph attribute holds another, written the same way).
inline void write_graph_payload(binary_writer& w, const graph& g, const graph_save_options& options) {
  auto leaf = [&](const graph_leaf& l, bool with_value) {
    w.str(l.name);
    w.str(l.scope);
    w.type(l.type);
    w.location(l.where);
    if (with_value) {
      w.u8(l.value ? 1 : 0);
      if (l.value) w.tensor(*l.value);
    }
  };
  w.u32(static_cast<std::uint32_t>(g.inputs.size()));
  for (const auto& l : g.inputs) leaf(l, false);
  w.u32(static_cast<std::uint32_t>(g.parameters.size()));
  for (const auto& l : g.parameters) leaf(l, options.embed_parameters);
  w.u32(static_cast<std::uint32_t>(g.constants.size()));
  for (const auto& c : g.constants) {
    w.str(c.name);
    w.type(c.type);
    w.location(c.where);
    w.tensor(c.data);
  }
  w.u32(static_cast<std::uint32_t>(g.nodes.size()));
  for (const auto& n : g.nodes) {
    w.str(n.op);
    w.str(n.name);
    w.type(n.type);
    w.location(n.where);
    w.u32(static_cast<std::uint32_t>(n.inputs.size()));
    for (auto id : n.inputs) w.u32(id);
    w.u32(static_cast<std::uint32_t>(n.attributes.size()));
    for (const auto& a : n.attributes) {
      w.str(a.key);
      w.u8(static_cast<std::uint8_t>(a.value.index()));
      std::visit(
          [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, bool>) w.u8(v ? 1 : 0);
            else if constexpr (std::is_same_v<V, std::int64_t>) w.i64(v);
            else if constexpr (std::is_same_v<V, double>) w.f64(v);
            else if constexpr (std::is_same_v<V, std::string>) w.str(v);
            else if constexpr (std::is_same_v<V, subgraph>) write_graph_payload(w, *v.body, options);
            else {
              w.u32(static_cast<std::uint32_t>(v.size()));
              for (auto x : v) w.i64(x);
            }
          },
          a.value);
    }
  }
  w.u32(static_cast<std::uint32_t>(g.outputs.size()));
  for (auto id : g.outputs) w.u32(id);
}
}  // namespace detail

// The graph as bytes: deterministic, so save(load(save(g))) == save(g).
inline std::vector<unsigned char> save_graph_binary(const graph& g, graph_save_options options = {}) {
  detail::binary_writer w;
  detail::write_graph_payload(w, g, options);

  detail::binary_writer out;
  out.bytes.assign(graph_binary_magic.begin(), graph_binary_magic.end());
  out.u32(graph_binary_version);
  out.u32(options.embed_parameters ? 1u : 0u);
  out.u64(w.bytes.size());
  out.u32(detail::crc32(w.bytes.data(), w.bytes.size()));
  out.bytes.insert(out.bytes.end(), w.bytes.begin(), w.bytes.end());
  return out.bytes;
}

namespace detail {
// One graph's payload; `depth` counts the sub-graphs it sits in (graph_max_nesting, ir/validate.hpp).
inline graph read_graph_payload(binary_reader& r, bool with_values, std::size_t depth) {
  if (depth > graph_max_nesting)
    r.fail("sub-graphs nest deeper than " + std::to_string(graph_max_nesting) + " levels");
  graph g;
  // Minimum encoded sizes: a leaf is 2 strings + type + location = 4+4+2+4+4.
  auto leaf = [&](bool parameter) {
    graph_leaf l;
    l.name = r.str("leaf name");
    l.scope = r.str("leaf scope");
    l.type = r.type("leaf type");
    l.where = r.location("leaf location");
    if (parameter && with_values) {
      const std::uint8_t has = r.u8("parameter value flag");
      if (has > 1) r.fail("parameter value flag is " + std::to_string(has));
      if (has) l.value = r.tensor("parameter value");
    }
    return l;
  };
  const std::uint32_t n_inputs = r.count("inputs", 18);
  for (std::uint32_t i = 0; i < n_inputs; ++i) g.inputs.push_back(leaf(false));
  const std::uint32_t n_params = r.count("parameters", 18);
  for (std::uint32_t i = 0; i < n_params; ++i) g.parameters.push_back(leaf(true));
  const std::uint32_t n_constants = r.count("constants", 24);
  for (std::uint32_t i = 0; i < n_constants; ++i) {
    graph_constant c;
    c.name = r.str("constant name");
    c.type = r.type("constant type");
    c.where = r.location("constant location");
    c.data = r.tensor("constant data");
    g.constants.push_back(std::move(c));
  }
  const std::uint32_t n_nodes = r.count("nodes", 26);
  for (std::uint32_t i = 0; i < n_nodes; ++i) {
    graph_node n;
    n.op = r.str("op name");
    n.name = r.str("node name");
    n.type = r.type("node type");
    n.where = r.location("node location");
    const std::uint32_t n_in = r.count("node inputs", 4);
    for (std::uint32_t k = 0; k < n_in; ++k) n.inputs.push_back(r.u32("node input"));
    const std::uint32_t n_attr = r.count("attributes", 6);
    for (std::uint32_t k = 0; k < n_attr; ++k) {
      graph_attribute a;
      a.key = r.str("attribute key");
      const std::uint8_t tag = r.u8("attribute tag");
      switch (tag) {
        case 0: {
          const std::uint8_t b = r.u8("attribute");
          if (b > 1) r.fail("boolean attribute '" + detail::excerpt(a.key) + "' is " + std::to_string(b));
          a.value = b == 1;
          break;
        }
        case 1: a.value = r.i64("attribute"); break;
        case 2: a.value = r.f64("attribute"); break;
        case 3: a.value = r.str("attribute"); break;
        case 4: {
          const std::uint32_t len = r.count("attribute list", 8);
          std::vector<std::int64_t> v(len);
          for (auto& x : v) x = r.i64("attribute list");
          a.value = std::move(v);
          break;
        }
        case 5: a.value = subgraph{std::make_shared<const graph>(read_graph_payload(r, with_values, depth + 1))}; break;
        default: r.fail("unknown attribute tag " + std::to_string(tag) + " for '" + detail::excerpt(a.key) + "'");
      }
      n.attributes.push_back(std::move(a));
    }
    g.nodes.push_back(std::move(n));
  }
  const std::uint32_t n_out = r.count("outputs", 4);
  for (std::uint32_t k = 0; k < n_out; ++k) g.outputs.push_back(r.u32("output"));
  return g;
}
}  // namespace detail

inline graph load_graph_binary(const unsigned char* data, std::size_t size) {
  detail::binary_reader h(data, size, 0);
  if (size < graph_binary_magic.size() || !std::equal(graph_binary_magic.begin(), graph_binary_magic.end(), data))
    throw graph_error("graph binary: wrong magic (not a symflow graph file; expected \"SYMFLOWG\" at byte 0)");
  for (std::size_t i = 0; i < 8; ++i) h.u8("magic");
  const std::uint32_t version = h.u32("header");
  if (version != graph_binary_version)
    throw graph_error("graph binary: unsupported version " + std::to_string(version) + " (this reader reads version " +
                      std::to_string(graph_binary_version) + ")");
  const std::uint32_t flags = h.u32("header");
  if (flags & ~1u) h.fail("unknown flags " + std::to_string(flags));
  const bool with_values = flags & 1u;
  const std::uint64_t payload_size = h.u64("header");
  const std::uint32_t checksum = h.u32("header");
  if (payload_size != h.remaining())
    throw graph_error("graph binary: " + std::string(payload_size > h.remaining() ? "truncated file: " : "trailing bytes: ") +
                      "the header gives a payload of " + std::to_string(payload_size) + " bytes, the file holds " +
                      std::to_string(h.remaining()) + " after the header");
  const unsigned char* payload = data + graph_binary_header_size;
  const std::uint32_t actual = detail::crc32(payload, payload_size);
  if (actual != checksum)
    throw graph_error("graph binary: bad checksum (header says " + std::to_string(checksum) + ", payload has " +
                      std::to_string(actual) + "): the file is corrupt");

  detail::binary_reader r(payload, payload_size, graph_binary_header_size);
  graph g = detail::read_graph_payload(r, with_values, 0);
  if (!r.at_end()) r.fail(std::to_string(r.remaining()) + " unread bytes after the outputs");
  validate(g, "graph binary");
  return g;
}

inline graph load_graph_binary(const std::vector<unsigned char>& bytes) {
  return load_graph_binary(bytes.data(), bytes.size());
}

inline void save_graph_binary_file(const std::string& path, const graph& g, graph_save_options options = {}) {
  const auto bytes = save_graph_binary(g, options);
  write_file_bytes(path, bytes.data(), bytes.size());
}
// Errors name the file: "graph file 'PATH': graph binary: ...".
inline graph load_graph_binary_file(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  try {
    return load_graph_binary(bytes);
  } catch (const graph_error& e) {
    throw graph_error("graph file '" + detail::printable_path(path) + "': " + e.what());
  }
}

}  // namespace symflow
