// Saving and loading graph values: JSON and binary round trips are byte-exact (constants of every
// dtype with random and special values, embedded parameters, gradients), and both loaders refuse bad
// input — wrong magic or version, bad checksum, truncation, huge counts, unknown ops, dangling and
// cyclic references, shape overflow, malformed JSON — with a graph_error naming the problem.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/io/json_reader.hpp>  // detail::json_structure_guard
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

template <class T, class S>
tensor<T, S> random_values(const extents_t<S::rank>& e, unsigned seed) {
  tensor<T, S> t(e, uninitialized);
  std::mt19937_64 rng(seed);
  for (auto& v : t) {
    if constexpr (std::is_same_v<T, bool>) v = rng() & 1;
    else if constexpr (std::is_integral_v<T>) v = static_cast<T>(rng());
    else v = static_cast<T>(std::uniform_real_distribution<double>(-1e3, 1e3)(rng)) / T(7);
  }
  return t;
}

// A model with constants of every dtype (random elements, plus NaN, infinities, -0, denormals and
// extremes), literals, scopes, gradients, and one embedded parameter.
graph make_model(unsigned seed) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W = variable<"W", float, shape<4, 3>>();
  auto b = variable<"b", float, shape<3>>();
  auto special = tensor<float, shape<8>>{std::numeric_limits<float>::quiet_NaN(),
                                         std::numeric_limits<float>::infinity(),
                                         -std::numeric_limits<float>::infinity(),
                                         -0.0f,
                                         std::numeric_limits<float>::denorm_min(),
                                         std::numeric_limits<float>::max(),
                                         std::numeric_limits<float>::lowest(),
                                         0.1f};
  auto cf = constant(random_values<float, shape<dyn, 3>>({4, 3}, seed));
  auto cd = constant(random_values<double, shape<2, 3>>({2, 3}, seed + 1));
  auto ci = constant(random_values<std::int32_t, shape<3>>({3}, seed + 2));
  auto cl = constant(tensor<std::int64_t, shape<3>>{std::numeric_limits<std::int64_t>::min(), -1,
                                                    std::numeric_limits<std::int64_t>::max()});
  auto cb = constant(random_values<bool, shape<3>>({3}, seed + 3));
  auto cs = constant(special);
  auto h = scope("dense", [&] { return tanh(matmul(x, W + cf) + b); });
  auto y = where(cb, h * cast<float>(ci) + cast<float>(cl), h) + sum(cs) * 0.25f + sum(cast<float>(cd)) +
           std::numeric_limits<float>::quiet_NaN();
  auto loss = mean(square(y));
  auto [dW, db] = grad(loss, W, b);
  graph g = to_graph(loss, dW, db, y);
  params p;
  p.set("W", random_values<float, shape<4, 3>>({4, 3}, seed + 4));
  embed_parameters(g, p);
  return g;
}

// Runs f, expecting a graph_error whose message contains every fragment.
template <class F>
void expect_graph_error(F&& f, std::initializer_list<std::string_view> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << *fragments.begin() << "'";
  } catch (const graph_error& e) {
    const std::string what = e.what();
    for (auto frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << "message: " << what << "\nwanted: " << frag;
  }
}

// Recomputes the checksum after a deliberate change to the payload.
void reseal(std::vector<unsigned char>& bytes) {
  if (bytes.size() < graph_binary_header_size) throw std::logic_error("not a graph file");
  const std::uint32_t c = detail::crc32(bytes.data() + graph_binary_header_size, bytes.size() - graph_binary_header_size);
  for (int i = 0; i < 4; ++i) bytes[24 + i] = static_cast<unsigned char>(c >> (8 * i));
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

std::size_t node_index(const graph& g, std::string_view op) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op == op) return i;
  throw std::runtime_error("no such op");
}

}  // namespace

TEST(GraphSerialize, JsonRoundTripIsByteExact) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const graph g = make_model(seed);
    const std::string text = save_graph_json(g);
    const graph back = load_graph_json(text);
    EXPECT_EQ(save_graph_json(back), text);
    EXPECT_EQ(back, g);  // NaN here is the canonical quiet NaN, so even its bits survive
  }
  const std::string text = save_graph_json(make_model(9));
  EXPECT_NE(text.find("\"values\":[\"nan\",\"inf\",\"-inf\",-0.0,"), std::string::npos);
  EXPECT_NE(text.find("-9223372036854775808,-1,9223372036854775807"), std::string::npos);
  EXPECT_TRUE(text.starts_with("{\n  \"format\": \"symflow.graph\",\n  \"version\": 1,\n"));
}

TEST(GraphSerialize, BinaryRoundTripIsByteExact) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const graph g = make_model(seed);
    const auto bytes = save_graph_binary(g);
    const graph back = load_graph_binary(bytes);
    EXPECT_EQ(save_graph_binary(back), bytes);
    EXPECT_EQ(back, g);
    // JSON and binary convert into each other without loss.
    EXPECT_EQ(save_graph_json(load_graph_binary(save_graph_binary(load_graph_json(save_graph_json(g))))),
              save_graph_json(g));
  }
  const auto bytes = save_graph_binary(make_model(3));
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "SYMFLOWG");
}

TEST(GraphSerialize, ParameterValuesAreEmbeddedOnRequest) {
  const graph g = make_model(4);
  ASSERT_TRUE(g.parameters[0].value.has_value());
  ASSERT_FALSE(g.parameters[1].value.has_value());
  for (bool embed : {true, false}) {
    const graph b = load_graph_binary(save_graph_binary(g, {.embed_parameters = embed}));
    const graph j = load_graph_json(save_graph_json(g, {.embed_parameters = embed}));
    EXPECT_EQ(b.parameters[0].value.has_value(), embed);
    EXPECT_EQ(j.parameters[0].value.has_value(), embed);
    EXPECT_EQ(save_graph_binary(b, {.embed_parameters = embed}), save_graph_binary(g, {.embed_parameters = embed}));
  }
  const auto W = from_graph_tensor<float, shape<4, 3>>(load_graph_json(save_graph_json(g)).parameters[0].value.value());
  const auto expected = random_values<float, shape<4, 3>>({4, 3}, 8);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(W[i], expected[i]);
}

TEST(GraphSerialize, FilesRoundTrip) {
  const graph g = make_model(6);
  const std::string dir = ::testing::TempDir();
  save_graph_json_file(dir + "symflow_graph_test.json", g);
  save_graph_binary_file(dir + "symflow_graph_test.sfg", g);
  EXPECT_EQ(load_graph_json_file(dir + "symflow_graph_test.json"), g);
  EXPECT_EQ(load_graph_binary_file(dir + "symflow_graph_test.sfg"), g);
  EXPECT_THROW(load_graph_binary_file(dir + "no_such_file.sfg"), error);
}

TEST(GraphSerialize, BinaryRefusesWrongMagicVersionChecksumAndSizes) {
  const auto good = save_graph_binary(make_model(1));
  auto bytes = good;
  bytes[0] = 'X';
  expect_graph_error([&] { load_graph_binary(bytes); }, {"wrong magic"});
  expect_graph_error([&] { load_graph_binary(nullptr, 0); }, {"wrong magic"});
  bytes = good;
  bytes[8] = 2;
  expect_graph_error([&] { load_graph_binary(bytes); }, {"unsupported version 2"});
  bytes = good;
  bytes[12] = 0x80;
  expect_graph_error([&] { load_graph_binary(bytes); }, {"unknown flags"});
  bytes = good;
  bytes[good.size() / 2] ^= 0x10;
  expect_graph_error([&] { load_graph_binary(bytes); }, {"bad checksum"});
  bytes = good;
  bytes.push_back(0);
  expect_graph_error([&] { load_graph_binary(bytes); }, {"trailing bytes"});
  // Every truncation is refused, never read past the end.
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_THROW(load_graph_binary(good.data(), n), graph_error) << "prefix of " << n << " bytes";
  bytes.assign(good.begin(), good.begin() + good.size() - 3);
  expect_graph_error([&] { load_graph_binary(bytes); }, {"truncated"});
}

TEST(GraphSerialize, BinaryRefusesHugeCountsWithoutAllocating) {
  const auto good = save_graph_binary(make_model(1));
  auto bytes = good;
  // The payload starts with the input count.
  ASSERT_GT(bytes.size(), 64u);
  bytes.at(graph_binary_header_size) = bytes.at(graph_binary_header_size + 1) = 0xFF;
  bytes.at(graph_binary_header_size + 2) = bytes.at(graph_binary_header_size + 3) = 0xFF;
  reseal(bytes);
  expect_graph_error([&] { load_graph_binary(bytes); }, {"count of inputs is 4294967295", "at byte 28"});
  // A string length past the end.
  bytes = good;
  for (int i = 0; i < 4; ++i) bytes[graph_binary_header_size + 4 + i] = 0xFF;
  reseal(bytes);
  expect_graph_error([&] { load_graph_binary(bytes); }, {"truncated", "leaf name"});
  // A constant whose extents claim 2^56 elements.
  graph g = make_model(1);
  g.constants[0].data.extents = {std::int64_t(1) << 28, std::int64_t(1) << 28};
  expect_graph_error([&] { load_graph_binary(save_graph_binary(g)); }, {"bytes of data for 72057594037927936"});
  g.constants[0].data.extents = {std::int64_t(1) << 40, std::int64_t(1) << 40};
  expect_graph_error([&] { load_graph_binary(save_graph_binary(g)); }, {"constant data at byte ", "shape overflow"});
}

TEST(GraphSerialize, LoadersRefuseBadGraphs) {
  const graph good = make_model(2);
  const std::uint32_t first = good.first_node_id();
  auto both = [&](const graph& g, std::initializer_list<std::string_view> fragments) {
    expect_graph_error([&] { load_graph_binary(save_graph_binary(g)); }, fragments);
    expect_graph_error([&] { load_graph_json(save_graph_json(g)); }, fragments);
    expect_graph_error([&] { validate(g); }, fragments);
  };
  graph g = good;
  const std::size_t tanh = node_index(g, "tanh");
  g.nodes[tanh].op = "frobnicate";
  both(g, {"node " + std::to_string(first + tanh), "'dense/tanh'", "unknown op 'frobnicate'"});
  g = good;
  g.nodes[tanh].inputs[0] = 100000;
  both(g, {"input 0 refers to value 100000", "dangling"});
  g = good;
  g.nodes[tanh].inputs[0] = first + static_cast<std::uint32_t>(tanh);  // itself
  both(g, {"cycle"});
  g = good;
  g.nodes[tanh].inputs[0] = first + static_cast<std::uint32_t>(tanh) + 1;  // a later node
  both(g, {"not defined before it"});
  g = good;
  g.outputs.push_back(99999);
  both(g, {"output 4 refers to value 99999"});
  g = good;
  g.nodes[tanh].type.shape = {std::int64_t(1) << 40, std::int64_t(1) << 40};
  both(g, {"shape overflow"});
  g = good;
  g.nodes[tanh].type.shape = {-7, 3};
  both(g, {"-7"});
  g = good;
  const std::size_t add = node_index(g, "add");
  g.nodes[add].inputs.pop_back();
  both(g, {"1 inputs, op add takes 2"});
  g = good;
  const std::size_t sum = node_index(g, "sum");
  g.nodes[sum].attributes.erase(g.nodes[sum].attributes.begin());
  both(g, {"missing attribute 'axes'"});
  g = good;
  g.nodes[sum].attributes[1].value = std::int64_t(1);
  both(g, {"attribute 'keepdims' must be a boolean"});
  g = good;
  g.nodes[sum].attributes.push_back({"colour", std::string("red")});
  both(g, {"unknown attribute 'colour'"});
  g = good;
  g.parameters[1].name = "W";
  both(g, {"parameter 1 'W'", "used by another"});
  g = good;
  for (auto& c : g.constants)
    if (c.type.shape == std::vector<std::int64_t>{2, 3}) c.data.extents = {3, 2};  // no longer fits its type
  both(g, {"does not fit its type"});
  g = good;
  g.nodes[node_index(g, "literal")].type.shape = {2};
  both(g, {"a literal is a scalar"});
}

TEST(GraphSerialize, BinaryMutationsLoadOrFailCleanly) {
  const auto good = save_graph_binary(make_model(5));
  std::mt19937 rng(42);
  std::size_t refused = 0, loaded = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto bytes = good;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = graph_binary_header_size + rng() % (bytes.size() - graph_binary_header_size);
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<unsigned char>(rng()); break;
        case 1: bytes[at] ^= static_cast<unsigned char>(1u << (rng() % 8)); break;
        case 2: bytes[at] = (rng() & 1) ? 0xFF : 0x00; break;
      }
    }
    reseal(bytes);
    try {
      const graph g = load_graph_binary(bytes);
      // Whatever loads is a valid graph that converts to JSON and back exactly.
      const std::string text = save_graph_json(g);
      EXPECT_EQ(save_graph_json(load_graph_json(text)), text);
      // (JSON writes every NaN as "nan", so the bytes go JSON -> binary -> JSON, not the other way.)
      EXPECT_EQ(save_graph_json(load_graph_binary(save_graph_binary(load_graph_json(text)))), text);
      inspect(g);
      to_dot(g);
      ++loaded;
    } catch (const graph_error&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused + loaded, 3000u);
  EXPECT_GT(refused, 100u);
}

TEST(GraphSerialize, JsonRefusesMalformedAndHostileText) {
  const std::string good = save_graph_json(make_model(3));
  expect_graph_error([&] { load_graph_json(good.substr(0, good.size() / 2)); }, {"graph JSON: malformed JSON"});
  // Every proper prefix of the document is malformed; only the trailing newline may be dropped. (The
  // text holds source paths, so its length, and which prefixes the stride hits, depend on the checkout.)
  const std::size_t document_end = good.find_last_not_of(" \t\r\n") + 1;
  for (std::size_t n = 0; n < document_end; n += 97)
    EXPECT_THROW(load_graph_json(good.substr(0, n)), graph_error) << "prefix of " << n << " bytes";
  EXPECT_THROW(load_graph_json(good.substr(0, document_end - 1)), graph_error) << "all but the closing brace";
  expect_graph_error([&] { load_graph_json(""); }, {"malformed JSON"});
  expect_graph_error([&] { load_graph_json("[1, 2]"); }, {"expected an object"});
  // Refused at the first level deeper than any graph file needs, before the parser builds the rest.
  const std::string depth = std::to_string(detail::json_structure_guard::max_depth);
  expect_graph_error([&] { load_graph_json(std::string(200000, '[')); }, {"graph JSON: /0/0/0/", "nesting deeper than " + depth});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"symflow.graph\"", "\"onnx\"")); },
                     {"/format", "\"onnx\" is not \"symflow.graph\""});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"version\": 1", "\"version\": 7")); },
                     {"/version", "unsupported version 7"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"outputs\"", "\"extra\": 1, \"outputs\"")); },
                     {"unknown key \"extra\""});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"op\":\"tanh\"", "\"op\":\"frobnicate\"")); },
                     {"unknown op 'frobnicate'"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "{\"id\":1,", "{\"id\":5,")); },
                     {"/parameters/0/id", "id 5 where 1 is expected"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"dtype\":\"f32\"", "\"dtype\":\"f8\"")); },
                     {"/inputs/0/dtype", "unknown dtype \"f8\""});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"shape\":[-1,4]", "\"shape\":[-2,4]")); },
                     {"/inputs/0/shape/0", "out of range"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"shape\":[-1,4]", "\"shape\":[4611686018427387904,4611686018427387904]")); },
                     {"input 0 'x'", "shape overflow"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"values\":[\"nan\"", "\"values\":[null")); },
                     {"/constants/", "expected a number"});
  // A huge shape with a few values: refused before anything the size of the shape is allocated.
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"data\":{\"shape\":[4,3]", "\"data\":{\"shape\":[100000000,100000000]")); },
                     {"/data/values", "12 values for shape [100000000,100000000]"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"data\":{\"shape\":[4,3]", "\"data\":{\"shape\":[4000000000000,4000000000000]")); },
                     {"/constants/", "/data", "shape overflow"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"line\":0}", "\"line\":-1}")); }, {"/line", "out of range"});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"inputs\":[0,", "\"inputs\":[\"x\",")); },
                     {"/nodes/", "expected an integer"});
}

// Found while writing the JSON fuzz target: nlohmann-json keeps one of two equal keys without a word,
// and inserting into its ordered objects is linear, so one object with many keys took quadratic time
// (60 000 keys in 650 KB: 39 s in the sanitized fuzz build, before the loader refused such objects).
TEST(GraphSerialize, JsonRefusesDuplicateKeysAndHugeObjects) {
  const std::string good = save_graph_json(make_model(4));
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"scope\":\"\",", "\"scope\":\"\",\"scope\":\"x\",")); },
                     {"graph JSON: /inputs/0/scope: duplicate key \"scope\""});
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"keepdims\":false", "\"keepdims\":false,\"keepdims\":true")); },
                     {"/attrs/keepdims: duplicate key"});
  std::string many = "{";
  for (int i = 0; i < 100000; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  many += "}";
  expect_graph_error([&] { load_graph_json(many); }, {"graph JSON: /: an object with more than 64 keys"});
  // As deep as the deepest nesting of sub-graphs allows (ir/validate.hpp, graph_max_nesting), and no deeper.
  const std::size_t max_depth = detail::json_structure_guard::max_depth;
  std::string pointer = "/outputs";
  for (std::size_t i = 1; i < max_depth; ++i) pointer += "/0";
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"outputs\": [", "\"outputs\": [" + std::string(max_depth + 4, '['))); },
                     {"graph JSON: " + pointer + ": nesting deeper than " + std::to_string(max_depth) + " levels"});
  // Keys in a pointer are escaped as RFC 6901 says ("/" is "~1", "~" is "~0").
  expect_graph_error([&] { load_graph_json(replace_once(good, "\"attrs\":{}", "\"attrs\":{\"a/b~\":null}")); },
                     {"/attrs/a~1b~0: an attribute is"});
}

TEST(GraphSerialize, JsonAcceptsHandWrittenLiterals) {
  // A float literal may be written as an integer or as "inf"; it is stored as a number either way.
  const std::string text = R"({"format": "symflow.graph", "version": 1,
    "inputs": [{"id":0,"name":"x","scope":"","dtype":"f32","shape":[2],"file":"","line":0}],
    "parameters": [], "constants": [],
    "nodes": [
      {"id":1,"op":"literal","name":"two","inputs":[],"attrs":{"value":2,"static":false},"dtype":"f32","shape":[],"file":"","line":0},
      {"id":2,"op":"literal","name":"big","inputs":[],"attrs":{"value":"inf","static":false},"dtype":"f32","shape":[],"file":"","line":0},
      {"id":3,"op":"mul","name":"mul","inputs":[0,1],"attrs":{},"dtype":"f32","shape":[2],"file":"m.cpp","line":3},
      {"id":4,"op":"minimum","name":"minimum","inputs":[3,2],"attrs":{},"dtype":"f32","shape":[2],"file":"m.cpp","line":4}
    ],
    "outputs": [4]})";
  const graph g = load_graph_json(text);
  EXPECT_EQ(*g.nodes[0].attribute("value"), attribute_value(2.0));
  EXPECT_EQ(*g.nodes[1].attribute("value"), attribute_value(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(g.nodes[3].where, (graph_location{"m.cpp", 4}));
  const std::string saved = save_graph_json(g);
  EXPECT_NE(saved.find("\"attrs\":{\"value\":2.0,\"static\":false}"), std::string::npos);
  EXPECT_NE(saved.find("\"attrs\":{\"value\":\"inf\",\"static\":false}"), std::string::npos);
  EXPECT_EQ(save_graph_json(load_graph_json(saved)), saved);
}

TEST(GraphSerialize, JsonMutationsLoadOrFailCleanly) {
  const std::string good = save_graph_json(make_model(7));
  const std::string alphabet = "{}[]\",:-0123456789.eE truefalsnul\\/x";
  std::mt19937 rng(7);
  std::size_t refused = 0, loaded = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::string text = good;
    const int edits = 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        case 2: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    try {
      const graph g = load_graph_json(text);
      EXPECT_EQ(load_graph_binary(save_graph_binary(g)), g);
      ++loaded;
    } catch (const graph_error&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused + loaded, 1500u);
  EXPECT_GT(refused, 100u);
}

TEST(GraphSerialize, StringsMustBeUtf8) {
  graph g = make_model(8);
  g.inputs[0].scope = "caf\xc3\xa9";  // fine
  EXPECT_EQ(load_graph_binary(save_graph_binary(g)), g);
  EXPECT_EQ(load_graph_json(save_graph_json(g)), g);
  for (const char* bad : {"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    g.inputs[0].scope = bad;
    expect_graph_error([&] { load_graph_binary(save_graph_binary(g)); }, {"leaf scope is not valid UTF-8"});
    expect_graph_error([&] { save_graph_json(g); }, {"cannot write the graph"});
  }
}

TEST(GraphSerialize, VersionOneFixturesStillLoad) {
  // Written by hand (JSON) and by this version's writer (binary; its CRC-32 was checked with zlib).
  const auto json_bytes = read_file_bytes(std::string(SYMFLOW_TEST_DATA_DIR) + "/graph/dense_v1.json");
  const std::string text(json_bytes.begin(), json_bytes.end());
  const graph g = load_graph_json(text);
  EXPECT_EQ(save_graph_json(g), text);
  const auto bin = read_file_bytes(std::string(SYMFLOW_TEST_DATA_DIR) + "/graph/dense_v1.sfg");
  EXPECT_EQ(load_graph_binary(bin), g);
  EXPECT_EQ(save_graph_binary(g), bin);
  ASSERT_EQ(bin.size(), 992u);
  EXPECT_EQ(bin[24] | (bin[25] << 8) | (bin[26] << 16) | (std::uint32_t(bin[27]) << 24), 0x55C6A82Fu);
  EXPECT_EQ(detail::crc32(reinterpret_cast<const unsigned char*>("123456789"), 9), 0xCBF43926u);  // CRC-32 check value

  ASSERT_EQ(g.value_count(), 13u);
  EXPECT_EQ(g.parameters[0].scope, "dense");
  EXPECT_EQ((from_graph_tensor<float, shape<3, 2>>(*g.parameters[0].value)(2, 1)), 3.0f);
  EXPECT_EQ((from_graph_tensor<std::int32_t, shape<2>>(g.constants[0].data)(1)), -2);
  EXPECT_EQ(g.nodes[2].op, "cast");
  EXPECT_EQ(*g.nodes[2].attribute("to"), attribute_value(std::string("f32")));
  EXPECT_EQ(g.nodes[8].inputs, (std::vector<std::uint32_t>{8}));
  EXPECT_EQ(g.outputs, (std::vector<std::uint32_t>{11, 12}));
  EXPECT_EQ(g.nodes[1].where, (graph_location{"model.cpp", 7}));
}

// Issue 14, item 7: `symflow inspect /dev/zero` read forever, and a directory gave an
// std::ios_base::failure. Files are stat'ed first, and read only up to their format's limit.
TEST(GraphSerialize, FileLoadersRefuseNonRegularFilesAndNameTheFile) {
  const std::string dir = ::testing::TempDir() + "symflow_graph_files_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto expect_file_error = [](auto&& f, std::initializer_list<std::string_view> fragments) {
    try {
      f();
      ADD_FAILURE() << "expected a file_error";
    } catch (const file_error& e) {
      for (auto fragment : fragments)
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "'" << fragment << "' not in: " << e.what();
    }
  };
  expect_file_error([&] { load_graph_json_file(dir); }, {"graph file '" + dir + "'", "is a directory, not a regular file"});
  expect_file_error([&] { load_graph_binary_file("/dev/zero"); }, {"'/dev/zero'", "is a character device, not a regular file"});
  expect_file_error([&] { load_graph_json_file(dir + "/missing.json"); }, {"cannot open '" + dir + "/missing.json' (graph file): No such file"});
  const std::string small = dir + "/small.json";
  save_graph_json_file(small, make_model(5));
  expect_file_error([&] { read_file_bytes(small, 10, "graph file"); }, {"small.json", "exceeds the limit of 10 bytes"});
  EXPECT_EQ(read_file_bytes(small).size(), std::filesystem::file_size(small));
  // A malformed file's error names it.
  const std::string broken = dir + "/broken.json";
  { std::ofstream(broken) << "{\"format\": 1}"; }
  expect_graph_error([&] { load_graph_json_file(broken); }, {"graph file '" + broken + "': graph JSON: /"});
  std::filesystem::remove_all(dir);
}

// Messages quote at most a short excerpt of what the file holds, whatever its size.
TEST(GraphSerialize, ErrorMessagesStayShortForHugeKeysAndValues) {
  const std::string good = save_graph_json(make_model(6));
  const std::string key(60000, 'k');
  for (const std::string& bad : {replace_once(good, "\"outputs\"", "\"" + key + "\": 1, \"outputs\""),
                                 replace_once(good, "\"op\":\"tanh\"", "\"op\":\"" + key + "\""),
                                 replace_once(good, "\"dtype\":\"f32\"", "\"dtype\":\"" + key + "\""),
                                 "{\"format\": \"" + key + "\"}"}) {
    try {
      load_graph_json(bad);
      ADD_FAILURE() << "expected a graph_error";
    } catch (const graph_error& e) {
      EXPECT_LT(std::string(e.what()).size(), 700u) << std::string(e.what()).substr(0, 700);
      EXPECT_NE(std::string(e.what()).find("(60000 bytes)"), std::string::npos) << std::string(e.what()).substr(0, 700);
    }
  }  // nlohmann-json quotes the last token it read, which can be a whole 60 KB string.
  for (const std::string& bad : {"{\"format\": \"" + key, "{\"format\": \"" + key + "\\u12", "[" + key}) {
    try {
      load_graph_json(bad);
      ADD_FAILURE() << "expected a graph_error";
    } catch (const graph_error& e) {
      EXPECT_LT(std::string(e.what()).size(), 700u) << std::string(e.what()).substr(0, 700);
    }
  }
}
