#pragma once

namespace symflow {

// Where user code built a node: file and line of the call. Functions that build nodes take one as a
// default argument (`source_site where = source_site::current()`), which records their caller.
//
// Not source_site: its current() also records the name of the enclosing function, which g++
// spells with every template argument written out. Inside derivative rules and library templates
// those arguments are model types whose subexpressions are shared, and the name grows
// exponentially with the model's depth: compile time, compiler memory and object size with it
// (docs/design.md, "What makes g++ slow on shared types").
class source_site {
 public:
  constexpr source_site() = default;
  static constexpr source_site current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) noexcept {
    source_site s;
    s.file_ = file;
    s.line_ = line;
    return s;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr unsigned line() const noexcept { return line_; }

 private:
  const char* file_ = "";
  unsigned line_ = 0;
};

}  // namespace symflow
