#pragma once
// Forced into every fuzz translation unit (-include). libFuzzer here comes with Debian's clang 14,
// whose missing __builtin_source_location makes libstdc++'s <source_location> empty, and symflow
// records where each node was built with std::source_location. This supplies the same interface from
// the older builtins clang 14 does have; with clang 15 or later the condition is false and the
// standard header is used as is.
#if defined(__clang__) && !__has_builtin(__builtin_source_location)
#include <cstdint>
#include <source_location>

namespace std {
struct source_location {
  // The builtins in default arguments are evaluated where current() is called, as the standard requires.
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           uint_least32_t line = __builtin_LINE(),
                                           uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location here;
    here.file_ = file;
    here.function_ = function;
    here.line_ = line;
    here.column_ = column;
    return here;
  }
  constexpr source_location() noexcept = default;
  constexpr uint_least32_t line() const noexcept { return line_; }
  constexpr uint_least32_t column() const noexcept { return column_; }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  uint_least32_t line_ = 0;
  uint_least32_t column_ = 0;
};
}  // namespace std
#endif
