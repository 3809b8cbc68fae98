#pragma once
// The C++ spelling of a type as the host compiler's ABI names it ("symflow::ops::cast_op<long>"),
// for code generated at run time that calls an op through its type (the CPU pass generator and the
// NVRTC kernel generator).
#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

#include "../core/error.hpp"

namespace symflow {

template <class T>
std::string type_spelling() {
#if __has_include(<cxxabi.h>)
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status), std::free);
  if (status == 0 && s) return s.get();
#endif
  throw error(std::string("cannot spell the C++ type ") + typeid(T).name() + " (no ABI demangler)");
}

}  // namespace symflow
