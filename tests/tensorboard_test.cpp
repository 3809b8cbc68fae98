// TensorBoard event files: every value the summary_writer logs is decoded by an independent reader
// (tests/tensorboard_reader.py: crcmod for the masked CRC-32Cs, python3-protobuf with
// tests/tensorboard_event.proto for the messages, numpy for the histograms) and compared with what
// this test logged; plus the CRC, histogram and naming rules on their own, timer flushing and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <symflow/debug/tensorboard.hpp>
#include <symflow/graph/all.hpp>
#include <symflow/symflow.hpp>

namespace {

using namespace symflow;
using namespace symflow::tensorboard;
namespace fs = std::filesystem;
using json = nlohmann::json;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

bool configured(const std::string& program) { return !program.empty() && program.find("NOTFOUND") == std::string::npos; }

// Why the independent reader cannot run here, or "" when it can.
std::string reader_unavailable() {
  if (!configured(SYMFLOW_PYTHON3)) return "no python3";
  if (!configured(SYMFLOW_PROTOC)) return "no protoc (Debian: protobuf-compiler)";
  const std::string probe = quoted(SYMFLOW_PYTHON3) + " -c 'import google.protobuf, crcmod.predefined, numpy' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) return "python3 lacks google.protobuf, crcmod or numpy (Debian: python3-protobuf python3-crcmod python3-numpy)";
  return "";
}

class TensorboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("symflow_tb_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the reader on `event_file` against `expected`; returns its exit status and keeps its output.
  int run_reader(const fs::path& event_file, json expected) {
    expected["host"] = host_name();
    const fs::path expected_file = dir_ / "expected.json";
    std::ofstream(expected_file) << expected.dump();
    const fs::path output = dir_ / "reader.txt";
    const std::string command = quoted(SYMFLOW_PYTHON3) + " " + quoted(SYMFLOW_TENSORBOARD_READER) + " --protoc " +
                                quoted(SYMFLOW_PROTOC) + " --proto " + quoted(SYMFLOW_TENSORBOARD_PROTO) + " --expected " +
                                quoted(expected_file.string()) + " " + quoted(event_file.string()) + " >" +
                                quoted(output.string()) + " 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream in(output);
    reader_output_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path dir_;
  std::string reader_output_;
};

json histogram_entry(const std::string& tag, std::int64_t step, const std::vector<double>& values, std::size_t uniform_count,
                     bool exact_sums) {
  return {{"kind", "histogram"}, {"tag", tag},           {"step", step},
          {"values", values},    {"uniform_count", uniform_count}, {"exact_sums", exact_sums}};
}

json node(const std::string& name, const std::string& op, std::vector<std::string> inputs, std::vector<std::int64_t> shape,
          int tf_dtype, json attrs = json::object()) {
  return {{"name", name}, {"op", op}, {"inputs", inputs}, {"shape", shape}, {"dtype", tf_dtype}, {"attrs", attrs}};
}

TEST(TensorboardCrc, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the standard check value of CRC-32C
  EXPECT_EQ(crc32c(""), 0u);
  // The masked CRC of the 8 zero bytes heading an empty record, as TensorFlow frames it.
  const std::string record = tfrecord("");
  ASSERT_EQ(record.size(), 16u);
  const std::uint32_t crc = crc32c(std::string(8, '\0'));
  const std::uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  std::uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= std::uint32_t(static_cast<unsigned char>(record[8 + i])) << (8 * i);
  EXPECT_EQ(stored, masked);
}

TEST(TensorboardHistogram, StatisticsAndDefaultBuckets) {
  const std::vector<double> values{-1.0, 0.0, 0.5, 2.0};
  const histogram h = make_histogram(std::span<const double>(values));
  EXPECT_EQ(h.min, -1.0);
  EXPECT_EQ(h.max, 2.0);
  EXPECT_EQ(h.num, 4.0);
  EXPECT_EQ(h.sum, 1.5);
  EXPECT_EQ(h.sum_squares, 5.25);
  double counted = 0;
  for (double c : h.bucket_counts) counted += c;
  EXPECT_EQ(counted, 4.0);
  // Zero lands in the bucket ending at 1e-12: a bucket holds [previous limit, its limit).
  const auto zero_bucket = std::find(h.bucket_limits.begin(), h.bucket_limits.end(), 1e-12);
  ASSERT_NE(zero_bucket, h.bucket_limits.end());
  EXPECT_EQ(h.bucket_counts[std::size_t(zero_bucket - h.bucket_limits.begin())], 1.0);
  // Empty runs are merged: 4 full buckets, at most 5 empty runs between and around them.
  EXPECT_LE(h.bucket_limits.size(), 9u);
  EXPECT_EQ(h.bucket_limits.back(), DBL_MAX);

  const auto& limits = default_bucket_limits();
  EXPECT_EQ(limits.front(), -DBL_MAX);
  EXPECT_EQ(limits.back(), DBL_MAX);
  EXPECT_EQ(limits[limits.size() / 2], 0.0);
  EXPECT_TRUE(std::is_sorted(limits.begin(), limits.end()));
}

TEST(TensorboardHistogram, UniformBuckets) {
  const std::vector<float> values{0, 1, 2, 3};
  const histogram h = make_histogram(std::span<const float>(values), histogram_buckets::uniform(3));
  EXPECT_EQ(h.bucket_limits, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(h.bucket_counts, (std::vector<double>{1, 1, 2}));  // the maximum belongs to the last bucket

  const std::vector<float> equal(5, 7.0f);
  const histogram flat = make_histogram(std::span<const float>(equal), histogram_buckets::uniform(2));
  EXPECT_EQ(flat.bucket_counts, (std::vector<double>{0, 5}));
  EXPECT_THROW(histogram_buckets::uniform(0), value_error);
}

TEST(TensorboardHistogram, NonFiniteValuesAreRefusedNamingTheTag) {
  const std::vector<float> values{1.0f, std::nanf(""), 2.0f};
  try {
    make_histogram(std::span<const float>(values), {}, "weights");
    FAIL() << "no error";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("weights: value 1 is NaN"), std::string::npos) << e.what();
  }
}

TEST(TensorboardGraphDef, RepeatedNamesGetTensorflowSuffixes) {
  graph g;
  g.inputs.push_back({"x", "a", {dtype::f32, {2}}, {}, {}});
  for (const char* name : {"a/add", "a/add", "a/add_1", "a/add"}) {
    graph_node n;
    n.op = "add";
    n.name = name;
    n.inputs = {0, 0};
    n.type = {dtype::f32, {2}};
    g.nodes.push_back(n);
  }
  // "a/add_1" is the user's own, so the repeats skip it.
  EXPECT_EQ(graph_def_node_names(g), (std::vector<std::string>{"a/x", "a/add", "a/add_2", "a/add_1", "a/add_3"}));
}

TEST_F(TensorboardTest, EveryLoggedValueDecodesWithAnIndependentReader) {
  const std::string unavailable = reader_unavailable();
  if (!unavailable.empty()) GTEST_SKIP() << unavailable;

  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W1 = variable<"W1", float, shape<4, 3>>();
  auto b1 = variable<"b1", float, shape<3>>();
  auto hidden = scope("dense1", [&] { return relu(matmul(x, W1) + b1) + 1.0f; });
  auto logits = scope("dense2", [&] { return matmul(hidden, variable<"W2", float, shape<3, 2>>()); });
  auto loss = scope("loss", [&] { return mean(sum(logits * logits, axes<1>)); });
  const graph g = to_graph(loss);

  const double wall_time_min = now_seconds();
  json events = json::array();
  events.push_back({{"kind", "file_version"}, {"step", 0}});
  summary_writer writer(dir_ / "run1");

  const std::vector<std::pair<double, std::int64_t>> scalars{{2.5, 0}, {0.1, 1}, {0.0, 2}, {-1e-30, 3}, {1e30, 4}, {0.75, -5}};
  for (const auto& [value, step] : scalars) {
    writer.add_scalar("train/loss", value, step);
    events.push_back({{"kind", "scalar"}, {"tag", "train/loss"}, {"step", step}, {"value", value}});
  }

  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> gaussian(5000);
  for (auto& v : gaussian) v = normal(rng);
  writer.add_histogram("weights/gaussian", gaussian, 10);
  events.push_back(histogram_entry("weights/gaussian", 10, {gaussian.begin(), gaussian.end()}, 0, false));

  std::uniform_real_distribution<double> uniform(-50.0, 1e4);
  std::vector<double> wide(2000);
  for (auto& v : wide) v = uniform(rng);
  writer.add_histogram("weights/uniform30", wide, 11, histogram_buckets::uniform(30));
  events.push_back(histogram_entry("weights/uniform30", 11, wide, 30, false));

  // Multiples of 1/1024 below 16 in magnitude: every partial sum and sum of squares is exact in
  // double, so the reader can compare sum and sum_squares for equality whatever the summation order.
  tensor<float, shape<40, 25>> quantized(extents_t<2>{40, 25}, uninitialized);
  std::uniform_int_distribution<int> steps(-16 * 1024 + 1, 16 * 1024 - 1);
  for (auto& v : quantized) v = static_cast<float>(steps(rng)) / 1024.0f;
  writer.add_histogram("dense1/W", quantized, 12);
  events.push_back(histogram_entry("dense1/W", 12, {quantized.begin(), quantized.end()}, 0, true));
  writer.add_histogram("dense1/W_uniform", quantized, 12, histogram_buckets::uniform(64));
  events.push_back(histogram_entry("dense1/W_uniform", 12, {quantized.begin(), quantized.end()}, 64, true));

  // Views, as parameters come out of a params store: contiguous, and strided (the transpose).
  params store;
  store.set("W", quantized);
  writer.add_histogram("dense1/W_view", store.view<float, shape<40, 25>>("W"), 12);
  events.push_back(histogram_entry("dense1/W_view", 12, {quantized.begin(), quantized.end()}, 0, true));
  const tensor_view<const float, shape<25, 40>> transposed(quantized.data(), {25, 40}, {1, 25});
  writer.add_histogram("dense1/W_transposed", transposed, 12, histogram_buckets::uniform(7));
  events.push_back(histogram_entry("dense1/W_transposed", 12, {quantized.begin(), quantized.end()}, 7, true));

  writer.add_histogram("empty", std::span<const double>(), 13);
  events.push_back(histogram_entry("empty", 13, {}, 0, true));
  const std::vector<double> constant(17, -3.25);
  writer.add_histogram("constant", constant, 14, histogram_buckets::uniform(4));
  events.push_back(histogram_entry("constant", 14, constant, 4, true));
  const std::vector<double> extremes{-DBL_MAX, DBL_MAX, 0.0, -0.0, 1e-300, -1e-12, 1e-12};
  writer.add_histogram("extremes", extremes, 15);
  events.push_back(histogram_entry("extremes", 15, extremes, 0, false));

  const std::string text = "# run 1\n\n*lr* = 0.01, naïve — ünïcode ✓";
  writer.add_text("notes", text, 20);
  events.push_back({{"kind", "text"}, {"tag", "notes"}, {"step", 20}, {"value", text}});
  writer.add_text("empty_text", "", 21);
  events.push_back({{"kind", "text"}, {"tag", "empty_text"}, {"step", 21}, {"value", ""}});

  writer.add_graph(g);
  constexpr int f32 = 1;
  json nodes = json::array({
      node("x", "Placeholder", {}, {-1, 4}, f32),
      node("W1", "Variable", {}, {4, 3}, f32),
      node("b1", "Variable", {}, {3}, f32),
      node("dense2/W2", "Variable", {}, {3, 2}, f32),  // built inside the scope, so it is drawn inside it
      node("dense1/matmul", "matmul", {"x", "W1"}, {-1, 3}, f32),
      node("dense1/add", "add", {"dense1/matmul", "b1"}, {-1, 3}, f32),
      node("dense1/relu", "relu", {"dense1/add"}, {-1, 3}, f32),
      node("literal", "literal", {}, {}, f32, {{"value", {{"f", 1.0}}}, {"static", {{"b", false}}}}),
      node("dense1/add_1", "add", {"dense1/relu", "literal"}, {-1, 3}, f32),
      node("dense2/matmul", "matmul", {"dense1/add_1", "dense2/W2"}, {-1, 2}, f32),
      node("loss/mul", "mul", {"dense2/matmul", "dense2/matmul"}, {-1, 2}, f32),
      node("loss/sum", "sum", {"loss/mul"}, {-1}, f32, {{"axes", {{"list_i", {1}}}}, {"keepdims", {{"b", false}}}}),
      node("loss/mean", "mean", {"loss/sum"}, {}, f32, {{"axes", {{"list_i", {0}}}}, {"keepdims", {{"b", false}}}}),
  });
  events.push_back({{"kind", "graph"}, {"step", 0}, {"producer", graph_def_producer_version}, {"nodes", nodes}});
  writer.add_scalar("after_graph", 1.0, 30);
  events.push_back({{"kind", "scalar"}, {"tag", "after_graph"}, {"step", 30}, {"value", 1.0}});

  writer.close();
  const double wall_time_max = now_seconds();
  EXPECT_EQ(writer.path().parent_path(), dir_ / "run1");

  const json expected{{"wall_time_min", wall_time_min}, {"wall_time_max", wall_time_max}, {"events", events}};
  EXPECT_EQ(run_reader(writer.path(), expected), 0) << reader_output_;
  EXPECT_NE(reader_output_.find(std::to_string(events.size()) + " records checked"), std::string::npos) << reader_output_;

  // The reader must notice a wrong value, a lost node name and a flipped byte, or its "pass" means nothing.
  json wrong_scalar = expected;
  wrong_scalar["events"][1]["value"] = 2.25;
  EXPECT_EQ(run_reader(writer.path(), wrong_scalar), 1) << reader_output_;
  EXPECT_NE(reader_output_.find("record 1 (scalar 'train/loss')"), std::string::npos) << reader_output_;
  json wrong_scope = expected;
  wrong_scope["events"][events.size() - 2]["nodes"][4]["name"] = "matmul";
  EXPECT_EQ(run_reader(writer.path(), wrong_scope), 1) << reader_output_;
  EXPECT_NE(reader_output_.find("node 'dense1/matmul': expected name 'matmul'"), std::string::npos) << reader_output_;
  json wrong_histogram = expected;
  wrong_histogram["events"][8]["values"][3] = 0.5;
  EXPECT_EQ(run_reader(writer.path(), wrong_histogram), 1) << reader_output_;

  const fs::path corrupted = dir_ / "run2" / writer.path().filename();
  fs::create_directories(corrupted.parent_path());
  fs::copy_file(writer.path(), corrupted);
  {
    std::fstream file(corrupted, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-6, std::ios::end);  // inside the last record's data
    file.put('\x7f');
  }
  EXPECT_EQ(run_reader(corrupted, expected), 1) << reader_output_;
  EXPECT_NE(reader_output_.find("bad masked CRC-32C of the data"), std::string::npos) << reader_output_;
}

TEST_F(TensorboardTest, TheDestructorFlushesEverything) {
  const std::string unavailable = reader_unavailable();
  if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  const double wall_time_min = now_seconds();
  fs::path path;
  {
    summary_writer writer(dir_, {.flush_interval = std::chrono::hours(1)});
    writer.add_scalar("accuracy", 0.875, 100);
    path = writer.path();
  }
  json events = json::array({{{"kind", "file_version"}, {"step", 0}},
                             {{"kind", "scalar"}, {"tag", "accuracy"}, {"step", 100}, {"value", 0.875}}});
  EXPECT_EQ(run_reader(path, {{"wall_time_min", wall_time_min}, {"wall_time_max", now_seconds()}, {"events", events}}), 0)
      << reader_output_;
}

TEST_F(TensorboardTest, FileNameFollowsTensorflow) {
  summary_writer writer(dir_);
  const std::string name = writer.path().filename().string();
  const std::string prefix = "events.out.tfevents.";
  ASSERT_EQ(name.size(), prefix.size() + 11 + host_name().size()) << name;  // 10-digit seconds, '.', host
  EXPECT_EQ(name.substr(0, prefix.size()), prefix);
  const std::string seconds = name.substr(prefix.size(), 10);
  EXPECT_TRUE(std::all_of(seconds.begin(), seconds.end(), [](char c) { return c >= '0' && c <= '9'; })) << name;
  EXPECT_NEAR(std::stod(seconds), now_seconds(), 5.0);
  EXPECT_EQ(name.substr(prefix.size() + 10), "." + host_name());
  // A second writer in the same second and directory gets a file of its own.
  summary_writer second(dir_);
  EXPECT_NE(second.path(), writer.path());
  EXPECT_TRUE(second.path().filename().string().starts_with("events.out.tfevents.")) << second.path();
}

TEST_F(TensorboardTest, RecordsReachTheDiskOnTheTimerWithoutFlush) {
  summary_writer writer(dir_, {.flush_interval = std::chrono::milliseconds(50)});
  auto wait_for_size_above = [&](std::uintmax_t size) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fs::file_size(writer.path()) <= size && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return fs::file_size(writer.path());
  };
  const auto with_header = wait_for_size_above(0);
  EXPECT_GT(with_header, 0u);
  writer.add_scalar("loss", 1.0, 1);
  EXPECT_GT(wait_for_size_above(with_header), with_header);
}

TEST_F(TensorboardTest, ExplicitFlushWritesAtOnce) {
  summary_writer writer(dir_, {.flush_interval = std::chrono::hours(1)});
  writer.add_scalar("loss", 1.0, 1);
  writer.flush();
  // file_version event (wall_time, step, file_version) and the scalar event, each framed with 16 bytes.
  EXPECT_GT(fs::file_size(writer.path()), 2 * 16u + 20u);
}

TEST_F(TensorboardTest, ErrorsNameThePath) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "a_file") << "not a directory";
  const fs::path bad = dir_ / "a_file" / "logs";
  try {
    summary_writer writer(bad);
    FAIL() << "no error";
  } catch (const symflow::error& e) {  // tensorboard_error derives from symflow::error
    EXPECT_TRUE(dynamic_cast<const tensorboard_error*>(&e));
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }

  EXPECT_THROW(summary_writer(dir_ / "spin", {.flush_interval = std::chrono::milliseconds(0)}), value_error);

  summary_writer writer(dir_ / "ok");
  writer.close();
  writer.close();  // closing twice is harmless
  EXPECT_THROW(writer.add_scalar("loss", 1.0, 1), tensorboard_error);
  EXPECT_THROW(writer.flush(), tensorboard_error);

  summary_writer open_writer(dir_ / "nan");
  const std::vector<double> with_nan{1.0, std::nan("")};
  try {
    open_writer.add_histogram("dense1/W", with_nan, 0);
    FAIL() << "no error";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("'dense1/W'"), std::string::npos) << e.what();
  }
}

}  // namespace

// Issue 14: invalid UTF-8 in a tag was written as is, which makes TensorBoard's reader (protobuf
// string fields) fail on the whole file. It is refused, and nothing of the call is written.
TEST_F(TensorboardTest, TagsMustBeValidUtf8) {
  tensorboard::summary_writer log(dir_);
  log.flush();
  const auto before = fs::file_size(log.path());
  const std::vector<float> values{1.0f, 2.0f};
  for (const std::string& tag : {std::string("bad\xFF"), std::string("\xC0\x80"), std::string("a\xED\xA0\x80"),
                                std::string("cut\xE2\x82")}) {
    for (int kind = 0; kind < 3; ++kind) {
      try {
        if (kind == 0) log.add_scalar(tag, 1.0, 0);
        else if (kind == 1) log.add_text(tag, "text", 0);
        else log.add_histogram(tag, std::span<const float>(values), 0);
        ADD_FAILURE() << "expected a value_error for kind " << kind;
      } catch (const value_error& e) {
        EXPECT_NE(std::string(e.what()).find("is not valid UTF-8"), std::string::npos) << e.what();
      }
    }
  }
  log.add_scalar("ok/\xC3\xA9t\xC3\xA9", 1.0, 0);  // "été": valid UTF-8 is kept
  log.flush();
  EXPECT_GT(fs::file_size(log.path()), before);
  log.close();
}
