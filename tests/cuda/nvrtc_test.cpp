// Graph values on the GPU through NVRTC (cuda/include/symflow/cuda/nvrtc/). Compiled by the host C++
// compiler, not nvcc: the graph runner needs no nvcc, which this file shows.
//  - Without a GPU (CI): generated sources compile with NVRTC to PTX (every registered elementwise op
//    for every dtype it accepts, every registered reduction for every numeric dtype, W1, W2, an MLP
//    forward pass, reductions fused with the group feeding them, views read through strides); the
//    cache returns the same entry for the same program and different entries for different ones;
//    the disk cache is written and read.
//  - With a GPU: results match the CPU interpreter on random inputs (||gpu - cpu|| / ||cpu|| < 1e-5;
//    1e-6 for reductions), also for a graph saved to JSON (and binary) and loaded back; a second run
//    with the same extents comes from the runner's plan cache; each skips without a device.
// The same paths run without a GPU in the host emulation (scripts/nvrtc_emulation.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <symflow/cuda/nvrtc/graph_runner.hpp>
#include <symflow/io/binary.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#if defined(SYMFLOW_TEST_HAVE_JSON)
#include <symflow/io/json.hpp>
#endif

namespace {

using namespace symflow;
namespace cu = symflow::cuda;

constexpr const char* arch = "compute_90";  // PTX: compiling needs no GPU

graph w1_graph() {
  graph_builder b;
  auto a = b.input("a", dtype::f32, {-1});
  auto bb = b.input("b", dtype::f32, {-1});
  auto c = b.input("c", dtype::f32, {-1});
  auto d = b.input("d", dtype::f32, {-1});
  return b.build({a * bb + c * sin(d)});
}

graph w2_graph() {
  graph_builder b;
  auto a = b.input("a", dtype::f32, {-1});
  auto bb = b.input("b", dtype::f32, {-1});
  auto c = b.input("c", dtype::f32, {-1});
  auto d = b.input("d", dtype::f32, {-1});
  return b.build({tanh(a * bb + c) * exp(-d * d) + 0.5 * a});
}

graph_tensor random_tensor(std::vector<std::int64_t> extents, std::uint32_t seed, double scale) {
  graph_tensor t;
  t.type = dtype::f32;
  t.extents = extents;
  std::size_t n = 1;
  for (auto e : extents) n *= std::size_t(e);
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& x : v) x = float(scale) * u(rng);
  t.bytes.resize(n * sizeof(float));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// x[?,784] -> relu(x W1 + b1) -> W2 + b2 -> log_softmax, parameters embedded.
graph mlp_graph() {
  graph_builder b;
  auto x = b.input("x", dtype::f32, {-1, 784});
  auto W1 = b.parameter("W1", dtype::f32, {784, 1024}, random_tensor({784, 1024}, 1, 0.05));
  auto b1 = b.parameter("b1", dtype::f32, {1024}, random_tensor({1024}, 2, 0.1));
  auto W2 = b.parameter("W2", dtype::f32, {1024, 10}, random_tensor({1024, 10}, 3, 0.05));
  auto b2 = b.parameter("b2", dtype::f32, {10}, random_tensor({10}, 4, 0.1));
  graph_handle h = [&] {
    auto s = b.scope("dense1");
    return relu(matmul(x, W1) + b1);
  }();
  graph_handle logits = [&] {
    auto s = b.scope("dense2");
    return matmul(h, W2) + b2;
  }();
  return b.build({log_softmax(logits), logits});
}

cu::nvrtc_options ptx_options() {
  cu::nvrtc_options o;
  o.arch = arch;
  return o;
}

cu::input_specs vectors(std::size_t n) {
  cu::input_specs s;
  for (const char* name : {"a", "b", "c", "d"}) s[name] = {dtype::f32, {n}};
  return s;
}

bool is_ptx_with_entry(const cu::compiled_program& p) {
  return !p.is_cubin() && p.image().find(".entry symflow_group") != std::string::npos &&
         p.image().find(".target sm_90") != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// Without a GPU

// Node names are data: one holding a newline and a preprocessor line, or closing a comment, must not
// reach the generated source (they were pasted into its comments), and the kernel still compiles.
TEST(NvrtcCodegen, NodeNamesNeverReachTheGeneratedSource) {
  graph_builder b;
  auto x = b.input("x", dtype::f32, {-1});
  auto y = b.input("y", dtype::f32, {-1});
  auto p = b.apply("mul", {x, y}, {}, "p\n#error injected through a node name\n");
  auto q = b.apply("exp", {p}, {}, "q */ int injected_too = 1; /*");
  const cu::graph_runner r(b.build({q}), ptx_options());
  const auto ks = r.kernels(cu::input_specs{{"x", {dtype::f32, {100}}}, {"y", {dtype::f32, {100}}}});
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].program.source.find("injected"), std::string::npos) << ks[0].program.source;
  std::shared_ptr<cu::compiled_program> compiled;
  ASSERT_NO_THROW(compiled = cu::kernel_cache::global().get(ks[0].program)) << ks[0].program.source;
  EXPECT_TRUE(is_ptx_with_entry(*compiled));
}

TEST(NvrtcCodegen, W1IsOneKernelCallingTheOpsByTheirTypes) {
  const cu::graph_runner r(w1_graph(), ptx_options());
  const auto ks = r.kernels(vectors(1000));
  ASSERT_EQ(ks.size(), 1u);
  const auto& src = ks[0].program.source;
  EXPECT_EQ(ks[0].members.size(), 4u);
  for (const char* s : {"#include \"symflow/ops/mul.hpp\"", "#include \"symflow/ops/sin.hpp\"",
                        "#include \"symflow/ops/add.hpp\"", "symflow::ops::mul_op::apply(",
                        "symflow::ops::sin_op::apply(", "symflow::ops::add_op::apply("})
    EXPECT_NE(src.find(s), std::string::npos) << s << "\n" << src;
  // Every operand is read at the element's own index: no coordinates.
  EXPECT_EQ(src.find("f.stride"), std::string::npos) << src;
  // The op files are handed to NVRTC as they are on disk (only their scalar part is compiled).
  bool has_sin_file = false;
  for (const auto& [name, text] : ks[0].program.headers)
    if (name == "symflow/ops/sin.hpp") has_sin_file = text.find("#ifndef SYMFLOW_SCALAR_ONLY") != std::string::npos;
  EXPECT_TRUE(has_sin_file);
  const auto compiled = r.compile(vectors(1000));
  ASSERT_EQ(compiled.size(), 1u);
  EXPECT_TRUE(is_ptx_with_entry(*compiled[0])) << compiled[0]->image().substr(0, 400);
}

TEST(NvrtcCodegen, W2EmbedsItsLiteralBitExactly) {
  const cu::graph_runner r(w2_graph(), ptx_options());
  const auto ks = r.kernels(vectors(77));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].members.size(), 9u);
  EXPECT_NE(ks[0].program.source.find("__int_as_float(0x3f000000)"), std::string::npos) << ks[0].program.source;
  EXPECT_NE(ks[0].program.source.find("symflow::ops::neg_op::apply("), std::string::npos);
  const auto compiled = r.compile(vectors(77));
  ASSERT_EQ(compiled.size(), 1u);
  EXPECT_TRUE(is_ptx_with_entry(*compiled[0]));
}

TEST(NvrtcCodegen, MlpForwardCompiles) {
  const cu::graph_runner r(mlp_graph(), ptx_options());
  const cu::input_specs in{{"x", {dtype::f32, {64, 784}}}};
  const auto ks = r.kernels(in);
  ASSERT_GE(ks.size(), 3u);  // bias + relu, bias, log_softmax's elementwise parts
  // The bias is broadcast along rows: read through frame coordinates.
  EXPECT_NE(ks[0].program.source.find("symflow::ops::relu_op::apply("), std::string::npos) << ks[0].program.source;
  EXPECT_NE(ks[0].program.source.find("f.stride"), std::string::npos) << ks[0].program.source;
  for (const auto& p : r.compile(in)) EXPECT_TRUE(is_ptx_with_entry(*p));
}

// Every registered elementwise op, for every operand dtype its rule accepts, in one fused group per
// dtype: each op file's scalar part compiles under NVRTC.
TEST(NvrtcCodegen, EveryElementwiseOpCompilesForEveryDtypeItAccepts) {
  std::size_t instances = 0;
  for (dtype d : {dtype::f32, dtype::f64, dtype::i32, dtype::i64, dtype::boolean}) {
    graph_builder b;
    auto x = b.input("x", d, {-1});
    auto y = b.input("y", d, {-1});
    // A group member every op reads, so that all of them join one group.
    auto base = b.apply("expand_as", {x, y});
    auto mask = b.apply("less", {x, y});
    std::vector<graph_handle> outs{base};
    for (const auto& s : op_schemas()) {
      if (s.kind != node_kind::elementwise) continue;
      std::vector<std::vector<graph_attribute>> variants{{}};
      if (s.name == "cast") {
        variants.clear();
        for (dtype to : {dtype::f32, dtype::f64, dtype::i32, dtype::i64, dtype::boolean})
          variants.push_back({{"to", std::string(dtype_name(to))}});
      }
      for (const auto& attrs : variants) {
        std::vector<graph_handle> operands(s.min_inputs, base);
        std::vector<dtype> types(s.min_inputs, d);
        if (s.name == "where") {
          operands[0] = mask;
          types[0] = dtype::boolean;
        }
        graph_node probe{std::string(s.name), "probe", attrs, {}, {}, {}};
        if (!find_runtime_op(s.name)->elementwise(node_attributes(probe), types)) continue;
        outs.push_back(b.apply(s.name, operands, attrs));
        ++instances;
      }
    }
    const cu::graph_runner r(b.build(outs), ptx_options());
    const cu::input_specs in{{"x", {d, {10}}}, {"y", {d, {10}}}};
    const auto ks = r.kernels(in);
    ASSERT_LE(ks.size(), 2u) << dtype_name(d);  // the ops over `base` (and `mask`, unless where joined it)
    for (const auto& k : ks) {
      std::shared_ptr<cu::compiled_program> p;
      ASSERT_NO_THROW(p = cu::kernel_cache::global().get(k.program)) << dtype_name(d) << "\n" << k.program.source;
      EXPECT_TRUE(is_ptx_with_entry(*p));
    }
  }
  EXPECT_GT(instances, 60u);
}

// Each elementwise op in a group of its own (with expand_as, which feeds it), for the first dtype it
// accepts: its file compiles under NVRTC with only the headers it names itself. In one group with
// every other op, a file that needs another op's file (ceil and round need floor.hpp's base) would
// compile by luck.
TEST(NvrtcCodegen, EachElementwiseOpCompilesWithOnlyTheHeadersItNames) {
  std::size_t ops = 0, compiled = 0;
  for (const auto& s : op_schemas()) {
    if (s.kind != node_kind::elementwise || s.name == "expand_as") continue;
    ++ops;
    std::vector<graph_attribute> attrs;
    if (s.name == "cast") attrs.push_back({"to", std::string("f64")});
    for (dtype d : {dtype::f32, dtype::i64, dtype::boolean}) {
      std::vector<dtype> types(s.min_inputs, d);
      if (s.name == "where") types[0] = dtype::boolean;
      graph_node probe{std::string(s.name), "probe", attrs, {}, {}, {}};
      if (!find_runtime_op(s.name)->elementwise(node_attributes(probe), types)) continue;
      graph_builder b;
      auto x = b.input("x", d, {-1});
      auto y = b.input("y", d, {-1});
      std::vector<graph_handle> operands(s.min_inputs, b.apply("expand_as", {x, y}));
      if (s.name == "where") operands[0] = b.input("m", dtype::boolean, {-1});
      const cu::graph_runner r(b.build({b.apply(s.name, operands, attrs)}), ptx_options());
      cu::input_specs in{{"x", {d, {10}}}, {"y", {d, {10}}}};
      if (s.name == "where") in.emplace("m", cu::value_spec{dtype::boolean, {10}});
      for (const auto& k : r.kernels(in)) {
        std::shared_ptr<cu::compiled_program> p;
        ASSERT_NO_THROW(p = cu::kernel_cache::global().get(k.program)) << s.name << "\n" << k.program.source;
        EXPECT_TRUE(is_ptx_with_entry(*p));
        ++compiled;
      }
      break;
    }
  }
  EXPECT_EQ(compiled, ops);  // one kernel each: every op accepts one of the three dtypes
  EXPECT_GE(ops, 40u);
}

TEST(NvrtcCache, SameProgramSameEntryDifferentProgramDifferentEntry) {
  const cu::graph_runner r1(w1_graph(), ptx_options()), r1_again(w1_graph(), ptx_options());
  const cu::graph_runner r2(w2_graph(), ptx_options());
  const auto a = r1.compile(vectors(1000));
  const auto hits = cu::kernel_cache::global().stats().memory_hits;
  const auto b = r1_again.compile(vectors(1000));
  EXPECT_EQ(a[0].get(), b[0].get());
  EXPECT_EQ(cu::kernel_cache::global().stats().memory_hits, hits + 1);
  // Kernels take extents as arguments: another length of the same rank is the same program.
  EXPECT_EQ(r1.compile(vectors(123457))[0].get(), a[0].get());
  const auto c = r2.compile(vectors(1000));
  EXPECT_NE(c[0].get(), a[0].get());
  EXPECT_NE(c[0]->key(), a[0]->key());
  // Other options are other programs.
  cu::nvrtc_options o = ptx_options();
  o.arch = "compute_80";
  const auto d = cu::graph_runner(w1_graph(), o).compile(vectors(1000));
  EXPECT_NE(d[0]->key(), a[0]->key());
  EXPECT_NE(d[0]->image().find(".target sm_80"), std::string::npos);
}

TEST(NvrtcCache, DiskCacheIsWrittenAtomicallyAndRead) {
  const auto dir = std::filesystem::temp_directory_path() / ("symflow_nvrtc_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  cu::nvrtc_options o = ptx_options();
  o.cache_dir = dir.string();
  const cu::graph_runner r(w2_graph(), o);
  cu::kernel_cache::global().clear();
  const auto first = r.compile(vectors(10));
  EXPECT_EQ(cu::kernel_cache::global().stats().compiled, 1u);
  EXPECT_FALSE(first[0]->loaded_from_disk());
  const auto file = dir / (first[0]->key() + ".ptx");
  ASSERT_TRUE(std::filesystem::exists(file));
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++entries;
    EXPECT_EQ(e.path().extension(), ".ptx") << e.path();  // no temporary file left behind
  }
  EXPECT_EQ(entries, 1u);
  cu::kernel_cache::global().clear();
  const auto second = r.compile(vectors(10));
  EXPECT_TRUE(second[0]->loaded_from_disk());
  EXPECT_EQ(cu::kernel_cache::global().stats().disk_hits, 1u);
  EXPECT_EQ(cu::kernel_cache::global().stats().compiled, 0u);
  EXPECT_EQ(second[0]->image(), first[0]->image());
  std::filesystem::remove_all(dir);
}

// x[?, 37] (f32) and z[?, 5, 7] (f64): reductions over rows and over all axes, fed by a fusion group or
// read from memory, and one over a leading axis (still on the host).
graph reductions_graph() {
  graph_builder b;
  auto x = b.input("x", dtype::f32, {-1, 37});
  auto z = b.input("z", dtype::f64, {-1, 5, 7});
  auto e = exp(x) * 2.0;
  return b.build({reduce_value(ops::sum_op{}, e, {1}, false),        // rows, fused with exp * 2
                  reduce_value(ops::mean_op{}, x * x, {0, 1}, false),  // all axes, fused
                  reduce_value(ops::max_op{}, x, {-1}, true),          // rows, reading the input
                  reduce_value(ops::min_op{}, z - 1.0, {1, 2}, false), // trailing two axes, f64
                  reduce_value(ops::sum_op{}, x, {0}, false)});        // a leading axis: host
}

TEST(NvrtcCodegen, ReductionsOverTrailingAxesAreKernelsFusedWithTheirOperandsGroup) {
  const cu::graph_runner r(reductions_graph(), ptx_options());
  const cu::input_specs in{{"x", {dtype::f32, {100, 37}}}, {"z", {dtype::f64, {3, 5, 7}}}};
  const auto ks = r.kernels(in);
  ASSERT_EQ(ks.size(), 4u);
  std::size_t fused = 0;
  for (const auto& k : ks) {
    ASSERT_TRUE(k.reduction.has_value()) << k.description;
    const auto& src = k.program.source;
    EXPECT_NE(src.find("__syncthreads()"), std::string::npos) << src;
    EXPECT_EQ(src.find("atomic"), std::string::npos) << src;
    // Floating reductions accumulate in double, as the CPU interpreter's.
    EXPECT_NE(src.find("__shared__ double part[256]"), std::string::npos) << src;
    if (!k.members.empty()) ++fused;
  }
  EXPECT_EQ(fused, 3u);
  // sum(exp(x) * 2) over rows: one pass; exp(x) * 2 is never stored.
  const auto& sum = ks[0];
  EXPECT_EQ(sum.members.size(), 2u);  // exp, mul (the literal 2 is a constant in the source)
  EXPECT_TRUE(sum.stored.empty()) << sum.program.source;
  EXPECT_EQ(sum.reduction->rows, 100u);
  EXPECT_EQ(sum.reduction->count, 37u);
  for (const char* s : {"#include \"symflow/ops/sum.hpp\"", "symflow::ops::sum_op::identity<double>()",
                        "symflow::ops::sum_op::combine(acc, static_cast<double>(v", "symflow::ops::sum_op::finish(part[0]",
                        "symflow::ops::exp_op::apply("})
    EXPECT_NE(sum.program.source.find(s), std::string::npos) << s << "\n" << sum.program.source;
  EXPECT_EQ(ks[1].reduction->rows, 1u);  // mean over all axes
  EXPECT_EQ(ks[1].reduction->count, 3700u);
  EXPECT_TRUE(ks[2].members.empty());  // max reads x itself
  EXPECT_NE(ks[2].program.source.find("symflow::ops::max_op::combine("), std::string::npos);
  EXPECT_EQ(ks[3].reduction->count, 35u);
  EXPECT_NE(ks[3].program.source.find("symflow::ops::min_op::identity<double>()"), std::string::npos);
  for (const auto& p : r.compile(in)) EXPECT_TRUE(is_ptx_with_entry(*p)) << p->log();
  // Unfused: the reductions read their operands from memory.
  cu::nvrtc_options o = ptx_options();
  o.fuse = false;
  for (const auto& k : cu::graph_runner(reductions_graph(), o).kernels(in))
    if (k.reduction) {
      EXPECT_TRUE(k.members.empty()) << k.description;
    }
}

// Every registered reduction, for every dtype it accepts (bool stays on the host, whose runtime form
// refuses it): the op file's identity, combine and finish compile under NVRTC.
TEST(NvrtcCodegen, EveryReductionCompilesForEveryNumericDtype) {
  std::size_t instances = 0;
  for (dtype d : {dtype::f32, dtype::f64, dtype::i32, dtype::i64}) {
    graph_builder b;
    auto x = b.input("x", d, {-1, 9});
    std::vector<graph_handle> outs;
    for (const auto& s : op_schemas()) {
      if (s.kind != node_kind::reduction) continue;
      outs.push_back(b.apply(s.name, {x}, {{"axes", std::vector<std::int64_t>{1}}, {"keepdims", false}}));
      outs.push_back(b.apply(s.name, {x + x}, {{"axes", std::vector<std::int64_t>{0, 1}}, {"keepdims", true}}));
      ++instances;
    }
    const cu::graph_runner r(b.build(outs), ptx_options());
    const auto ks = r.kernels({{"x", {d, {4, 9}}}});
    EXPECT_EQ(ks.size(), outs.size()) << dtype_name(d);
    for (const auto& k : ks) {
      std::shared_ptr<cu::compiled_program> p;
      ASSERT_NO_THROW(p = cu::kernel_cache::global().get(k.program)) << dtype_name(d) << "\n" << k.program.source;
      EXPECT_TRUE(is_ptx_with_entry(*p));
    }
  }
  EXPECT_GE(instances, 16u);
}

// Views: transpose, slice, reshape and expand_dims read by groups and reductions, returned, and read by
// matmul (materialised there).
graph views_graph() {
  graph_builder b;
  auto x = b.input("x", dtype::f32, {-1, 21});
  auto row = b.input("row", dtype::f32, {-1});
  auto W = b.input("W", dtype::f32, {21, 8});
  auto xt = transpose(x);
  auto s1 = slice(x, 1, 3, 17);
  auto e = b.apply("expand_dims", {row}, {{"axes", std::vector<std::int64_t>{1}}});
  return b.build({tanh(xt) * 2.0,                                     // 0: transpose -> group
                  s1 * 3.0 - e,                                       // 1: slice, expand_dims -> group
                  reshape(x * 2.0, {-1}) + 1.0,                       // 2: reshape of a group's value
                  reduce_value(ops::sum_op{}, xt, {1}, false),        // 3: transpose -> reduction
                  xt,                                                 // 4: returned: strided copy
                  slice(x, 0, 1, 4),                                  // 5: returned, contiguous: alias
                  matmul(transpose(W), transpose(slice(x, 0, 0, 8)))});  // 6: views feeding matmul
}

TEST(NvrtcCodegen, ViewsAreReadThroughStridesByTheKernelsConsumingThem) {
  const cu::graph_runner r(views_graph(), ptx_options());
  const cu::input_specs in{{"x", {dtype::f32, {33, 21}}}, {"row", {dtype::f32, {33}}}, {"W", {dtype::f32, {21, 8}}}};
  const auto ks = r.kernels(in);
  const auto& g = r.source();
  const auto first = g.inputs.size() + g.parameters.size() + g.constants.size();
  const auto op_of = [&](std::uint32_t id) { return id < first ? std::string("input") : g.nodes[id - first].op; };
  std::size_t folded = 0, copies = 0;
  for (const auto& k : ks) {
    for (std::size_t x = 0; x < k.externals.size(); ++x)
      if (k.sources[x] != k.externals[x]) {
        ++folded;
        EXPECT_EQ(find_runtime_op(op_of(k.externals[x]))->kind, node_kind::view);
      }
    if (k.copy_of()) {
      ++copies;
      EXPECT_EQ(k.program.source.find("symflow/ops/"), std::string::npos) << k.program.source;  // calls no op
    }
  }
  EXPECT_GE(folded, 5u);  // xt (group, reduction, copy), s1, expand_dims, the transposes feeding matmul
  EXPECT_EQ(copies, 3u);  // xt returned; transpose(W) and transpose(slice) for matmul
  const auto with = [&](const char* op) -> const cu::generated_kernel& {
    for (const auto& k : ks)
      for (auto m : k.members)
        if (op_of(m) == op) return k;
    return ks.front();
  };
  // tanh(transpose(x)) * 2: x read through the transpose's strides, in the group's kernel (though the
  // transpose is also copied, for being returned).
  const auto& t = with("tanh");
  ASSERT_EQ(t.externals.size(), 2u) << t.program.source;  // the transpose, the literal 2
  EXPECT_EQ(op_of(t.externals[0]), "transpose");
  EXPECT_EQ(t.sources[0], 0u);  // input x
  EXPECT_EQ(t.access[0], cu::operand_access::strided);
  EXPECT_NE(t.program.source.find("f.stride[0]"), std::string::npos) << t.program.source;
  // s1 * 3 - expand_dims(row): the slice starts 3 elements into x.
  const auto& s = with("sub");
  EXPECT_EQ(op_of(s.externals[0]), "slice");
  EXPECT_EQ(s.offsets[0], 3u);
  for (const auto& p : r.compile(in)) EXPECT_TRUE(is_ptx_with_entry(*p)) << p->log();
}

TEST(NvrtcCodegen, BadFeedsAreRefusedBeforeAnyWork) {
  const cu::graph_runner r(w1_graph(), ptx_options());
  cu::input_specs in = vectors(10);
  in.erase("c");
  EXPECT_THROW(r.kernels(in), value_error);
  in = vectors(10);
  in["c"] = {dtype::f32, {11}};
  EXPECT_THROW(r.kernels(in), shape_error);  // cannot broadcast [10] and [11]
  in["c"] = {dtype::f64, {10}};
  EXPECT_THROW(r.kernels(in), shape_error);  // the graph expects f32
}

// ---------------------------------------------------------------------------------------------
// With a GPU

class NvrtcGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cu::device_available()) GTEST_SKIP() << "symflow::cuda: GPU test skipped, " << cu::device_description();
  }
};

runtime_tensor random_runtime(dtype d, runtime_extents e, std::uint32_t seed) {
  runtime_tensor t(d, std::move(e));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (std::size_t i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

double relative_error(const runtime_tensor& gpu, const runtime_tensor& cpu) {
  EXPECT_EQ(gpu.type(), cpu.type());
  EXPECT_EQ(gpu.extents(), cpu.extents());
  if (gpu.type() != dtype::f32 || gpu.extents() != cpu.extents()) return 1e30;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double a = gpu.data<float>()[i], b = cpu.data<float>()[i];
    diff += (a - b) * (a - b);
    norm += b * b;
  }
  return norm ? std::sqrt(diff / norm) : std::sqrt(diff);
}

void expect_matches_interpreter(const graph& g, const runtime_feeds& feeds, const cu::nvrtc_options& o = {}) {
  const interpreter cpu(g);
  const auto want = cpu.run(feeds);
  const cu::graph_runner gpu(g, o);
  cu::graph_feeds dfeeds;
  for (const auto& [name, t] : feeds) dfeeds.emplace(name, t);
  const auto got = gpu.run_to_host(dfeeds);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) EXPECT_LT(relative_error(got[k], want[k]), 1e-5) << "output " << k;
  EXPECT_GE(gpu.last_stats().kernels_launched, 1u);
}

runtime_feeds vector_feeds(std::size_t n) {
  runtime_feeds f;
  std::uint32_t seed = 10;
  for (const char* name : {"a", "b", "c", "d"}) f.emplace(name, random_runtime(dtype::f32, {n}, seed++));
  return f;
}

TEST_F(NvrtcGpu, W1MatchesTheInterpreter) {
  expect_matches_interpreter(w1_graph(), vector_feeds(100003));
  expect_matches_interpreter(w1_graph(), vector_feeds(1));
}

TEST_F(NvrtcGpu, W2MatchesTheInterpreter) { expect_matches_interpreter(w2_graph(), vector_feeds(100003)); }

TEST_F(NvrtcGpu, BroadcastsAndUnfusedRunsMatchTheInterpreter) {
  graph_builder b;
  auto x = b.input("x", dtype::f32, {-1, 21});
  auto row = b.input("row", dtype::f32, {21});
  auto col = b.input("col", dtype::f32, {-1, 1});
  const graph g = b.build({tanh(x * row) - col, sigmoid(col * 2.0)});
  runtime_feeds f;
  f.emplace("x", random_runtime(dtype::f32, {333, 21}, 1));
  f.emplace("row", random_runtime(dtype::f32, {21}, 2));
  f.emplace("col", random_runtime(dtype::f32, {333, 1}, 3));
  expect_matches_interpreter(g, f);
  cu::nvrtc_options unfused;
  unfused.fuse = false;
  expect_matches_interpreter(g, f, unfused);
}

TEST_F(NvrtcGpu, MlpForwardMatchesTheInterpreter) {
  runtime_feeds f;
  f.emplace("x", random_runtime(dtype::f32, {64, 784}, 5));
  expect_matches_interpreter(mlp_graph(), f);
  // Both matmuls through cuBLAS; the log_softmax reductions in generated kernels, each fused with the
  // group computing its operand; nothing on the host.
  const cu::graph_runner r(mlp_graph());
  r.run(cu::graph_feeds{{"x", f.at("x")}});
  EXPECT_EQ(r.last_stats().device_nodes, 2u);
  EXPECT_EQ(r.last_stats().device_reductions, 2u);
  EXPECT_EQ(r.last_stats().fused_reductions, 2u);
  EXPECT_EQ(r.last_stats().host_nodes, 0u);
}

TEST_F(NvrtcGpu, GraphsLoadedFromFilesMatchTheInterpreter) {
  runtime_feeds f;
  f.emplace("x", random_runtime(dtype::f32, {32, 784}, 6));
  const graph g = mlp_graph();
  expect_matches_interpreter(load_graph_binary(save_graph_binary(g, {.embed_parameters = true})), f);
#if defined(SYMFLOW_TEST_HAVE_JSON)
  expect_matches_interpreter(load_graph_json(save_graph_json(g)), f);
#endif
}

TEST_F(NvrtcGpu, ReductionsMatchTheInterpreter) {
  for (std::size_t rows : {1u, 3u, 1023u}) {
    runtime_feeds f;
    f.emplace("x", random_runtime(dtype::f32, {rows, 37}, 7));
    runtime_tensor z(dtype::f64, {rows, 5, 7});
    const auto zf = random_runtime(dtype::f32, {rows, 5, 7}, 8);
    for (std::size_t i = 0; i < z.size(); ++i) z.data<double>()[i] = zf.data<float>()[i];
    f.emplace("z", z);
    const interpreter cpu(reductions_graph());
    const auto want = cpu.run(f);
    const cu::graph_runner gpu(reductions_graph());
    cu::graph_feeds d;
    for (const auto& [name, t] : f) d.emplace(name, t);
    const auto got = gpu.run_to_host(d);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].extents(), want[k].extents());
      double diff = 0, norm = 0;
      visit_dtype(got[k].type(), [&](auto t) {
        using T = decltype(t);
        for (std::size_t i = 0; i < got[k].size(); ++i) {
          const double a = double(got[k].data<T>()[i]), b = double(want[k].data<T>()[i]);
          diff += (a - b) * (a - b);
          norm += b * b;
        }
      });
      EXPECT_LT(std::sqrt(diff / norm), 1e-6) << "rows " << rows << ", output " << k;
    }
    // The leading-axis sum runs on the host, but for one row (extent-1 axes aside, it is trailing).
    EXPECT_EQ(gpu.last_stats().device_reductions, rows == 1 ? 5u : 4u);
    EXPECT_EQ(gpu.last_stats().fused_reductions, 3u);
    EXPECT_EQ(gpu.last_stats().host_nodes, rows == 1 ? 0u : 1u);
  }
}

TEST_F(NvrtcGpu, ViewsMatchTheInterpreter) {
  for (std::size_t n : {8u, 33u, 1023u}) {
    runtime_feeds f;
    f.emplace("x", random_runtime(dtype::f32, {n, 21}, 31));
    f.emplace("row", random_runtime(dtype::f32, {n}, 32));
    f.emplace("W", random_runtime(dtype::f32, {21, 8}, 33));
    expect_matches_interpreter(views_graph(), f);
    const cu::graph_runner r(views_graph());
    cu::graph_feeds d;
    for (const auto& [name, t] : f) d.emplace(name, t);
    r.run(d);
    EXPECT_EQ(r.last_stats().host_nodes, 0u);
    EXPECT_EQ(r.last_stats().views_copied, 3u);
    EXPECT_EQ(r.last_stats().views_aliased, 2u);  // slice(x, 0, 1, 4) returned; slice(x, 0, 0, 8) under a transpose
    EXPECT_EQ(r.last_stats().views_folded, 3u);   // s1, expand_dims, the reshape: never copied
  }
}

TEST_F(NvrtcGpu, ASecondRunWithTheSameExtentsDoesNoPlanning) {
  const cu::graph_runner r(w2_graph());
  const auto feeds = vector_feeds(4099);
  cu::graph_feeds d;
  for (const auto& [name, t] : feeds) d.emplace(name, t);
  const auto want = interpreter(w2_graph()).run(feeds);
  const auto first = r.run_to_host(d);
  EXPECT_TRUE(r.last_stats().planned);
  const auto stats = cu::kernel_cache::global().stats();
  const auto second = r.run_to_host(d);
  EXPECT_FALSE(r.last_stats().planned);
  EXPECT_EQ(r.plans_made(), 1u);
  // No source generated, nothing hashed or looked up in the kernel cache.
  EXPECT_EQ(cu::kernel_cache::global().stats().memory_hits, stats.memory_hits);
  EXPECT_EQ(cu::kernel_cache::global().stats().compiled, stats.compiled);
  EXPECT_LT(relative_error(first[0], want[0]), 1e-5);
  EXPECT_EQ(relative_error(second[0], first[0]), 0.0);
  r.run(cu::graph_feeds{{"a", feeds.at("a")}, {"b", feeds.at("b")}, {"c", feeds.at("c")}, {"d", feeds.at("d")}});
  EXPECT_EQ(r.plans_made(), 1u);
  const auto other = vector_feeds(17);
  cu::graph_feeds d17;
  for (const auto& [name, t] : other) d17.emplace(name, t);
  r.run(d17);
  EXPECT_EQ(r.plans_made(), 2u);
}

TEST_F(NvrtcGpu, DeviceFeedsAreReadInPlaceAndTheDiskCacheServesAFreshProcess) {
  const auto dir = std::filesystem::temp_directory_path() / ("symflow_nvrtc_gpu_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  cu::nvrtc_options o;
  o.cache_dir = dir.string();
  const auto feeds = vector_feeds(4099);
  cu::graph_feeds dfeeds;
  for (const auto& [name, t] : feeds) dfeeds.emplace(name, cu::device_array::from_host(t));
  const auto want = interpreter(w2_graph()).run(feeds);
  cu::kernel_cache::global().clear();
  const auto got = cu::graph_runner(w2_graph(), o).run(dfeeds);
  EXPECT_LT(relative_error(got[0].to_host(), want[0]), 1e-5);
  cu::kernel_cache::global().clear();  // as a new process would start
  const auto again = cu::graph_runner(w2_graph(), o).run(dfeeds);
  EXPECT_EQ(cu::kernel_cache::global().stats().disk_hits, 1u);
  EXPECT_LT(relative_error(again[0].to_host(), want[0]), 1e-5);
  std::filesystem::remove_all(dir);
}

}  // namespace
