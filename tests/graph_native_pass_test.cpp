// The interpreter's generated passes (runtime/pass_codegen.hpp, pass_compiler.hpp): a fused group
// compiled by the system's C++ compiler gives the interpreter's own results bit for bit (which
// graph_interpreter_test holds equal to compiled evaluation) and a float64 reference within float
// rounding, on random inputs; broadcasting, literals, several stored outputs, streamed outputs, f64
// groups with ops that have no packet function, check_numerics localisation; the caches; and the
// fallback when no compiler can be run.
//
// Compiled with -ffp-contract=off like graph_interpreter_test (tests/CMakeLists.txt): the generated
// passes are compiled with it too (pass_compiler.hpp).
// First, through a path with "..", as symflow's own headers reach it from some translation units
// (pass_compiler.hpp finds the include folder from the path of its first inclusion).
#include <symflow/symbolic/../runtime/pass_compiler.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <symflow/ir/to_graph.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/ops/all.hpp>

namespace {

using namespace symflow;

const auto a = placeholder<"a", float, shape<dyn>>();
const auto b = placeholder<"b", float, shape<dyn>>();
const auto c = placeholder<"c", float, shape<dyn>>();
const auto d = placeholder<"d", float, shape<dyn>>();

// One cache directory per test process, so every run of this test compiles what it checks.
std::filesystem::path test_cache_dir() {
  static const std::filesystem::path dir = [] {
    auto p = std::filesystem::temp_directory_path() / ("symflow-native-pass-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(p);
    // Private whatever the umask: the pass library loads code only from directories no one else can write.
    std::filesystem::create_directories(p);
    std::filesystem::permissions(p, std::filesystem::perms::owner_all);
    return p;
  }();
  return dir;
}

interpreter_options options(bool native, std::size_t tile = 0) {
  interpreter_options o;
  o.native_passes = native;
  o.tile_elements = tile;
  o.compiler.cache_dir = test_cache_dir();
  o.allow_unused_feeds = true;  // the tests feed one set of inputs (a, b, c, d) to graphs reading some of them
  return o;
}

template <class T>
runtime_tensor random_values(std::mt19937& rng, runtime_extents extents, double lo, double hi) {
  runtime_tensor t(dtype_v<T>, extents);
  std::uniform_real_distribution<double> dist(lo, hi);
  T* p = t.template data<T>();
  for (std::size_t i = 0; i < element_count(extents); ++i) p[i] = T(dist(rng));
  return t;
}

// Runs `g` with and without generated passes: the outputs must be equal bit for bit, and the
// generated run must have used `expected_native` generated passes.
std::vector<runtime_tensor> expect_same_bits(const graph& g, const runtime_feeds& feeds, std::size_t expected_native,
                                             std::size_t tile = 0) {
  interpreter plain(g, options(false, tile)), native(g, options(true, tile));
  const auto want = plain.run(feeds);
  const auto got = native.run(feeds);
  EXPECT_EQ(native.last_stats().native_passes, expected_native) << pass_library::global().last_error();
  EXPECT_EQ(plain.last_stats().native_passes, 0u);
  EXPECT_EQ(native.last_stats().fused_groups, plain.last_stats().fused_groups);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size() && k < want.size(); ++k) {
    EXPECT_EQ(got[k].type(), want[k].type());
    EXPECT_EQ(got[k].extents(), want[k].extents());
    EXPECT_EQ(got[k].byte_size(), want[k].byte_size());
    EXPECT_EQ(std::memcmp(got[k].bytes(), want[k].bytes(), want[k].byte_size()), 0) << "output " << k;
  }
  return got;
}

struct w_inputs {
  runtime_feeds feeds;
  std::vector<const float*> x;
  explicit w_inputs(std::size_t n, unsigned seed = 7) {
    std::mt19937 rng(seed);
    for (const char* name : {"a", "b", "c", "d"}) feeds.insert_or_assign(name, random_values<float>(rng, {n}, -2, 2));
    for (const char* name : {"a", "b", "c", "d"}) x.push_back(feeds.at(name).data<float>());
  }
};

// The generated sources include <symflow/runtime/pass_support.hpp> from the folder found here:
// this file includes pass_compiler.hpp first through ".../symflow/symbolic/../runtime/...", whose
// parents, unresolved, were include/symflow/symbolic (the passes then failed to compile).
TEST(NativePass, IncludeFolderIsFoundWhateverPathReachedTheHeader) {
  if (const char* env = std::getenv("SYMFLOW_INCLUDE_DIR"); env && *env) GTEST_SKIP() << "SYMFLOW_INCLUDE_DIR is set";
  const auto dir = pass_detail::default_include_dir();
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "symflow" / "runtime" / "pass_support.hpp")) << dir;
}

TEST(NativePass, W1AndW2MatchTheInterpreterBitwiseAndAFloat64Reference) {
  const std::size_t n = (std::size_t(1) << 16) + 17;  // several threads' chunks and a scalar tail
  w_inputs in(n);
  const auto w1 = expect_same_bits(to_graph(a * b + c * sin(d)), in.feeds, 1)[0];
  const auto w2 = expect_same_bits(to_graph(tanh(a * b + c) * exp(-d * d) + 0.5f * a), in.feeds, 1)[0];
  double worst1 = 0, worst2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double A = in.x[0][i], B = in.x[1][i], C = in.x[2][i], D = in.x[3][i];
    const double r1 = A * B + C * std::sin(D), r2 = std::tanh(A * B + C) * std::exp(-D * D) + 0.5 * A;
    worst1 = std::max(worst1, std::abs(w1.data<float>()[i] - r1) / std::max(1.0, std::abs(r1)));
    worst2 = std::max(worst2, std::abs(w2.data<float>()[i] - r2) / std::max(1.0, std::abs(r2)));
  }
  EXPECT_LT(worst1, 1e-5);
  EXPECT_LT(worst2, 1e-5);
}

TEST(NativePass, EveryTileSizeAndThreadShareGivesTheSameBits) {
  w_inputs in(4099);
  const graph g = to_graph(tanh(a * b + c) * exp(-d * d) + 0.5f * a);
  for (std::size_t tile : {1, 16, 100, 256, 2048}) expect_same_bits(g, in.feeds, 1, tile);
}

TEST(NativePass, BroadcastRowsLiteralsAndSeveralStoredOutputs) {
  const auto x = placeholder<"x", float, shape<dyn, 37>>();
  const auto w = placeholder<"w", float, shape<37>>();
  const auto s = x * w + 1.5f;  // an output that later members read
  std::mt19937 rng(3);
  runtime_feeds feeds{{"x", random_values<float>(rng, {129, 37}, -3, 3)}, {"w", random_values<float>(rng, {37}, -2, 2)}};
  expect_same_bits(to_graph(s, sqrt(abs(s)) - s * w, maximum(s, 0.0f)), feeds, 1);
}

TEST(NativePass, DoubleGroupsUseScalarFunctionsWhereOpsHaveNoPacket) {
  // Eigen 3.4 vectorises tanh for float only: in f64, tanh runs lane by lane inside the pass.
  const auto p = placeholder<"p", double, shape<dyn>>();
  const auto q = placeholder<"q", double, shape<dyn>>();
  std::mt19937 rng(11);
  runtime_feeds feeds{{"p", random_values<double>(rng, {1001}, -3, 3)}, {"q", random_values<double>(rng, {1001}, -3, 3)}};
  const auto out = expect_same_bits(to_graph(tanh(p * q) + exp(-q * q) * sigmoid(p)), feeds, 1)[0];
  const double* P = feeds.at("p").data<double>();
  const double* Q = feeds.at("q").data<double>();
  for (std::size_t i = 0; i < 1001; ++i) {
    const double want = std::tanh(P[i] * Q[i]) + std::exp(-Q[i] * Q[i]) / (1 + std::exp(-P[i]));
    EXPECT_NEAR(out.data<double>()[i], want, 1e-14 * std::max(1.0, std::abs(want)));
  }
}

TEST(NativePass, StreamedOutputsStayBitwiseEqual) {
  const std::size_t n = (std::size_t(1) << 22) + 17;  // 16 MiB + 68 bytes: streaming stores
  w_inputs in(n, 22);
  const auto s = a * b + c;
  expect_same_bits(to_graph(s, tanh(s) * exp(-d * d) + 0.5f * a), in.feeds, 1);
}

TEST(NativePass, MixedDtypeAndSingleOpGroupsRunAsBefore) {
  std::mt19937 rng(5);
  const std::size_t n = 513;
  runtime_feeds feeds;
  for (const char* name : {"a", "b"}) feeds.insert_or_assign(name, random_values<float>(rng, {n}, -2, 2));
  expect_same_bits(to_graph(where(a > b, a * b, a - b)), feeds, 0);  // a bool mask in the group
  expect_same_bits(to_graph(exp(a)), feeds, 0);                       // one op: its own loop already
}

TEST(NativePass, CheckNumericsNamesTheNodeThatMadeTheNaN) {
  std::mt19937 rng(9);
  runtime_feeds feeds{{"a", random_values<float>(rng, {1000}, 0.5, 2)}, {"b", random_values<float>(rng, {1000}, 0.5, 2)}};
  feeds.at("b").data<float>()[617] = -1.0f;  // log of a negative number
  const graph g = to_graph(exp(a) * log(b) + a);
  interpreter_options o = options(true);
  o.check_numerics = true;
  interpreter run(g, o);
  try {
    run.run(feeds);
    FAIL() << "no numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_NE(std::string(e.what()).find("log"), std::string::npos) << e.what();
  }
  EXPECT_EQ(run.last_stats().native_passes, 0u);  // the run threw before recording its stats
}

TEST(NativePass, PassesAreCachedInMemoryAndOnDisk) {
  const auto dir = test_cache_dir() / "disk";
  pass_compiler_options o;
  o.cache_dir = dir;
  const std::vector<pass_member> members{{"mul", "symflow::ops::mul_op", true, {{false, 0}, {false, 1}}},
                                         {"sin", "symflow::ops::sin_op", true, {{true, 0}}}};
  const std::string source = generate_pass_source(dtype::f32, 2, members, {1});
  pass_library first;
  const pass_function f = first.get(source, o);
  ASSERT_NE(f, nullptr) << first.last_error();
  EXPECT_EQ(first.get(source, o), f);
  EXPECT_EQ(first.stats().compiled, 1u);
  EXPECT_EQ(first.stats().memory_hits, 1u);
  pass_library second;  // another process, in effect: the object comes from the disk
  const pass_function g = second.get(source, o);
  ASSERT_NE(g, nullptr) << second.last_error();
  EXPECT_EQ(second.stats().disk_hits, 1u);
  EXPECT_EQ(second.stats().compiled, 0u);
  // It computes sin(x * y), the scalar tail included.
  std::vector<float> x(21), y(21), out(21);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i), y[i] = 1.0f - 0.05f * float(i);
  const void* in[] = {x.data(), y.data()};
  void* outs[] = {out.data()};
  g(in, outs, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(out[i], std::sin(double(x[i]) * y[i]), 1e-6);
  // Another source is another object.
  EXPECT_NE(first.get(generate_pass_source(dtype::f32, 2, members, {0, 1}), o), nullptr);
  EXPECT_EQ(first.stats().compiled, 2u);
}

// Node names are data: a name holding a newline and a preprocessor line must neither reach the
// generated source nor stop the pass from being built (it used to be pasted into a comment).
TEST(NativePass, NodeNamesNeverReachTheGeneratedSource) {
  graph_builder gb;
  auto x = gb.input("x", dtype::f32, {-1});
  auto y = gb.input("y", dtype::f32, {-1});
  auto product = gb.apply("mul", {x, y}, {}, "p\n#error injected through a node name\n");
  auto out = gb.apply("exp", {product}, {}, "q */ int injected_too = 1; /*");
  graph g = gb.build({out});
  interpreter_options o = options(true);
  o.compiler.cache_dir = test_cache_dir() / "names";
  interpreter run(g, o);
  w_inputs in(37);
  runtime_feeds feeds{{"x", in.feeds.at("a")}, {"y", in.feeds.at("b")}};
  const auto got = run.run(feeds);
  EXPECT_EQ(run.last_stats().native_passes, 1u) << pass_library::global().last_error();
  std::size_t sources = 0;
  for (const auto& e : std::filesystem::directory_iterator(o.compiler.cache_dir)) {
    if (e.path().extension() != ".cpp") continue;
    ++sources;
    const std::string text = read_file_or_empty(e.path());
    EXPECT_EQ(text.find("injected"), std::string::npos) << text;
  }
  EXPECT_EQ(sources, 1u);
  const auto want = interpreter(g, options(false)).run(feeds);
  EXPECT_EQ(std::memcmp(got[0].bytes(), want[0].bytes(), want[0].byte_size()), 0);
}

TEST(NativePass, GeneratorRefusesOpWordsThatAreNotIdentifiers) {
  const std::vector<pass_member> bad_op{{"neg\n#include </etc/passwd>", "symflow::ops::neg_op", true, {{false, 0}}}};
  EXPECT_THROW(generate_pass_source(dtype::f32, 1, bad_op, {0}), error);
  const std::vector<pass_member> bad_type{{"neg", "symflow::ops::neg_op; system(\"x\")", true, {{false, 0}}}};
  EXPECT_THROW(generate_pass_source(dtype::f32, 1, bad_type, {0}), error);
}

const std::vector<pass_member>& mul_sin_members() {
  static const std::vector<pass_member> m{{"mul", "symflow::ops::mul_op", true, {{false, 0}, {false, 1}}},
                                          {"sin", "symflow::ops::sin_op", true, {{true, 0}}}};
  return m;
}

// A cache directory another user can write to would let that user choose the code this process
// loads: such a directory is refused before anything in it is read.
TEST(NativePass, ACacheDirectoryOthersCanWriteIsRefused) {
  const std::string source = generate_pass_source(dtype::f32, 2, mul_sin_members(), {1});
  const auto shared = test_cache_dir() / "shared";
  std::filesystem::create_directories(shared);
  std::filesystem::permissions(shared, std::filesystem::perms::all);  // 0777, as /tmp-style directories are
  pass_compiler_options o;
  o.cache_dir = shared;
  pass_library library;
  EXPECT_EQ(library.get(source, o), nullptr);
  EXPECT_NE(library.last_error().find("writable by other users"), std::string::npos) << library.last_error();
  EXPECT_EQ(library.stats().compiled, 0u);

  // A symbolic link to a private directory is refused too: whoever owns the link's parent could
  // point it elsewhere later.
  const auto target = test_cache_dir() / "private-target";
  const auto link = test_cache_dir() / "link";
  std::filesystem::create_directories(target);
  std::filesystem::create_directory_symlink(target, link);
  o.cache_dir = link;
  pass_library second;
  EXPECT_EQ(second.get(source, o), nullptr);
  EXPECT_NE(second.last_error().find("not a directory"), std::string::npos) << second.last_error();

  // A directory this library creates is made private (0700).
  o.cache_dir = test_cache_dir() / "made" / "here";
  pass_library third;
  ASSERT_NE(third.get(source, o), nullptr) << third.last_error();
  const auto perms = std::filesystem::status(o.cache_dir).permissions();
  EXPECT_EQ(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all), std::filesystem::perms::none);

  if (::geteuid() == 0) {  // root can give a directory to another user: one owned by someone else is refused
    const auto foreign = test_cache_dir() / "foreign";
    std::filesystem::create_directories(foreign);
    ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
    o.cache_dir = foreign;
    pass_library fourth;
    EXPECT_EQ(fourth.get(source, o), nullptr);
    EXPECT_NE(fourth.last_error().find("not by this user"), std::string::npos) << fourth.last_error();
  }
}

// A cached object whose bytes are not the ones recorded when it was built (here: another pass's
// object put in its place, beside the right digest) is rebuilt, not loaded. A fresh directory, so
// that no object under that path is already loaded in this process.
TEST(NativePass, ACachedObjectWithOtherBytesIsRebuiltNotLoaded) {
  const auto built = test_cache_dir() / "tamper-source";
  const auto planted = test_cache_dir() / "tamper-planted";
  pass_compiler_options o;
  o.cache_dir = built;
  const std::string wanted = generate_pass_source(dtype::f32, 2, mul_sin_members(), {1});
  const std::vector<pass_member> other_members{{"add", "symflow::ops::add_op", true, {{false, 0}, {false, 1}}}};
  const std::string other = generate_pass_source(dtype::f32, 2, other_members, {0});
  pass_library first;
  ASSERT_NE(first.get(wanted, o), nullptr) << first.last_error();
  const std::set<std::filesystem::path> before = [&] {
    std::set<std::filesystem::path> s;
    for (const auto& e : std::filesystem::directory_iterator(built))
      if (e.path().extension() == ".so") s.insert(e.path());
    return s;
  }();
  ASSERT_EQ(before.size(), 1u);
  const std::filesystem::path wanted_object = *before.begin();
  ASSERT_NE(first.get(other, o), nullptr) << first.last_error();
  std::filesystem::path other_object;
  for (const auto& e : std::filesystem::directory_iterator(built))
    if (e.path().extension() == ".so" && !before.count(e.path())) other_object = e.path();
  ASSERT_FALSE(other_object.empty());

  // The planted directory: the wanted pass's name and recorded digest, the other pass's bytes.
  std::filesystem::create_directories(planted);
  std::filesystem::permissions(planted, std::filesystem::perms::owner_all);
  const auto target = planted / wanted_object.filename();
  std::filesystem::copy_file(other_object, target);
  std::filesystem::copy_file(wanted_object.string() + ".sha256", target.string() + ".sha256");

  o.cache_dir = planted;
  pass_library second;
  const pass_function f = second.get(wanted, o);
  ASSERT_NE(f, nullptr) << second.last_error();
  EXPECT_EQ(second.stats().disk_hits, 0u);
  EXPECT_EQ(second.stats().compiled, 1u);
  std::vector<float> x{0.5f, 1.f, 2.f}, y{2.f, 3.f, 0.25f}, out(3);
  const void* in[] = {x.data(), y.data()};
  void* outs[] = {out.data()};
  f(in, outs, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(out[i], std::sin(double(x[i]) * y[i]), 1e-6);
}

TEST(NativePass, WithoutACompilerTheInterpreterRunsTheGroupItself) {
  pass_library library;
  pass_compiler_options o;
  o.cache_dir = test_cache_dir() / "nocompiler";
  o.compiler = "/nonexistent/c++";
  const std::vector<pass_member> members{{"neg", "symflow::ops::neg_op", true, {{false, 0}}},
                                         {"exp", "symflow::ops::exp_op", true, {{true, 0}}}};
  EXPECT_EQ(library.get(generate_pass_source(dtype::f32, 1, members, {1}), o), nullptr);
  EXPECT_EQ(library.stats().failures, 1u);
  EXPECT_NE(library.last_error().find("compiling a generated pass failed"), std::string::npos) << library.last_error();

  w_inputs in(300);
  interpreter_options broken = options(true);
  broken.compiler.compiler = "/nonexistent/c++";
  interpreter run(to_graph(exp(-a) * b), broken);
  const auto got = run.run(in.feeds);
  EXPECT_EQ(run.last_stats().native_passes, 0u);
  const auto want = interpreter(to_graph(exp(-a) * b), options(false)).run(in.feeds);
  EXPECT_EQ(std::memcmp(got[0].bytes(), want[0].bytes(), want[0].byte_size()), 0);
}

}  // namespace

namespace {

// Every registered elementwise op whose result has its operands' floating dtype, in one generated
// pass per dtype: each op file compiles into a pass and computes what the interpreter's kernel does.
TEST(NativePass, EveryElementwiseOpMatchesTheInterpreterBitwise) {
  for (dtype d : {dtype::f32, dtype::f64}) {
    graph_builder b;
    auto x = b.input("x", d, {-1});
    auto y = b.input("y", d, {-1});
    auto base = b.apply("mul", {x, y});  // a member every op reads, so that all join one group
    std::vector<graph_handle> outs{base};
    for (const auto& s : op_schemas()) {
      if (s.kind != node_kind::elementwise || s.name == "mul") continue;
      const std::vector<graph_attribute> attrs =
          s.name == "cast" ? std::vector<graph_attribute>{{"to", std::string(dtype_name(d))}} : std::vector<graph_attribute>{};
      const std::vector<dtype> types(s.min_inputs, d);
      graph_node probe{std::string(s.name), "probe", attrs, {}, {}, {}};
      const auto kernel = find_runtime_op(s.name)->elementwise(node_attributes(probe), types);
      if (!kernel || kernel->result != d) continue;
      outs.push_back(b.apply(s.name, std::vector<graph_handle>(s.min_inputs, base), attrs));
    }
    EXPECT_GT(outs.size(), 20u) << dtype_name(d);
    std::mt19937 rng(31);
    runtime_feeds feeds;
    visit_dtype(d, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        feeds.insert_or_assign("x", random_values<T>(rng, {1013}, 0.2, 1.6));
        feeds.insert_or_assign("y", random_values<T>(rng, {1013}, 0.2, 1.6));
      }
    });
    expect_same_bits(b.build(outs), feeds, 1);
  }
}

}  // namespace
