// safetensors checkpoints: bit-exact round trips, an independent reader and writer (Python with
// numpy, tests/safetensors_reference.py), every malformed-file error, and atomic saving.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <symflow/train/checkpoint.hpp>
#include <symflow/io/safetensors_header.hpp>

namespace {

using namespace symflow;
namespace fs = std::filesystem;
using bytes = std::vector<unsigned char>;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("symflow_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

bytes read_plain(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_plain(const std::string& path, const bytes& content) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
}

template <std::size_t R>
extents_t<R> random_extents(std::mt19937_64& rng) {
  extents_t<R> e{};
  for (auto& x : e) x = rng() % 5;  // zero extents included
  return e;
}

// Random tensors of every dtype and ranks 0 to 3. Floats are raw random bit patterns, so NaNs with
// payloads, infinities, subnormals and -0 all occur and must survive bit for bit.
params random_store(std::uint64_t seed, const std::string& prefix = "") {
  std::mt19937_64 rng(seed);
  params p;
  auto fill = [&](auto t, const std::string& name) {
    using T = typename decltype(t)::value_type;
    for (auto& x : t) {
      if constexpr (std::is_same_v<T, bool>) x = rng() & 1;
      else {
        const std::uint64_t word = rng();
        std::memcpy(&x, &word, sizeof(T));
      }
    }
    p.set(prefix + name, t);
  };
  fill(tensor<float, shape<>>({}, uninitialized), "scalar_f32");
  fill(tensor<float, shape<dyn, dyn>>(random_extents<2>(rng), uninitialized), "dense/W");
  fill(tensor<float, shape<7>>({7}, uninitialized), "dense/b");
  fill(tensor<double, shape<dyn, dyn, dyn>>(random_extents<3>(rng), uninitialized), "f64");
  fill(tensor<std::int32_t, shape<dyn>>({1 + rng() % 9}, uninitialized), "i32");
  fill(tensor<std::int64_t, shape<dyn, dyn>>(random_extents<2>(rng), uninitialized), "i64");
  fill(tensor<bool, shape<dyn, dyn>>({1 + rng() % 4, 1 + rng() % 4}, uninitialized), "mask");
  fill(tensor<float, shape<0, 3>>({0, 3}, uninitialized), "empty");
  // Storage dtypes.
  fill(tensor<Eigen::half, shape<dyn, dyn>>(random_extents<2>(rng), uninitialized), "f16");
  fill(tensor<Eigen::bfloat16, shape<dyn>>({1 + rng() % 9}, uninitialized), "bf16");
  fill(tensor<std::int8_t, shape<dyn>>({1 + rng() % 9}, uninitialized), "i8");
  fill(tensor<std::uint8_t, shape<dyn, dyn>>(random_extents<2>(rng), uninitialized), "u8");
  fill(tensor<std::int16_t, shape<dyn>>({1 + rng() % 9}, uninitialized), "i16");
  fill(tensor<std::uint16_t, shape<dyn>>({1 + rng() % 9}, uninitialized), "u16");
  fill(tensor<std::uint32_t, shape<dyn>>({1 + rng() % 9}, uninitialized), "u32");
  fill(tensor<std::uint64_t, shape<dyn>>({1 + rng() % 9}, uninitialized), "u64");
  return p;
}

void expect_same_store(const params& a, const params& b) {
  ASSERT_EQ(a.names(), b.names());
  for (const auto& name : a.names()) {
    SCOPED_TRACE(name);
    const auto &x = a.at(name), &y = b.at(name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.extents, y.extents);
    ASSERT_EQ(x.bytes.size(), y.bytes.size());
    EXPECT_TRUE(x.bytes.size() == 0 || std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()) == 0);
  }
}

TEST_F(CheckpointTest, EveryDtypeRoundTripsBitExactly) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const params model = random_store(seed), optimiser = random_store(seed + 100);
    const checkpoint_metadata metadata = {{"step", std::to_string(seed * 1000)}, {"epoch", "3"}, {"note", "héllo \"quoted\"\n"}};
    save_checkpoint(path("ckpt.safetensors"), {{"", model}, {"adam/", optimiser}}, metadata);
    const checkpoint back = load_checkpoint(path("ckpt.safetensors"));
    EXPECT_EQ(back.metadata, metadata);
    expect_same_store(back.part("adam/"), optimiser);
    EXPECT_EQ(back.tensors.size(), model.size() + optimiser.size());
    for (const auto& name : model.names()) EXPECT_TRUE(back.tensors.contains(name)) << name;
    // The same bytes through memory.
    const bytes encoded = encode_checkpoint({{"", model}, {"adam/", optimiser}}, metadata);
    EXPECT_EQ(encoded, read_plain(path("ckpt.safetensors")));
    expect_same_store(decode_checkpoint(encoded).tensors, back.tensors);
  }
  // Typed access after loading, as a training loop would resume.
  params p;
  p.set("W", tensor<float, shape<2, 3>>{{1, 2, 3}, {4, 5, 6}});
  save_checkpoint(path("typed"), p);
  const auto W = load_checkpoint(path("typed")).tensors;
  EXPECT_EQ((W.view<float, shape<2, 3>>("W")(1, 2)), 6.0f);
  EXPECT_THROW((W.view<double, shape<2, 3>>("W")), value_error);
}

TEST_F(CheckpointTest, HeaderIsSortedAlignedAndDescribesTheData) {
  params p;
  p.set("b", tensor<std::int64_t, shape<2>>{7, -8});
  p.set("a", tensor<float, shape<1, 2>>{{1.5f, -2.0f}});
  const bytes file = encode_checkpoint(p, {{"step", "12"}});
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[std::size_t(i)];
  ASSERT_LE(8 + n, file.size());
  EXPECT_EQ((8 + n) % 8, 0u);
  const std::string text(file.begin() + 8, file.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  const std::string json = text.substr(0, text.find_last_not_of(' ') + 1);
  EXPECT_EQ(json,
            R"({"__metadata__":{"step":"12"},"a":{"data_offsets":[0,8],"dtype":"F32","shape":[1,2]},)"
            R"("b":{"data_offsets":[8,24],"dtype":"I64","shape":[2]}})");
  EXPECT_EQ(file.size(), 8 + n + 24);
  const float a0 = std::bit_cast<float>(std::uint32_t(file[8 + n]) | std::uint32_t(file[8 + n + 1]) << 8 |
                                        std::uint32_t(file[8 + n + 2]) << 16 | std::uint32_t(file[8 + n + 3]) << 24);
  EXPECT_EQ(a0, 1.5f);
  EXPECT_EQ(file[8 + n + 16], 0xF8);  // -8 as little-endian two's complement
  EXPECT_EQ(file[8 + n + 23], 0xFF);
}

TEST_F(CheckpointTest, PartsMustNotCollide) {
  params a, b;
  a.set("x/W", tensor<float, shape<1>>{1});
  b.set("W", tensor<float, shape<1>>{2});
  EXPECT_THROW(save_checkpoint(path("c"), {{"", a}, {"x/", b}}), checkpoint_error);
  EXPECT_FALSE(fs::exists(path("c")));
  params reserved;
  reserved.set("__metadata__", tensor<float, shape<1>>{1});
  EXPECT_THROW(encode_checkpoint(reserved), checkpoint_error);
}

// --- The independent reader and writer --------------------------------------------------------

// Single-quoted for the shell (the paths here hold no quotes).
std::string quoted(const std::string& word) {
  std::string out = "'";  // appended piecewise: GCC 12 warns (-Wrestrict) about "'" + std::string
  out += word;
  out += "'";
  return out;
}

bool python_with_numpy() {
  const std::string python = SYMFLOW_PYTHON3;
  if (python.empty() || python.find("NOTFOUND") != std::string::npos) return false;
  return std::system((quoted(python) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

int run_reference(const std::vector<std::string>& arguments) {
  std::string command = quoted(SYMFLOW_PYTHON3) + " " + quoted(SYMFLOW_SAFETENSORS_REFERENCE);
  for (const auto& a : arguments) {
    command += ' ';
    command += quoted(a);
  }
  return std::system(command.c_str());
}

// The values the reference reports for an entry: floats as bit patterns, integers and bools as numbers.
std::vector<nlohmann::json> values_of(const params::entry& e) {
  std::vector<nlohmann::json> out;
  const std::size_t n = dtype_size(e.type) ? e.bytes.size() / dtype_size(e.type) : 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char* p = e.bytes.data() + i * dtype_size(e.type);
    visit_dtype(e.type, [&](auto t) {
      using T = decltype(t);
      if constexpr (is_floating_dtype_v<T>) {
        std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>> bits;
        std::memcpy(&bits, p, sizeof bits);
        out.emplace_back(bits);
      } else if constexpr (std::is_same_v<T, bool>) {
        out.emplace_back(int(*p));
      } else {
        T v;
        std::memcpy(&v, p, sizeof v);
        out.emplace_back(v);
      }
    });
  }
  return out;
}

TEST_F(CheckpointTest, IndependentReaderSeesWhatWasSaved) {
  if (!python_with_numpy()) GTEST_SKIP() << "no python3 with numpy";
  for (std::uint64_t seed : {5u, 6u, 7u}) {
    const params model = random_store(seed), optimiser = random_store(seed * 31);
    const checkpoint_metadata metadata = {{"step", "500"}, {"optimizer", "adam"}};
    save_checkpoint(path("c.safetensors"), {{"model/", model}, {"adam/", optimiser}}, metadata);
    ASSERT_EQ(run_reference({"read", path("c.safetensors"), path("c.json")}), 0);
    const auto report = nlohmann::json::parse(std::ifstream(path("c.json")));
    EXPECT_EQ(report["metadata"].get<checkpoint_metadata>(), metadata);
    const checkpoint saved = load_checkpoint(path("c.safetensors"));
    ASSERT_EQ(report["tensors"].size(), saved.tensors.size());
    for (const auto& name : saved.tensors.names()) {
      SCOPED_TRACE(name);
      const auto& e = saved.tensors.at(name);
      const auto& r = report["tensors"].at(name);
      EXPECT_EQ(r["dtype"].get<std::string>(), detail::safetensors_dtype_name(e.type));
      EXPECT_EQ(r["shape"].get<std::vector<std::size_t>>(), e.extents);
      EXPECT_EQ(r["values"].get<std::vector<nlohmann::json>>(), values_of(e));
    }
  }
}

TEST_F(CheckpointTest, ReadsWhatAnIndependentWriterWrote) {
  if (!python_with_numpy()) GTEST_SKIP() << "no python3 with numpy";
  ASSERT_EQ(run_reference({"write", path("py.safetensors"), path("py.json"), "77"}), 0);
  const auto expected = nlohmann::json::parse(std::ifstream(path("py.json")));
  const checkpoint c = load_checkpoint(path("py.safetensors"));
  EXPECT_EQ(c.metadata, expected["metadata"].get<checkpoint_metadata>());
  ASSERT_EQ(c.tensors.size(), expected["tensors"].size());
  for (const auto& [name, want] : expected["tensors"].items()) {
    SCOPED_TRACE(name);
    const auto& e = c.tensors.at(name);
    EXPECT_EQ(e.extents, want["shape"].get<std::vector<std::size_t>>());
    const std::string file_dtype = want["dtype"];
    EXPECT_EQ(detail::safetensors_dtype_name(e.type), file_dtype);  // every dtype kept as written
    EXPECT_EQ(values_of(e), want["values"].get<std::vector<nlohmann::json>>());
  }
}

// --- Malformed files ----------------------------------------------------------------------------

bytes with_header(const std::string& header, const bytes& data) {
  bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>((std::uint64_t(header.size()) >> (8 * i)) & 0xFF));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Loads bad from a file and from memory; both must fail naming the source and the problem.
void expect_rejected(const std::string& file, const bytes& bad, const std::string& fragment) {
  SCOPED_TRACE(fragment);
  write_plain(file, bad);
  for (int from_file = 0; from_file < 2; ++from_file) {
    try {
      if (from_file) load_checkpoint(file);
      else decode_checkpoint(bad, file);
      ADD_FAILURE() << "expected a checkpoint_error";
    } catch (const checkpoint_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << what;
    }
  }
}

TEST_F(CheckpointTest, EveryMalformedFieldIsNamed) {
  const std::string f = path("bad.safetensors");
  const bytes eight(8, 0);
  const std::string good = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NO_THROW(decode_checkpoint(with_header(good, eight)));

  expect_rejected(f, {1, 2, 3}, "fewer than the 8-byte header length");
  bytes huge_length = with_header(good, eight);
  huge_length[7] = 0x7F;
  expect_rejected(f, huge_length, "is larger than the");
  expect_rejected(f, with_header(std::string(200, ' '), {}), "does not start with '{'");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32",)", {}), "not valid JSON");
  expect_rejected(f, with_header("[1, 2]", {}), "does not start with '{'");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", bytes(2)), "unknown dtype 'F8_E4M3'");
  expect_rejected(f, with_header(R"({"a":{"dtype":3,"shape":[2],"data_offsets":[0,8]}})", eight), "'dtype' is not a string");
  expect_rejected(f, with_header(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", eight), "lacks 'dtype'");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", eight), "unknown key 'x'");
  expect_rejected(f, with_header(R"({"a":[1]})", eight), "tensor 'a' is not described by an object");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight), "not a non-negative integer");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", eight), "not a non-negative integer");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", eight), "'shape' is not an array");
  expect_rejected(f,
                  with_header(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
                  "overflows 64 bits");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight), "not a pair");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight), "run backwards");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", eight), "outside the 8-byte data section");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight), "F32 [3] needs 12");
  expect_rejected(f,
                  with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                              eight),
                  "overlap");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight), "a gap at the start");
  expect_rejected(f,
                  with_header(R"({"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"BOOL","shape":[2],"data_offsets":[6,8]}})",
                              eight),
                  "gap after 'a'");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight), "trailing bytes");
  expect_rejected(f,
                  with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                              eight),
                  "the tensor name 'a' appears twice");
  expect_rejected(f, with_header(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight),
                  "the key 'dtype' appears twice");
  expect_rejected(f, with_header(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight), "empty name");
  expect_rejected(f, with_header(R"({"__metadata__":{"step":3}})", {}), "'__metadata__' entry 'step' is not a string");
  expect_rejected(f, with_header(R"({"__metadata__":[]})", {}), "'__metadata__' is not an object");
  expect_rejected(f, with_header(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", {1, 2}), "element 1 is 2, not 0 or 1");
  expect_rejected(f, with_header("{\"\xff\":{}}", {}), "not valid JSON");
  expect_rejected(path("missing"), {}, "");  // written empty: too short
  try {
    load_checkpoint(path("really-missing"));
    ADD_FAILURE();
  } catch (const checkpoint_error& e) {
    EXPECT_NE(std::string(e.what()).find(path("really-missing")), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointTest, EveryTruncationOfAValidFileIsRejected) {
  const bytes file = encode_checkpoint(random_store(3), {{"step", "1"}});
  for (std::size_t cut = 0; cut < file.size(); ++cut) {
    const bytes prefix(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(decode_checkpoint(prefix), checkpoint_error) << "cut at " << cut;
  }
  // Flipped bytes anywhere either load (a changed value) or give a checkpoint_error, never a crash.
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 2000; ++trial) {
    bytes damaged = file;
    damaged[rng() % damaged.size()] ^= static_cast<unsigned char>(1 + rng() % 255);
    try {
      (void)decode_checkpoint(damaged);
    } catch (const checkpoint_error&) {
    }
  }
}

// --- Atomic saving -----------------------------------------------------------------------------

TEST_F(CheckpointTest, LeftoverTemporaryFilesDoNotDisturbLoadingOrSaving) {
  const params first = random_store(1);
  save_checkpoint(path("c"), first, {{"step", "1"}});
  // A crash during an earlier save left its temporary file behind, half written.
  write_plain(path("c") + ".tmp.12345", {1, 2, 3});
  write_plain(path("c") + ".tmp." + std::to_string(::getpid()), {9, 9});
  expect_same_store(load_checkpoint(path("c")).tensors, first);
  const params second = random_store(2);
  save_checkpoint(path("c"), second, {{"step", "2"}});
  const checkpoint back = load_checkpoint(path("c"));
  expect_same_store(back.tensors, second);
  EXPECT_EQ(back.metadata.at("step"), "2");
  EXPECT_FALSE(fs::exists(path("c") + ".tmp." + std::to_string(::getpid())));
}

TEST_F(CheckpointTest, AFailedWriteKeepsThePreviousCheckpoint) {
  const params first = random_store(1);
  save_checkpoint(path("c"), first, {{"step", "1"}});
  const bytes before = read_plain(path("c"));

  params large;
  large.set("big", tensor<float, shape<dyn>>({1 << 16}, 1.0f));
  // The file-size limit makes the write fail part-way (EFBIG), like a full disk would.
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit limited = old;
  limited.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string message;
  try {
    save_checkpoint(path("c"), large, {{"step", "2"}});
  } catch (const checkpoint_error& e) {
    message = e.what();
  }
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, SIG_DFL);

  ASSERT_FALSE(message.empty()) << "the save should have failed";
  EXPECT_NE(message.find(path("c")), std::string::npos) << message;
  EXPECT_NE(message.find("unchanged"), std::string::npos) << message;
  EXPECT_EQ(read_plain(path("c")), before);
  expect_same_store(load_checkpoint(path("c")).tensors, first);
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename(), "c") << "left behind: " << entry.path();
}

TEST_F(CheckpointTest, UnwritableLocationIsNamed) {
  try {
    save_checkpoint(path("no-such-dir/c"), random_store(1));
    ADD_FAILURE();
  } catch (const checkpoint_error& e) {
    EXPECT_NE(std::string(e.what()).find(path("no-such-dir/c")), std::string::npos) << e.what();
  }
}

}  // namespace

// --- Hostile headers (issue 14) ------------------------------------------------------------------

namespace {
std::string checkpoint_error_of(const bytes& file) {
  try {
    (void)decode_checkpoint(file, "hostile.safetensors");
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a checkpoint_error";
  return {};
}
}  // namespace

// A header nested 10^5 deep (200 KB, well under the 100 MB header limit) overflowed the stack.
// The header is flat by the format's rules, so anything deeper than 3 levels is refused unparsed.
TEST_F(CheckpointTest, DeeplyNestedHeadersAreRefusedBeforeParsing) {
  for (const std::string& where : {std::string("{\"a\":"), std::string("{\"__metadata__\":{\"k\":"),
                                   std::string("{\"a\":{\"dtype\":\"F32\",\"shape\":")}) {
    const std::string header = where + std::string(100000, '[') + std::string(100000, ']') + "}";
    const std::string message = checkpoint_error_of(with_header(header, {}));
    EXPECT_NE(message.find("checkpoint 'hostile.safetensors'"), std::string::npos) << message;
    EXPECT_NE(message.find("nests deeper than the limit of 3 levels"), std::string::npos) << message;
  }
  const std::string f = path("deep.safetensors");
  write_plain(f, with_header("{\"a\":" + std::string(100000, '{') + "}", {}));
  EXPECT_THROW(load_checkpoint(f), checkpoint_error);
  // Brackets inside strings do not count.
  const std::string quoted = R"({"__metadata__":{"k":"[[[[{{{{\"[["},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(decode_checkpoint(with_header(quoted, bytes(8))).metadata.at("k"), "[[[[{{{{\"[[");
}

// Messages quote at most a short excerpt of a name or value, never a whole JSON value.
TEST_F(CheckpointTest, MessagesQuoteShortExcerptsOnly) {
  std::string shape = "[";
  for (int i = 0; i < 100000; ++i) shape += i ? ",1" : "1";
  shape += "]";
  const std::string long_name(50000, 'n');
  for (const std::string& header :
       {R"({"a":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,8]}})",
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + shape + "}}",
        R"({")" + long_name + R"(":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
        R"({"a":{"dtype":")" + long_name + R"(","shape":[2],"data_offsets":[0,8]}})",
        R"({"__metadata__":{"k":)" + shape + "}}"}) {
    const std::string message = checkpoint_error_of(with_header(header, bytes(8)));
    EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
  }
}

TEST_F(CheckpointTest, DirectoriesAndDevicesAreRefused) {
  for (const std::string& p : {dir_.string(), std::string("/dev/zero")}) {
    try {
      (void)load_checkpoint(p);
      ADD_FAILURE() << "expected a checkpoint_error for " << p;
    } catch (const checkpoint_error& e) {
      EXPECT_NE(std::string(e.what()).find("checkpoint '" + p + "': not a regular file"), std::string::npos) << e.what();
    }
  }
}

// A writer killed mid-write left PATH.tmp.<pid> behind forever. The next save of PATH removes
// those of processes that no longer exist, and keeps those of live ones (a save in progress).
TEST_F(CheckpointTest, SavingRemovesTemporaryFilesOfDeadWriters) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: its pid now names no process
  const std::string dead = path("c") + ".tmp." + std::to_string(child);
  const std::string live = path("c") + ".tmp." + std::to_string(::getppid());
  const std::string other = path("d") + ".tmp." + std::to_string(child);
  const std::string not_ours = path("c") + ".tmp.notapid";
  for (const auto& f : {dead, live, other, not_ours}) write_plain(f, {1, 2, 3});
  save_checkpoint(path("c"), random_store(3));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(not_ours));
  expect_same_store(load_checkpoint(path("c")).tensors, random_store(3));
}
