// libFuzzer target: the `symflow run` tool's --feed handling (tools/cli_feeds.hpp). The input's
// first line is the option's text (NAME=PATH), the rest the bytes of the .npy file it names; the
// graph is fixed, with an input "x" and a parameter "b". Each step must refuse with a
// symflow::error or succeed; a second --feed for the same name must be refused.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../tools/cli_feeds.hpp"
#include "fuzz_support.hpp"

using symflow_fuzz::report_bug;

namespace {
const symflow::graph& fixed_graph() {
  static const symflow::graph g = [] {
    symflow::graph out;
    out.inputs.push_back({"x", "", {symflow::dtype::f32, {-1, 3}}, {}, {}});
    out.parameters.push_back({"b", "", {symflow::dtype::f32, {2}}, {}, {}});
    return out;
  }();
  return g;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const auto newline = all.find('\n');
  const std::string_view spec_text = all.substr(0, newline);
  const std::string_view npy = newline == std::string_view::npos ? std::string_view() : all.substr(newline + 1);

  symflow::cli::feed_spec spec;
  if (!symflow_fuzz::loads([&] { spec = symflow::cli::parse_feed_spec(spec_text); })) return 0;
  if (spec.name.empty() || spec.path.empty() || spec.name.find('=') != std::string::npos)
    report_bug("parse_feed_spec accepted an empty name or path, or split at a later '='");
  symflow::cli::feed_set fed;
  symflow::graph_tensor value;
  if (!symflow_fuzz::loads([&] {
        symflow::cli::check_feed_name(fixed_graph(), spec.name, fed);
        value = symflow::read_npy(reinterpret_cast<const unsigned char*>(npy.data()), npy.size());
        symflow::cli::add_feed(fixed_graph(), spec.name, value, fed);
      }))
    return 0;
  if (fed.inputs.size() + fed.parameters.names().size() != 1) report_bug("an accepted feed was not stored exactly once");
  if (symflow_fuzz::loads([&] { symflow::cli::add_feed(fixed_graph(), spec.name, value, fed); }))
    report_bug("a second feed of the same name was accepted");
  return 0;
}
