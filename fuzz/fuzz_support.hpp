#pragma once
// Shared by the libFuzzer targets: what counts as a bug beyond what the sanitizers catch.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <typeinfo>

#include <symflow/core/error.hpp>

namespace symflow_fuzz {

// abort() rather than a return code: libFuzzer reports an abort as a crash and saves the input.
[[noreturn]] inline void report_bug(std::string_view what) {
  std::fprintf(stderr, "symflow fuzz: loader bug: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// Runs a loader on the input; false when it refused it the expected way (a symflow::error).
// Any other exception is a bug: a hostile file must never surface as bad_alloc, out_of_range, ...
template <class Load>
bool loads(Load&& load) {
  try {
    load();
    return true;
  } catch (const symflow::error&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "symflow fuzz: %s: %s\n", typeid(e).name(), e.what());
    report_bug("a loader threw something other than symflow::error");
  } catch (...) {
    report_bug("a loader threw a non-std exception");
  }
}

// Steps after a successful load (re-saving, reloading) must not throw at all: a graph the loader
// accepted is one the writers must handle.
template <class Step>
void must_succeed(std::string_view step, Step&& run) {
  try {
    run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "symflow fuzz: %.*s: %s: %s\n", static_cast<int>(step.size()), step.data(), typeid(e).name(),
                 e.what());
    report_bug("an accepted input failed a later step");
  }
}

}  // namespace symflow_fuzz
