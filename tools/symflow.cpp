// symflow: the command-line tool for graph files (JSON or binary, told apart by their content), and
// the printer of the op reference (docs/ops.md). `symflow --help` lists the commands, `symflow
// COMMAND --help` explains one with examples. Arguments are parsed by CLI11 (Debian's libcli11-dev:
// docs/design.md, "Packages"). Any bad input ends the program with exit code 1 and one line
// "symflow: <reason>" on stderr, so scripts can test the code and show the line.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/ir/op_registry.hpp>
#include <symflow/runtime/interpreter.hpp>

#include "cli_feeds.hpp"
#include "cli_ops.hpp"

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
using cli::usage_error;

constexpr std::string_view overview = R"(Graph files are symflow graph values in either form, told apart by their content: binary
(starting with the magic "SYMFLOWG") or JSON ("format": "symflow.graph"). Feeds and results are
NumPy .npy files. `symflow COMMAND --help` explains a command, with examples.

Exit status: 0 on success, 1 on any bad input (with one line "symflow: <reason>" on stderr).)";

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

// What the command line asked for: one member per option of any command.
struct request {
  std::string file, second;              // FILE, and OUT / IN's partner where a command takes two
  std::vector<std::string> feeds, wrt;   // run --feed, grad --wrt
  std::string out_dir, out_file, of = "0", params;  // run --out, grad -o, grad --of, export --params
};

int inspect_command(const request& r) {
  const auto g = load_graph_file(r.file);
  std::cout << "file: " << r.file << " (" << format_name(g.format) << ", " << g.bytes << " bytes)\n" << inspect(g.value);
  return 0;
}

int dot_command(const request& r) {
  std::cout << to_dot(load_graph_file(r.file).value);
  return 0;
}

int convert_command(const request& r) {
  const auto g = load_graph_file(r.file);
  const auto other = g.format == graph_format::json ? graph_format::binary : graph_format::json;
  const auto to = format_for_output(r.second, other);
  save_graph_file(r.second, g.value, to);
  std::cout << "wrote " << r.second << " (" << format_name(to) << ")\n";
  return 0;
}

// The name of a value: a leaf's, a constant's or a node's.
std::string value_name(const graph& g, std::uint32_t id) {
  std::size_t i = id;
  for (const auto* leaves : {&g.inputs, &g.parameters}) {
    if (i < leaves->size()) return (*leaves)[i].name;
    i -= leaves->size();
  }
  if (i < g.constants.size()) return g.constants[i].name;
  i -= g.constants.size();
  return i < g.nodes.size() ? g.nodes[i].name : std::string();
}

std::string describe_leaf(const graph_leaf& l) { return "'" + l.name + "' (" + graph_type_string(l.type) + ")"; }

int run_command(const request& r) {
  const auto loaded = load_graph_file(r.file);
  const graph& g = loaded.value;
  cli::feed_set fed;
  for (const auto& spec : r.feeds) cli::add_feed_option(g, spec, fed);
  runtime_feeds feeds;
  for (const auto& [name, value] : fed.inputs) feeds.emplace(name, runtime_tensor(value));
  const params& store = fed.parameters;
  for (const auto& in : g.inputs)
    if (!feeds.contains(in.name)) throw usage_error("run: no --feed for input " + describe_leaf(in));
  for (const auto& p : g.parameters)
    if (!p.value && !store.contains(p.name))
      throw usage_error("run: parameter " + describe_leaf(p) + " has no value in the file: give it with --feed");

  const auto outputs = interpreter(g).run(feeds, &store);
  if (!r.out_dir.empty()) std::filesystem::create_directories(r.out_dir);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    std::cout << "output " << k;
    if (const std::string name = value_name(g, g.outputs[k]); !name.empty()) std::cout << " '" << name << "'";
    std::cout << ": " << outputs[k].type_string();
    if (outputs[k].size() == 1)
      visit_dtype(outputs[k].type(), [&](auto t) {
        using T = decltype(t);
        std::ostringstream os;
        os.precision(9);
        os << +*outputs[k].data<T>();
        std::cout << " = " << os.str();
      });
    if (!r.out_dir.empty()) {
      const auto path = (std::filesystem::path(r.out_dir) / ("output_" + std::to_string(k) + ".npy")).string();
      save_npy(path, outputs[k].to_graph_tensor());
      std::cout << " -> " << path;
    }
    std::cout << "\n";
  }
  return 0;
}

// grad --of: an output by its index (0, 1, ...) or by the name of its node.
std::size_t output_position(const graph& g, const std::string& of) {
  if (!of.empty() && std::all_of(of.begin(), of.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const std::size_t k = of.size() > 9 ? g.outputs.size() : std::stoul(of);
    if (k >= g.outputs.size())
      throw usage_error("grad: --of " + of + ": the graph has " + std::to_string(g.outputs.size()) + " outputs");
    return k;
  }
  std::size_t found = g.outputs.size();
  for (std::size_t k = 0; k < g.outputs.size(); ++k)
    if (value_name(g, g.outputs[k]) == of) {
      if (found != g.outputs.size()) throw usage_error("grad: --of '" + detail::excerpt(of, 200) + "' names several outputs: use an index");
      found = k;
    }
  if (found == g.outputs.size())
    throw usage_error("grad: --of '" + detail::excerpt(of, 200) + "': no output is a node of that name (give an index)");
  return found;
}

int grad_command(const request& r) {
  const auto loaded = load_graph_file(r.file);
#if SYMFLOW_CLI_HAS_GRAD
  const graph& g = loaded.value;
  const std::size_t of = output_position(g, r.of);
  // differentiate() takes the gradient of output 0: output `of` goes first, and the outputs get
  // their order back after.
  graph reordered = g;
  std::rotate(reordered.outputs.begin(), reordered.outputs.begin() + std::ptrdiff_t(of),
              reordered.outputs.begin() + std::ptrdiff_t(of) + 1);
  graph d = differentiate(reordered, r.wrt);
  std::rotate(d.outputs.begin(), d.outputs.begin() + 1, d.outputs.begin() + std::ptrdiff_t(of) + 1);
  const auto to = format_for_output(r.out_file, loaded.format);
  save_graph_file(r.out_file, d, to);
  std::cout << "wrote " << r.out_file << " (" << format_name(to) << "): " << d.outputs.size() << " outputs\n";
  for (std::size_t k = 0; k < d.outputs.size(); ++k) {
    std::cout << "  " << k << ": ";
    if (k < g.outputs.size()) std::cout << "output " << k;
    else std::cout << "gradient of output " << of << " with respect to '" << r.wrt[k - g.outputs.size()] << "'";
    std::cout << " : " << graph_type_string(d.type_of(d.outputs[k])) << "\n";
  }
  return 0;
#else
  throw usage_error("grad: not available in this build");
#endif
}

int export_command(const request& r) {
  const auto loaded = load_graph_file(r.file);
#if SYMFLOW_CLI_HAS_ONNX
  std::optional<checkpoint> weights;
  if (!r.params.empty()) weights = load_checkpoint(r.params);
  save_onnx(loaded.value, r.second, weights ? &weights->tensors : nullptr);
  std::cout << "wrote " << r.second << " (ONNX, opset " << onnx_opset << "): " << loaded.value.nodes.size() << " nodes\n";
  return 0;
#else
  throw usage_error("export: not available in this build (it needs libonnx-dev)");
#endif
}

int import_command(const request& r) {
#if SYMFLOW_CLI_HAS_ONNX
  const graph g = load_onnx(r.file);
  const auto to = format_for_output(r.second, graph_format::binary);
  save_graph_file(r.second, g, to);
  std::cout << "wrote " << r.second << " (" << format_name(to) << "): " << g.inputs.size() << " inputs, "
            << g.parameters.size() << " parameters, " << g.nodes.size() << " nodes, " << g.outputs.size() << " outputs\n";
  return 0;
#else
  (void)r;
  throw usage_error("import: not available in this build (it needs libonnx-dev)");
#endif
}

int ops_command(const request&) {
  std::cout << cli::op_reference();
  return 0;
}

// One line of at most 1000 bytes, whatever the message holds (control characters escaped).
std::string one_line(std::string_view s) { return detail::excerpt(s, 1000); }

struct command {
  std::string_view name, brief, summary, examples;
  int (*run)(const request&);
};

// `text` broken into lines of at most `width` characters at spaces.
std::string wrapped(std::string_view text, std::size_t width = 100) {
  std::string out, line;
  std::istringstream words{std::string(text)};
  for (std::string w; words >> w;) {
    if (!line.empty() && line.size() + 1 + w.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  return out + line + "\n";
}

constexpr command commands[] = {
    {"inspect", "counts, leaves, ops, scopes and outputs of a graph file",
     "Counts, inputs, parameters (with the total element count), constants, ops by name, nodes per name "
                "scope, outputs with their types.",
     "  symflow inspect model.sfg\n", inspect_command},
    {"dot", "the graph as Graphviz text, one cluster per name scope",
     "Graphviz text on stdout: one cluster per name scope, dtype and shape on every edge.",
     "  symflow dot model.sfg | dot -Tsvg -o model.svg\n", dot_command},
    {"run", "evaluate a graph on .npy feeds",
     "Evaluates the graph with the interpreter. Every input needs a --feed; a --feed naming a parameter "
            "replaces the value embedded in the file (a parameter without an embedded value needs one). A feed of "
            "another dtype of the same kind is converted to the graph's: int64 labels to int32 (every value must "
            "fit), float64 to float32 (rounded). Prints each output's index, name, dtype and shape (and its value "
            "if it is a scalar); with --out, writes DIR/output_0.npy, DIR/output_1.npy, ...",
     "  symflow run model.sfg --feed x=images.npy --feed y=labels.npy\n"
     "  symflow run model.sfg --feed x=images.npy --feed W=trained_W.npy --out results/\n",
     run_command},
    {"grad", "differentiate a graph with respect to inputs or parameters",
     "Differentiates the graph: OUT has FILE's outputs followed by the gradient of one output (a floating "
             "scalar; --of, by index or node name, default 0) with respect to each --wrt input or parameter. OUT is "
             "JSON if its name ends in .json, binary if it ends in .sfg, else in FILE's form.",
     "  symflow grad model.sfg --wrt W --wrt b -o model_grad.sfg\n"
     "  symflow grad model.sfg --of loss --wrt W -o model_grad.json\n",
     grad_command},
    {"convert", "rewrite a graph file in the other form (JSON, binary)",
     "Rewrites a graph file in the other form (JSON -> binary, binary -> JSON); an OUT name ending in .json "
                "or .sfg chooses the form. Embedded parameter values are kept.",
     "  symflow convert model.sfg model.json\n", convert_command},
    {"export", "write a graph as an ONNX model",
     "Writes the graph as an ONNX model (opset 17; docs/onnx.md). Parameters become initialisers with the "
               "values of the checkpoint (.safetensors) or, without one, those embedded in FILE; others become graph "
               "inputs. An op without an ONNX form is an error naming every such node.",
     "  symflow export model.json model.onnx --params checkpoint.safetensors\n", export_command},
    {"import", "read an ONNX model as a graph file",
     "Reads an ONNX model (opsets 1 to 17; docs/onnx.md) as a graph value and writes it to OUT (JSON if "
               "its name ends in .json, else binary). Floating-point initialisers become parameters with their values "
               "embedded; graph inputs become inputs. An ONNX node that cannot be read is an error naming every such "
               "node and why.",
     "  symflow import model.onnx model.sfg\n", import_command},
    {"ops", "the op reference as Markdown (docs/ops.md)",
     "The op reference as Markdown on stdout: every op of the op list, sorted by name, with its kind, operand "
            "count, attributes and the doc string of its own file (docs/ops.md is this output). Exits 1, naming them, "
            "if some op has no doc string.",
     "  symflow ops > docs/ops.md\n", ops_command},
};

// The command line as CLI11 reads it: one subcommand per command, its positionals and options
// bound to the request.
void describe(CLI::App& app, request& r) {
  app.description("symflow: inspect, draw, run, differentiate, convert, export and import graph files.");
  app.footer(std::string(overview));
  app.require_subcommand(1, 1);
  for (const command& c : commands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.brief));
    sub->footer(wrapped(c.summary) + "\nExamples:\n" + std::string(c.examples));
    const std::string_view n = c.name;
    if (n == "ops") continue;
    const bool two_files = n == "convert" || n == "export" || n == "import";
    sub->add_option(n == "import" ? "MODEL" : n == "convert" ? "IN" : "FILE", r.file,
                    n == "import" ? "an ONNX model (.onnx)" : "a graph file (.sfg binary or .json)")
        ->required();
    if (two_files) sub->add_option(n == "export" ? "OUT.onnx" : "OUT", r.second, "the file to write")->required();
    if (n == "run") {
      sub->add_option("--feed", r.feeds, "NAME=PATH.npy: the value of an input or parameter (repeat for each)")
          ->allow_extra_args(false)
          ->type_name("NAME=PATH");
      sub->add_option("--out", r.out_dir, "write every output to DIR/output_K.npy")->type_name("DIR");
    } else if (n == "grad") {
      sub->add_option("--wrt", r.wrt, "an input or parameter to differentiate with respect to (repeat for each)")
          ->allow_extra_args(false)
          ->required()
          ->type_name("NAME");
      sub->add_option("--of", r.of, "the output to differentiate: its index or its node's name (default 0)")
          ->type_name("OUTPUT");
      sub->add_option("-o", r.out_file, "the graph file to write")->required()->type_name("OUT");
    } else if (n == "export") {
      sub->add_option("--params", r.params, "a checkpoint (.safetensors) with the parameters' values")
          ->type_name("CHECKPOINT");
    }
  }
}

int dispatch(int argc, char** argv) {
  CLI::App app{"", "symflow"};
  request r;
  describe(app, r);
  // The command named first, for messages: CLI11 reports a missing positional without it.
  std::string name;
  if (argc > 1 && argv[1][0] != '-') {
    name = argv[1];
    if (std::none_of(std::begin(commands), std::end(commands), [&](const command& c) { return c.name == name; }))
      throw usage_error("unknown command '" + detail::excerpt(name, 200) +
                        "' (commands: inspect, dot, run, grad, convert, export, import, ops; see symflow --help)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << (name.empty() ? app.help() : app.get_subcommand(name)->help("symflow"));
    return 0;
  } catch (const CLI::ParseError& e) {
    if (name.empty()) throw usage_error("no command given (see symflow --help)");
    throw usage_error(name + ": " + e.what() + " (see symflow " + name + " --help)");
  }
  for (const command& c : commands)
    if (app.got_subcommand(std::string(c.name))) return c.run(r);
  throw usage_error("no command given (see symflow --help)");
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
