// The ONNX backend node tests that Debian's libonnx-testdata ships (data/node/*/model.onnx with
// test_data_set_*/input_*.pb and output_*.pb), run through the importer (runtime/onnx_import.hpp)
// and the graph interpreter, outputs compared as ONNX's own backend runner compares them
// (numpy.testing.assert_allclose with rtol 1e-3, atol 1e-7, NaN equal to NaN; integers and bools
// exactly; dtype and extents equal).
//
// A test is claimed when every op type in its graph is one the importer reads and every input and
// output has a symflow dtype; at least 90% of the claimed tests must pass. Every test's result goes
// into a Markdown report (SYMFLOW_ONNX_CONFORMANCE_REPORT, default onnx_conformance.md here), from
// which docs/onnx.md's table is taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/onnx_import.hpp>

namespace {
using namespace symflow;
namespace fs = std::filesystem;

const fs::path node_tests = "/usr/share/libonnx-testdata/data/node";

onnx::TensorProto read_tensor_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  onnx::TensorProto t;
  if (!t.ParseFromString(s.str())) throw std::runtime_error("cannot parse " + p.string());
  return t;
}

onnx::ModelProto read_model(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  onnx::ModelProto m;
  if (!m.ParseFromString(s.str())) throw std::runtime_error("cannot parse " + p.string());
  return m;
}

// The i-th element of a tensor as a double (integers exactly up to 2^53).
double element(const graph_tensor& t, std::size_t i) {
  double out = 0;
  visit_dtype(t.type, [&](auto zero) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, bool>) out = v ? 1 : 0;
    else out = static_cast<double>(v);
  });
  return out;
}

// "" when `got` matches `want` as ONNX's runner compares, else what differs.
std::string compare(const graph_tensor& got, const graph_tensor& want) {
  if (got.type != want.type)
    return "dtype " + std::string(dtype_name(got.type)) + ", expected " + std::string(dtype_name(want.type));
  if (got.extents != want.extents) {
    std::string g, w;
    for (auto e : got.extents) g += std::to_string(e) + ",";
    for (auto e : want.extents) w += std::to_string(e) + ",";
    return "extents [" + g + "], expected [" + w + "]";
  }
  const bool floating = is_floating_dtype(want.type);
  for (std::size_t i = 0; i < want.element_count(); ++i) {
    const double a = element(got, i), b = element(want, i);
    if (floating) {
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      if (std::abs(a - b) <= 1e-7 + 1e-3 * std::abs(b)) continue;
    } else if (a == b) {
      continue;
    }
    std::ostringstream s;
    s << "element " << i << " is " << a << ", expected " << b;
    return s.str();
  }
  return "";
}

struct outcome {
  std::string test;
  std::set<std::string> ops;
  enum kind { passed, failed, unsupported } result = failed;
  std::string reason;
};

// The first thing that keeps a test out of the claimed set, or "".
std::string unclaimed_reason(const onnx::ModelProto& m, const std::set<std::string>& read) {
  bool default_domain = false;
  for (const auto& o : m.opset_import()) default_domain |= o.domain().empty() || o.domain() == "ai.onnx";
  if (!default_domain) return "domain " + (m.opset_import_size() ? m.opset_import(0).domain() : std::string("(none)"));
  for (const auto& n : m.graph().node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "domain " + n.domain();
    if (!read.count(n.op_type())) return "op " + n.op_type();
  }
  const auto check = [](const onnx::ValueInfoProto& v) -> std::string {
    if (!v.type().has_tensor_type()) return "a non-tensor value";
    const std::int32_t code = v.type().tensor_type().elem_type();
    for (std::size_t i = 0; i < dtype_count; ++i)
      if (dtype_info_of(static_cast<dtype>(i)).onnx == code) return "";
    return "dtype " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
  };
  for (const auto& v : m.graph().input())
    if (auto why = check(v); !why.empty()) return why;
  for (const auto& v : m.graph().output())
    if (auto why = check(v); !why.empty()) return why;
  return "";
}

outcome run_test(const fs::path& dir, const std::set<std::string>& read) {
  outcome o;
  o.test = dir.filename().string();
  const onnx::ModelProto model = read_model(dir / "model.onnx");
  for (const auto& n : model.graph().node()) o.ops.insert(n.op_type());
  if (auto why = unclaimed_reason(model, read); !why.empty()) {
    o.result = outcome::unsupported;
    o.reason = why;
    return o;
  }
  std::set<std::string> initialisers;
  for (const auto& t : model.graph().initializer()) initialisers.insert(t.name());
  std::vector<std::string> input_names;
  for (const auto& v : model.graph().input())
    if (!initialisers.count(v.name())) input_names.push_back(v.name());
  try {
    const fs::path data = dir / "test_data_set_0";
    std::vector<graph_tensor> inputs;
    for (std::size_t k = 0; k < input_names.size(); ++k)
      inputs.push_back(from_onnx_tensor(read_tensor_file(data / ("input_" + std::to_string(k) + ".pb")), "input", 1u << 30));
    // Shape, axes, pads and fill values given as graph inputs: the importer needs their values, so
    // the model is imported again with each input it names as such an initialiser (frozen), as
    // exporters write them.
    onnx::ModelProto frozen = model;
    graph g;
    for (int attempt = 0;; ++attempt) {
      try {
        g = from_onnx(frozen);
        break;
      } catch (const onnx_import_error& e) {
        const std::string what = e.what();
        const std::size_t at = what.find("') must be a constant");
        if (at == std::string::npos || attempt == 8) throw;
        const std::string name = what.substr(what.rfind("('", at) + 2, at - what.rfind("('", at) - 2);
        auto* inputs_proto = frozen.mutable_graph()->mutable_input();
        const auto k = std::find(input_names.begin(), input_names.end(), name) - input_names.begin();
        if (std::size_t(k) == input_names.size()) throw;
        for (int i = 0; i < inputs_proto->size(); ++i)
          if (inputs_proto->Get(i).name() == name) inputs_proto->DeleteSubrange(i, 1);
        *frozen.mutable_graph()->add_initializer() = to_onnx_tensor(inputs[k], name);
        o.reason = "inputs frozen; ";
      }
    }
    runtime_feeds feeds;
    for (std::size_t k = 0; k < input_names.size(); ++k)
      for (const auto& leaf : g.inputs)
        if (leaf.name == input_names[k]) feeds.insert_or_assign(input_names[k], runtime_tensor(inputs[k]));
    const std::vector<runtime_tensor> outputs = run_graph(g, feeds);
    if (int(outputs.size()) != model.graph().output_size()) {
      o.reason += std::to_string(outputs.size()) + " outputs";
      return o;
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const graph_tensor want = from_onnx_tensor(read_tensor_file(data / ("output_" + std::to_string(k) + ".pb")), "output", 1u << 30);
      if (auto diff = compare(outputs[k].to_graph_tensor(), want); !diff.empty()) {
        o.reason += "output " + std::to_string(k) + ": " + diff;
        return o;
      }
    }
    o.result = outcome::passed;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    o.reason += what.substr(0, 300);
  }
  return o;
}

std::string escape(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

TEST(OnnxConformance, NodeTestsOfClaimedOpsPass) {
  if (!fs::exists(node_tests)) GTEST_SKIP() << "libonnx-testdata is not installed (" << node_tests << ")";
  std::set<std::string> read;
  for (std::string_view t : onnx_types_imported()) read.insert(std::string(t));
  std::vector<fs::path> dirs;
  for (const auto& d : fs::directory_iterator(node_tests))
    if (fs::exists(d.path() / "model.onnx")) dirs.push_back(d.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GT(dirs.size(), 500u);

  std::vector<outcome> outcomes;
  for (const auto& d : dirs) outcomes.push_back(run_test(d, read));

  std::size_t passed = 0, failed = 0, unsupported = 0;
  std::map<std::string, std::array<int, 3>> per_op;
  std::map<std::string, int> unsupported_by_reason;
  for (const auto& o : outcomes) {
    (o.result == outcome::passed ? passed : o.result == outcome::failed ? failed : unsupported)++;
    for (const auto& op : o.ops) per_op[op][int(o.result)]++;
    if (o.result == outcome::unsupported) unsupported_by_reason[o.reason]++;
  }
  const std::size_t claimed = passed + failed;
  std::ofstream report(std::getenv("SYMFLOW_ONNX_CONFORMANCE_REPORT") ? std::getenv("SYMFLOW_ONNX_CONFORMANCE_REPORT")
                                                                       : "onnx_conformance.md");
  report << "Of " << outcomes.size() << " node tests, " << claimed << " are claimed (their op types and dtypes are "
         << "read): " << passed << " pass, " << failed << " fail; " << unsupported << " are not claimed.\n\n";
  report << "| ONNX op | passed | failed | not claimed |\n|---|---|---|---|\n";
  for (const auto& [op, n] : per_op)
    if (read.count(op)) report << "| " << op << " | " << n[0] << " | " << n[1] << " | " << n[2] << " |\n";
  report << "\nFailures (claimed tests):\n\n| test | reason |\n|---|---|\n";
  for (const auto& o : outcomes)
    if (o.result == outcome::failed) report << "| " << o.test << " | " << escape(o.reason) << " |\n";
  report << "\nNot claimed, by first reason:\n\n";
  for (const auto& [why, n] : unsupported_by_reason) report << "- " << why << ": " << n << "\n";
  report << "\nPassed with shape, axes or fill inputs frozen as constants:";
  for (const auto& o : outcomes)
    if (o.result == outcome::passed && !o.reason.empty()) report << " " << o.test;
  report << "\n";

  std::cout << passed << " of " << claimed << " claimed node tests pass (" << failed << " fail, " << unsupported
            << " not claimed)\n";
  for (const auto& o : outcomes)
    if (o.result == outcome::failed) std::cout << "  " << o.test << ": " << o.reason << "\n";
  EXPECT_GE(double(passed), 0.9 * double(claimed));
  EXPECT_GT(claimed, 400u);
}

}  // namespace
