#pragma once
#include <stdexcept>
#include <string>

namespace symflow {

// Every runtime failure the library reports derives from this, so one catch handles all of them.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An extent known only at run time did not match what an op needs.
class shape_error : public error {
 public:
  using error::error;
};

// A value fed or stored has the wrong dtype, or a name was not found.
class value_error : public error {
 public:
  using error::error;
};

// A file given as input is not a regular file, cannot be read, or is larger than the limit of the
// format read from it. The message names the file, what was wrong and the limit.
class file_error : public error {
 public:
  using error::error;
};

}  // namespace symflow
