#pragma once
// The examples' command lines: CLI11 (Debian's libcli11-dev) parses argv into an app's options.
#include <string>

#include <CLI/CLI.hpp>

#include <symflow/core/error.hpp>

namespace symflow::examples {

// false for --help (the caller prints app.help()); Error (one line naming the flag) for anything
// CLI11 refuses.
template <class Error = value_error>
bool parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return true;
  } catch (const CLI::CallForHelp&) {
    return false;
  } catch (const CLI::ParseError& e) {
    throw Error(std::string(e.what()) + " (see --help)");
  }
}

}  // namespace symflow::examples
