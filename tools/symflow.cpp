// symflow: the command-line tool for graph files (JSON or binary, told apart by their content), and
// the printer of the op reference (docs/ops.md).
//   symflow inspect FILE
//   symflow dot FILE
//   symflow run FILE --feed NAME=PATH.npy ... [--out DIR]
//   symflow grad FILE --wrt NAME [--wrt NAME ...] -o OUT
//   symflow convert IN OUT
//   symflow export FILE OUT.onnx [--params CHECKPOINT]
//   symflow import MODEL.onnx OUT
//   symflow ops
// Any bad input ends the program with exit code 1 and one line "symflow: <reason>" on stderr, so
// scripts can test the code and show the line.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/ir/op_registry.hpp>
#include <symflow/runtime/interpreter.hpp>

#include "cli_feeds.hpp"

#if SYMFLOW_CLI_HAS_ONNX
#include <symflow/io/onnx.hpp>
#include <symflow/runtime/onnx_import.hpp>
#include <symflow/train/checkpoint.hpp>
#endif

#if __has_include(<symflow/runtime/grad.hpp>)
#include <symflow/runtime/grad.hpp>
#define SYMFLOW_CLI_HAS_GRAD 1
#else
#define SYMFLOW_CLI_HAS_GRAD 0
#endif

namespace {

using namespace symflow;

constexpr std::string_view usage_text = R"(usage: symflow <command> [arguments]

Graph files are symflow graph values in either form, told apart by their content: binary
(starting with the magic "SYMFLOWG") or JSON ("format": "symflow.graph").

commands:
  inspect FILE
      Counts, inputs, parameters (with the total element count), constants, ops by name, nodes
      per name scope, outputs with their types.
  dot FILE
      Graphviz text on stdout: one cluster per name scope, dtype and shape on every edge.
      Render with: symflow dot model.sfg | dot -Tsvg -o model.svg
  run FILE --feed NAME=PATH.npy [--feed NAME=PATH.npy ...] [--out DIR]
      Evaluates the graph with the interpreter. Every input needs a --feed; a --feed naming a
      parameter replaces the value embedded in the file (a parameter without an embedded value
      needs one). Prints each output's dtype and shape; with --out, writes DIR/output_0.npy,
      DIR/output_1.npy, ... (DIR is created if missing).
  grad FILE --wrt NAME [--wrt NAME ...] -o OUT
      Differentiates the graph: OUT has FILE's outputs followed by the gradient of the first
      output (a floating scalar) with respect to each named input or parameter. OUT is JSON if
      its name ends in .json, binary if it ends in .sfg, else in FILE's form.
  convert IN OUT
      Rewrites a graph file in the other form (JSON -> binary, binary -> JSON); an OUT name
      ending in .json or .sfg chooses the form explicitly. Embedded parameter values are kept.
  export FILE OUT.onnx [--params CHECKPOINT]
      Writes the graph as an ONNX model (opset 17; docs/onnx.md). Parameters become initialisers
      with the values of the checkpoint (.safetensors) or, without one, those embedded in FILE;
      others become graph inputs. An op without an ONNX form is an error naming every such node.
  import MODEL.onnx OUT
      Reads an ONNX model (opsets 1 to 17; docs/onnx.md) as a graph value and writes it to OUT
      (JSON if its name ends in .json, else binary). Floating-point initialisers become
      parameters with their values embedded; graph inputs become inputs. An ONNX node that
      cannot be read is an error naming every such node and why.
  ops
      The op reference as Markdown on stdout: every op of the op list, sorted by name, with its
      kind, operand count, attributes and the doc string of its own file (docs/ops.md is this
      output: symflow ops > docs/ops.md). Exits 1, naming them, if some op has no doc string.

  --help, -h    this text

Exit status: 0 on success, 1 on any bad input (with one line "symflow: <reason>" on stderr).
)";

using cli::usage_error;

enum class graph_format { json, binary };

std::string_view format_name(graph_format f) { return f == graph_format::json ? "JSON" : "binary"; }

struct loaded_graph {
  graph value;
  graph_format format;
  std::size_t bytes;
};

// Binary files announce themselves with their magic; anything else must parse as the JSON form.
loaded_graph load_graph_file(const std::string& path) {
  // A regular file of at most graph_file_max_bytes (2 GiB): a directory, /dev/zero or a FIFO is refused unread.
  const auto bytes = read_file_bytes(path, graph_file_max_bytes, "graph file");
  const bool binary = bytes.size() >= graph_binary_magic.size() &&
                      std::memcmp(bytes.data(), graph_binary_magic.data(), graph_binary_magic.size()) == 0;
  try {
    if (binary) return {load_graph_binary(bytes), graph_format::binary, bytes.size()};
    std::size_t first = 0;
    while (first < bytes.size() && std::isspace(bytes[first])) ++first;
    if (first == bytes.size() || bytes[first] != '{')
      throw graph_error("not a symflow graph file (neither the binary magic SYMFLOWG nor a JSON object)");
    return {load_graph_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())),
            graph_format::json, bytes.size()};
  } catch (const error& e) {
    throw graph_error(detail::printable_path(path) + ": " + e.what());
  }
}

// The form an output file gets: its extension when it names one, else `otherwise`.
graph_format format_for_output(const std::string& path, graph_format otherwise) {
  const auto ext = std::filesystem::path(path).extension().string();
  if (ext == ".json") return graph_format::json;
  if (ext == ".sfg") return graph_format::binary;
  return otherwise;
}

void save_graph_file(const std::string& path, const graph& g, graph_format f) {
  if (f == graph_format::json) save_graph_json_file(path, g);
  else save_graph_binary_file(path, g);
}

// Arguments after the command: positional ones in order, options with their values.
struct arguments {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;

  std::vector<std::string> all(const std::string& key) const {
    std::vector<std::string> out;
    for (auto [it, end] = options.equal_range(key); it != end; ++it) out.push_back(it->second);
    return out;
  }
  std::optional<std::string> single(const std::string& command, const std::string& key) const {
    const auto v = all(key);
    if (v.size() > 1) throw usage_error(command + ": " + key + " given more than once");
    if (v.empty()) return std::nullopt;
    return v.front();
  }
};

// Options that take a value, per command; "--name=value" and "--name value" are both accepted.
arguments parse_arguments(const std::string& command, const std::vector<std::string>& args,
                          const std::vector<std::string>& value_options, std::size_t positional_count) {
  arguments out;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if (a.size() > 1 && a[0] == '-') {
      std::string key = a, value;
      bool inline_value = false;
      if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos) {
        key = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      if (std::find(value_options.begin(), value_options.end(), key) == value_options.end())
        throw usage_error(command + ": unknown option '" + key + "' (see symflow --help)");
      if (!inline_value) {
        if (k + 1 >= args.size()) throw usage_error(command + ": option " + key + " needs a value");
        value = args[++k];
      }
      out.options.emplace(key, value);
    } else {
      out.positional.push_back(a);
    }
  }
  if (out.positional.size() != positional_count) {
    const std::string expected = positional_count == 1 ? "one file" : std::to_string(positional_count) + " files";
    throw usage_error(command + ": expected " + expected + ", got " + std::to_string(out.positional.size()) +
                      " (see symflow --help)");
  }
  return out;
}

int inspect_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("inspect", args, {}, 1);
  const auto g = load_graph_file(a.positional[0]);
  std::cout << "file: " << a.positional[0] << " (" << format_name(g.format) << ", " << g.bytes << " bytes)\n"
            << inspect(g.value);
  return 0;
}

int dot_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("dot", args, {}, 1);
  std::cout << to_dot(load_graph_file(a.positional[0]).value);
  return 0;
}

int convert_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("convert", args, {}, 2);
  const auto g = load_graph_file(a.positional[0]);
  const auto other = g.format == graph_format::json ? graph_format::binary : graph_format::json;
  const auto to = format_for_output(a.positional[1], other);
  save_graph_file(a.positional[1], g.value, to);
  std::cout << "wrote " << a.positional[1] << " (" << format_name(to) << ")\n";
  return 0;
}

std::string describe_leaf(const graph_leaf& l) { return "'" + l.name + "' (" + graph_type_string(l.type) + ")"; }

int run_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("run", args, {"--feed", "--out"}, 1);
  const auto loaded = load_graph_file(a.positional[0]);
  const graph& g = loaded.value;
  const auto out_dir = a.single("run", "--out");

  cli::feed_set fed;
  for (const auto& spec : a.all("--feed")) cli::add_feed_option(g, spec, fed);
  runtime_feeds feeds;
  for (const auto& [name, value] : fed.inputs) feeds.emplace(name, runtime_tensor(value));
  const params& store = fed.parameters;
  for (const auto& in : g.inputs)
    if (!feeds.contains(in.name)) throw usage_error("run: no --feed for input " + describe_leaf(in));
  for (const auto& p : g.parameters)
    if (!p.value && !store.contains(p.name))
      throw usage_error("run: parameter " + describe_leaf(p) + " has no value in the file: give it with --feed");

  const auto outputs = interpreter(g).run(feeds, &store);
  if (out_dir) std::filesystem::create_directories(*out_dir);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    std::cout << "output " << k << ": " << outputs[k].type_string();
    if (outputs[k].size() == 1)
      visit_dtype(outputs[k].type(), [&](auto t) {
        using T = decltype(t);
        std::ostringstream os;
        os.precision(9);
        os << +*outputs[k].data<T>();
        std::cout << " = " << os.str();
      });
    if (out_dir) {
      const auto path = (std::filesystem::path(*out_dir) / ("output_" + std::to_string(k) + ".npy")).string();
      save_npy(path, outputs[k].to_graph_tensor());
      std::cout << " -> " << path;
    }
    std::cout << "\n";
  }
  return 0;
}

int grad_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("grad", args, {"--wrt", "-o"}, 1);
  const auto wrt = a.all("--wrt");
  if (wrt.empty()) throw usage_error("grad: name at least one input or parameter with --wrt");
  const auto out = a.single("grad", "-o");
  if (!out) throw usage_error("grad: name the output file with -o");
  const auto loaded = load_graph_file(a.positional[0]);
#if SYMFLOW_CLI_HAS_GRAD
  const graph d = differentiate(loaded.value, wrt);
  const auto to = format_for_output(*out, loaded.format);
  save_graph_file(*out, d, to);
  std::cout << "wrote " << *out << " (" << format_name(to) << "): " << d.outputs.size() << " outputs\n";
  for (std::size_t k = 0; k < d.outputs.size(); ++k) {
    std::cout << "  " << k << ": ";
    if (k < loaded.value.outputs.size()) std::cout << "output " << k;
    else std::cout << "gradient of output 0 with respect to '" << wrt[k - loaded.value.outputs.size()] << "'";
    std::cout << " : " << graph_type_string(d.type_of(d.outputs[k])) << "\n";
  }
  return 0;
#else
  throw usage_error("grad: not available in this build");
#endif
}

int export_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("export", args, {"--params"}, 2);
  const auto loaded = load_graph_file(a.positional[0]);
#if SYMFLOW_CLI_HAS_ONNX
  std::optional<checkpoint> weights;
  if (const auto path = a.single("export", "--params")) weights = load_checkpoint(*path);
  save_onnx(loaded.value, a.positional[1], weights ? &weights->tensors : nullptr);
  std::cout << "wrote " << a.positional[1] << " (ONNX, opset " << onnx_opset << "): " << loaded.value.nodes.size()
            << " nodes\n";
  return 0;
#else
  throw usage_error("export: not available in this build (it needs libonnx-dev)");
#endif
}

int import_command(const std::vector<std::string>& args) {
  const auto a = parse_arguments("import", args, {}, 2);
#if SYMFLOW_CLI_HAS_ONNX
  const graph g = load_onnx(a.positional[0]);
  const auto to = format_for_output(a.positional[1], graph_format::binary);
  save_graph_file(a.positional[1], g, to);
  std::cout << "wrote " << a.positional[1] << " (" << format_name(to) << "): " << g.inputs.size() << " inputs, "
            << g.parameters.size() << " parameters, " << g.nodes.size() << " nodes, " << g.outputs.size() << " outputs\n";
  return 0;
#else
  throw usage_error("import: not available in this build (it needs libonnx-dev)");
#endif
}

// The op reference (symflow ops; docs/ops.md is its output). Everything comes from the op list:
// registered_ops (ir/op_registry.hpp) gives each op's type, whose `doc` member is the paragraph,
// and the op's schema gives the operand count and the attributes a graph file spells.
std::string_view kind_word(node_kind k) {
  switch (k) {
    case node_kind::elementwise: return "elementwise";
    case node_kind::reduction: return "reduction";
    case node_kind::view: return "view";
    case node_kind::kernel: return "kernel";
    default: return "other";
  }
}

std::string operand_count(const op_schema& s) {
  if (s.max_inputs == unbounded_inputs) return std::to_string(s.min_inputs) + " or more";
  if (s.min_inputs == s.max_inputs) return std::to_string(s.min_inputs);
  return std::to_string(s.min_inputs) + " to " + std::to_string(s.max_inputs);
}

std::string attribute_list(const op_schema& s) {
  if (s.attributes.empty()) return "none";
  std::string out;
  for (const auto& a : s.attributes) {
    if (!out.empty()) out += ", ";
    out.append("`").append(a.key).append("` (").append(attribute_kind_name(a.kind)).append(a.optional ? ", optional" : "").append(")");
  }
  return out;
}

// A doc string as Markdown text: a `*` or `_` that could start or end emphasis (i*stride) and a `<`
// that could open an HTML tag (expand_dims<Bits>) are escaped; backquotes stay code spans.
std::string markdown_text(std::string_view doc) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const char c = doc[i], before = i ? doc[i - 1] : ' ', after = i + 1 < doc.size() ? doc[i + 1] : ' ';
    const bool escape = c == '\\' || (c == '*' && !(before == ' ' && after == ' ')) ||
                        (c == '_' && !(word(before) && word(after))) ||
                        (c == '<' && (std::isalpha(static_cast<unsigned char>(after)) || after == '/' || after == '!' || after == '?'));
    if (escape) out += '\\';
    out += c;
  }
  return out;
}

int ops_command(const std::vector<std::string>& args) {
  parse_arguments("ops", args, {}, 0);
  struct entry {
    std::string_view name, doc;
    node_kind kind;
    std::string file;  // under include/symflow/
    bool control_flow = false;
  };
  std::vector<entry> entries;
  std::vector<std::string> missing;
  std::apply(
      [&](auto... listed) {
        auto read = [&]<class E>(E) {
          using op = typename E::type;
          if constexpr (requires { std::string_view(op::doc); }) {
            if (!std::string_view(op::doc).empty()) {
              entries.push_back({op::name, op::doc, E::kind, "ops/" + std::string(op_file_of(op::name))});
              return;
            }
          }
          missing.emplace_back(op::name);
        };
        (read(listed), ...);
      },
      registered_ops{});
  // The control-flow ops (ir/control_flow/): graph nodes whose attributes hold sub-graphs.
  std::apply(
      [&](auto... op) {
        (entries.push_back({op.name, op.doc, node_kind::kernel, "ir/control_flow/" + std::string(op.file), true}), ...);
      },
      control_flow::registered{});
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) {
      if (!names.empty()) names += ", ";
      names += m;
    }
    throw value_error("ops: no doc string for " + names + " (each op struct needs a `doc` member: see ops/softsign.hpp)");
  }
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) { return a.name < b.name; });

  std::ostringstream out;
  out << "# Op reference\n\n"
         "Generated by `symflow ops > docs/ops.md` from the op list (`include/symflow/ops/list.hpp`) and the\n"
         "`doc` string in each op's own file: do not edit it by hand. To change an entry, edit the op's `doc`\n"
         "member and regenerate; the `cli_ops` test fails while this file differs from the tool's output.\n"
         "Kinds, operand counts and attribute names are those of the graph form (`ir/op_registry.hpp`); in C++\n"
         "some attributes are template arguments, as each entry says. The dtypes an entry names are the\n"
         "compute dtypes (f32, f64, i32, i64, bool); in a graph value an operand of a storage dtype (f16, bf16,\n"
         "i8, u8, i16, u16, u32, u64) is taken as the dtype it computes in and the result is stored back\n"
         "(docs/dtypes.md); `cast` converts between any two dtypes.\n\n"
         "| op | kind | operands |\n|---|---|---|\n";
  for (const auto& e : entries) {
    const op_schema* s = find_op_schema(e.name);
    out << "| [" << e.name << "](#" << e.name << ") | " << (e.control_flow ? "control flow" : kind_word(e.kind)) << " | " << (s ? operand_count(*s) : "?") << " |\n";
  }
  for (const auto& e : entries) {
    const op_schema* s = find_op_schema(e.name);
    out << "\n## " << e.name << "\n\n"
        << "Kind: " << (e.control_flow ? "control flow" : kind_word(e.kind)) << ". Operands: " << (s ? operand_count(*s) : "?")
        << ". Attributes: " << (s ? attribute_list(*s) : "?") << ". File: `include/symflow/" << e.file
        << "`.\n\n"
        << markdown_text(e.doc) << "\n";
  }
  std::cout << out.str();
  return 0;
}

// One line of at most 1000 bytes, whatever the message holds (control characters escaped).
std::string one_line(std::string_view s) { return detail::excerpt(s, 1000); }

int dispatch(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << usage_text;
      return 0;
    }
  if (args.empty()) throw usage_error("no command given (see symflow --help)");
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "inspect") return inspect_command(args);
  if (command == "dot") return dot_command(args);
  if (command == "run") return run_command(args);
  if (command == "grad") return grad_command(args);
  if (command == "convert") return convert_command(args);
  if (command == "export") return export_command(args);
  if (command == "import") return import_command(args);
  if (command == "ops") return ops_command(args);
  throw usage_error("unknown command '" + command +
                    "' (commands: inspect, dot, run, grad, convert, export, import, ops; see symflow --help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    // symflow::error for everything the library checks; std::exception for the rest (a full
    // disk, an allocation that fails).
    std::cerr << "symflow: " << one_line(e.what()) << std::endl;
  } catch (...) {
    std::cerr << "symflow: unknown error" << std::endl;
  }
  return 1;
}
