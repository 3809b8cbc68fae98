// Writes the fuzzers' seed corpus: small valid graphs (JSON and binary) and .npy arrays of every
// kind the loaders accept, so that mutation starts from deep inside the formats, and one file per
// kind of hostile input the loaders must refuse (bad-*), so that those refusals stay covered. Run by
// hand after a format change: fuzz_seed_corpus <dir> (dir gets json/, binary/ and npy/; the tree's
// corpus is tests/data/fuzz). Crash reproducers kept as regressions (regression-*) are not written here.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

std::filesystem::path out_dir;

// Locations name the file only: the corpus should not depend on where the tree was built.
graph without_directories(graph g) {
  auto strip = [](graph_location& where) {
    where.file = std::filesystem::path(where.file).filename().string();
  };
  for (auto& l : g.inputs) strip(l.where);
  for (auto& l : g.parameters) strip(l.where);
  for (auto& c : g.constants) strip(c.where);
  for (auto& n : g.nodes) strip(n.where);
  return g;
}

void write_graph(const std::string& name, const graph& built) {
  const graph g = without_directories(built);
  save_graph_json_file((out_dir / "json" / (name + ".json")).string(), g);
  save_graph_binary_file((out_dir / "binary" / (name + ".sfg")).string(), g);
  // The other header flag: parameter entries without the value flag.
  save_graph_binary_file((out_dir / "binary" / (name + "-no-values.sfg")).string(), g, {.embed_parameters = false});
}

void write_array(const std::string& name, const std::vector<unsigned char>& bytes) {
  write_file_bytes((out_dir / "npy" / (name + ".npy")).string(), bytes.data(), bytes.size());
}

// matmul, add, tanh in a scope, with one embedded parameter.
graph dense_layer() {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto b = variable<"b", float, shape<2>>();
  graph g = to_graph(scope("dense", [&] { return tanh(matmul(x, W) + b); }));
  params p;
  p.set("W", tensor<float, shape<3, 2>>{{1.5f, -2.0f}, {0.25f, 0.0f}, {-0.0f, 3.0f}});
  embed_parameters(g, p);
  return g;
}

// A constant of every dtype, with special floats, and literals of every kind.
graph every_dtype() {
  auto x = placeholder<"x", double, shape<3>>();
  auto cf = constant(tensor<float, shape<3>>{std::numeric_limits<float>::quiet_NaN(),
                                             -std::numeric_limits<float>::infinity(),
                                             std::numeric_limits<float>::denorm_min()});
  auto cd = constant(tensor<double, shape<3>>{-0.0, 1e300, 0.1});
  auto ci = constant(tensor<std::int32_t, shape<3>>{std::numeric_limits<std::int32_t>::min(), 0, 7});
  auto cl = constant(tensor<std::int64_t, shape<3>>{std::numeric_limits<std::int64_t>::max(), -1, 0});
  auto cb = constant(tensor<bool, shape<3>>{true, false, true});
  auto y = where(cb, x * cast<double>(cf) + cd, cast<double>(ci) - cast<double>(cl)) + 2.0 + one<double>{};
  return to_graph(y, x > 0.5, cast<std::int64_t>(x) * std::int64_t(3));
}

// Views and kernels with attributes: reshape, transpose, slice, concat, one_hot, reductions.
graph attributes() {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto labels = placeholder<"labels", std::int32_t, shape<dyn>>();
  auto r = reshape<shape<dyn, 2, 2>>(x);
  auto t = permute<0, 2, 1>(r);
  auto s = slice(x, 0, 1);
  auto c = concat<1>(x, x);
  auto h = one_hot<4>(labels);
  return to_graph(sum(t, axes<1>, keepdims), mean(s), max(c), min(h * x), transpose(x), logsumexp(x));
}

// A loss and its gradients: many nodes in the grad/ scope.
graph gradients() {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto b = variable<"b", float, shape<2>>();
  auto logits = scope("dense", [&] { return matmul(x, W) + b; });
  auto loss = mean(logsumexp(logits) - sum(logits * one_hot<2>(y), axes<1>));
  auto [dW, db] = grad(loss, W, b);
  return to_graph(loss, dW, db);
}

// Kernels and views whose attributes are lists, optional or signed: pooling with padding, rounding
// and dilation, max-pooling's indices, a stepped slice, flip, tril, and the reshape_as of a gradient
// from several unknown extents.
graph pooling_slices_trilu() {
  auto x = placeholder<"x", float, shape<dyn, dyn, dyn, 3>>();
  auto s = placeholder<"s", float, shape<dyn, dyn, 4>>();
  auto l = sum(max_pool2d<3, 2, 1, pool_options::ceil_mode>(x)) + sum(avg_pool2d<2, 1, 1, pool_options::count_include_pad>(x)) +
           sum(max_pool2d<2, 1, 1, pool_options::none, 2>(x)) + sum(tril(s, -1)) + sum(flip<1>(narrow<2>(s, 0, 4, 2))) +
           sum(reshape<shape<dyn, 4>>(s));
  return to_graph(l, grad(l, x), grad(l, s), max_pool2d_indices<3, 2, 1, pool_options::none, 2>(x));
}

// Dilation and groups (optional attributes of the convolutions) on the forward op and both adjoints.
graph conv_dilated_grouped() {
  auto x = placeholder<"x", float, shape<dyn, dyn, dyn, 4>>();
  auto w = variable<"w", float, shape<3, 2, 2, 6>>();
  auto l = sum(conv2d<2, padding::same, 2, 2>(x, w));
  return to_graph(l, grad(l, x), grad(l, w));
}

graph empty() { return graph{}; }

void write_text(const std::filesystem::path& path, const std::string& text) {
  write_file_bytes(path.string(), text.data(), text.size());
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("seed corpus: '" + from + "' not found");
  return text.replace(at, from.size(), to);
}

void write_bad_json(const graph& model) {
  const std::string good = save_graph_json(model);
  const auto dir = out_dir / "json";
  write_text(dir / "bad-unknown-op.json", replaced(good, "\"op\":\"tanh\"", "\"op\":\"frobnicate\""));
  write_text(dir / "bad-cycle.json", replaced(good, "\"inputs\":[4]", "\"inputs\":[5]"));
  write_text(dir / "bad-dangling.json", replaced(good, "\"outputs\": [5]", "\"outputs\": [4000000000]"));
  write_text(dir / "bad-shape-overflow.json",
             replaced(good, "\"shape\":[-1,3]", "\"shape\":[4611686018427387904,4611686018427387904]"));
  write_text(dir / "bad-duplicate-key.json", replaced(good, "\"scope\":\"\",", "\"scope\":\"\",\"scope\":\"\","));
  write_text(dir / "bad-truncated.json", good.substr(0, good.size() / 2));
  write_text(dir / "bad-deep-nesting.json", std::string(100, '[') + std::string(100, ']'));
  std::string many_keys = "{";
  for (int i = 0; i < 100; ++i) many_keys += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  write_text(dir / "bad-many-keys.json", many_keys + "}");
  // A matmul of f64 by f32: kernels read their operands as the dtypes their rule admits.
  write_text(dir / "bad-kernel-dtypes.json",
             replaced(good, "\"name\":\"x\",\"scope\":\"\",\"dtype\":\"f32\"", "\"name\":\"x\",\"scope\":\"\",\"dtype\":\"f64\""));
}

// Rewrites the header's CRC-32 after a deliberate change, so that the change itself is what is refused.
void reseal(std::vector<unsigned char>& bytes) {
  const std::uint32_t crc = detail::crc32(bytes.data() + graph_binary_header_size, bytes.size() - graph_binary_header_size);
  for (int i = 0; i < 4; ++i) bytes[24 + i] = static_cast<unsigned char>(crc >> (8 * i));
}

void write_bad_binary(const graph& model) {
  const auto good = save_graph_binary(model);
  const auto dir = out_dir / "binary";
  auto write = [&](const char* name, const std::vector<unsigned char>& bytes) {
    write_file_bytes((dir / name).string(), bytes.data(), bytes.size());
  };
  auto bytes = good;
  bytes[0] = 'X';
  write("bad-magic.sfg", bytes);
  bytes = good;
  bytes[good.size() / 2] ^= 0x10;
  write("bad-checksum.sfg", bytes);
  write("bad-truncated.sfg", std::vector<unsigned char>(good.begin(), good.begin() + good.size() / 2));
  bytes = good;
  std::memset(bytes.data() + graph_binary_header_size, 0xFF, 4);  // the input count
  reseal(bytes);
  write("bad-huge-count.sfg", bytes);
  graph g = model;
  g.nodes.back().op = "frobnicate";
  write("bad-unknown-op.sfg", save_graph_binary(g));
  g = model;
  g.nodes.back().inputs[0] = g.first_node_id() + static_cast<std::uint32_t>(g.nodes.size()) - 1;
  write("bad-cycle.sfg", save_graph_binary(g));
  g = model;
  g.constants.clear();
  g.parameters[0].value->extents = {std::int64_t(1) << 40, std::int64_t(1) << 40};
  write("bad-shape-overflow.sfg", save_graph_binary(g));
  g = model;
  g.inputs[0].type.type = dtype::f64;  // matmul of f64 by f32
  write("bad-kernel-dtypes.sfg", save_graph_binary(g));
}

// A version 1.0 file with the given header dictionary, padded as NumPy pads it, and 24 zero data bytes.
std::vector<unsigned char> npy_with_header(std::string dict) {
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(dict.size() & 0xFF),
                                    static_cast<unsigned char>(dict.size() >> 8)};
  out.insert(out.end(), dict.begin(), dict.end());
  out.resize(out.size() + 24, 0);
  return out;
}

void write_bad_npy() {
  const auto good = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  auto bytes = good;
  bytes[1] = 'X';
  write_array("bad-magic", bytes);
  bytes = good;
  bytes[7] = 5;
  write_array("bad-minor-version", bytes);
  write_array("bad-truncated", std::vector<unsigned char>(good.begin(), good.end() - 3));
  write_array("bad-fortran-order", npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"));
  write_array("bad-big-endian", npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"));
  write_array("bad-shape-overflow",
              npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"));
  write_array("bad-one-axis-no-comma", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }"));
  write_array("bad-duplicate-key",
              npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
}

// Control flow: a scan whose body holds a cond, a while, and their gradient (scan_adjoint, cond of
// the branches' gradients, while_adjoint), so mutation reaches sub-graphs nested two deep.
graph control_flow_graph() {
  auto unary = [](auto make) {
    graph_builder b;
    auto s = b.input("s", dtype::f32, {2});
    auto x = b.input("x", dtype::f32, {2});
    return b.build({make(s, x)});
  };
  const graph add = unary([](auto s, auto x) { return s + x; });
  const graph halve = unary([](auto s, auto) { return s * 0.5; });
  graph_builder body;
  auto s = body.input("s", dtype::f32, {2});
  auto x = body.input("x", dtype::f32, {2});
  const graph step = body.build({cond(sum(x) > 0.0, add, halve, {s, x})});
  graph_builder c;
  auto v = c.input("v", dtype::f32, {2});
  const graph below = c.build({sum(v) < 10.0});
  graph_builder d;
  auto w = d.input("v", dtype::f32, {2});
  const graph twice = d.build({w * 2.0});
  graph_builder b;
  auto s0 = b.input("s0", dtype::f32, {2});
  auto xs = b.input("xs", dtype::f32, {-1, 2});
  auto states = scan(step, s0, xs);
  auto last = while_loop(below, twice, s0, {}, 16);
  return differentiate(b.build({sum(states) + sum(last)}), {"s0", "xs"});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seed_corpus <dir>\n";
    return 2;
  }
  out_dir = argv[1];
  for (const char* sub : {"json", "binary", "npy"}) std::filesystem::create_directories(out_dir / sub);

  const graph dense = without_directories(dense_layer());
  write_graph("dense", dense);
  write_graph("every-dtype", every_dtype());
  write_graph("attributes", attributes());
  write_graph("gradients", gradients());
  write_graph("pooling-slices-trilu", pooling_slices_trilu());
  write_graph("conv-dilated-grouped", conv_dilated_grouped());
  write_graph("empty", empty());
  write_graph("control-flow", control_flow_graph());

  write_array("f32-2x3", write_npy(tensor<float, shape<2, 3>>{{1, 2, 3}, {-0.5f, 0, 1e-40f}}));
  write_array("f64-4", write_npy(tensor<double, shape<4>>{0.1, -1e300, std::numeric_limits<double>::infinity(), 2}));
  write_array("i32-2x2x2", write_npy(tensor<std::int32_t, shape<2, 2, 2>>{{{1, 2}, {3, 4}}, {{-5, 6}, {7, -8}}}));
  write_array("i64-3", write_npy(tensor<std::int64_t, shape<3>>{std::numeric_limits<std::int64_t>::min(), 0, 1}));
  write_array("bool-5", write_npy(tensor<bool, shape<5>>{true, false, false, true, true}));
  write_array("f32-scalar", write_npy(tensor<float, shape<>>(extents_t<0>{}, 4.5f)));
  write_array("f64-0x3", write_npy(tensor<double, shape<dyn, 3>>(extents_t<2>{0, 3}, uninitialized)));
  write_bad_json(dense);
  write_bad_binary(dense);
  write_bad_npy();
  std::cout << "seed corpus written to " << out_dir.string() << "\n";
  return 0;
}
