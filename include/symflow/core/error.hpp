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

}  // namespace symflow
