#pragma once
// Compiles generated passes (pass_codegen.hpp) with the system's C++ compiler into shared objects,
// loads them, and caches them by content: in memory for the process, and on disk across processes.
//
// Same results as the interpreter's tile kernels needs the same instructions: the generated file is
// compiled for the target the including program was compiled for (the instruction-set macros it
// sees: __AVX512F__, __FMA__, ... become -mavx512f, -mfma, ...), with its language mode and
// fast-math setting, and with -ffp-contract=off: the interpreter runs each op's function on its own,
// so a multiply in one op and an add in the next are never fused into one FMA there, and must not
// be here. Bit-for-bit equality therefore holds for programs compiled with -ffp-contract=off (GCC's
// default under -std=c++20, not under gnu++20, where contraction inside one op's own function may
// differ: then results agree within rounding). The key hashes the source, the command line, the compiler's --version and
// every file under symflow's include tree, so editing an op's file or changing compilers never reuses
// a stale object.
//
// Loading a shared object runs its code, so the disk cache is trusted only as far as it is private
// (docs/security.md): the directory must be this user's and writable by nobody else (created 0700),
// and each object's SHA-256, recorded when it was built, is checked before dlopen. A directory that
// fails the check is not used at all: the interpreter then runs those groups itself (one warning).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#if defined(__unix__)
#include <dlfcn.h>
#include <unistd.h>
#endif

#include "../io/cache_files.hpp"
#include "../io/files.hpp"
#include "pass_codegen.hpp"

namespace symflow {

struct pass_compiler_options {
  // The compiler: $SYMFLOW_CXX, else "c++" from the PATH.
  std::string compiler;
  // Shared objects and their sources: $SYMFLOW_PASS_CACHE, else $XDG_CACHE_HOME/symflow/passes, else
  // $HOME/.cache/symflow/passes, else <temp>/symflow-passes-<uid>.
  std::filesystem::path cache_dir;
  // symflow's headers: $SYMFLOW_INCLUDE_DIR, else the tree this header sits in.
  std::filesystem::path include_dir;
  // Eigen's headers: $SYMFLOW_EIGEN_INCLUDE_DIR, else where the build found Eigen
  // (SYMFLOW_EIGEN_INCLUDE_DIR, defined by the CMake target), else /usr/include/eigen3.
  std::filesystem::path eigen_include_dir;
};

struct pass_library_stats {
  std::size_t compiled = 0;     // compiler runs that produced a pass
  std::size_t disk_hits = 0;    // passes loaded from the disk cache
  std::size_t memory_hits = 0;  // passes found in memory
  std::size_t failures = 0;     // passes that could not be built (the interpreter ran those itself)
};

namespace pass_detail {

inline std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// The instruction-set and floating-point flags of the program including this header.
inline std::string host_target_flags() {
  std::string f;
#ifdef __STRICT_ANSI__
  f += " -std=c++20";
#else
  f += " -std=gnu++20";
#endif
#ifdef __FAST_MATH__
  f += " -ffast-math";
#endif
#ifdef __SSE3__
  f += " -msse3";
#endif
#ifdef __SSSE3__
  f += " -mssse3";
#endif
#ifdef __SSE4_1__
  f += " -msse4.1";
#endif
#ifdef __SSE4_2__
  f += " -msse4.2";
#endif
#ifdef __AVX__
  f += " -mavx";
#endif
#ifdef __AVX2__
  f += " -mavx2";
#endif
#ifdef __FMA__
  f += " -mfma";
#endif
#ifdef __F16C__
  f += " -mf16c";
#endif
#ifdef __AVX512F__
  f += " -mavx512f";
#endif
#ifdef __AVX512CD__
  f += " -mavx512cd";
#endif
#ifdef __AVX512DQ__
  f += " -mavx512dq";
#endif
#ifdef __AVX512BW__
  f += " -mavx512bw";
#endif
#ifdef __AVX512VL__
  f += " -mavx512vl";
#endif
#ifdef __AVX512FP16__
  f += " -mavx512fp16";
#endif
#ifdef __AVX512BF16__
  f += " -mavx512bf16";
#endif
#ifdef NDEBUG
  f += " -DNDEBUG";
#endif
  return f + " -ffp-contract=off";
}

inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::filesystem::path default_include_dir() {
  if (const char* env = std::getenv("SYMFLOW_INCLUDE_DIR"); env && *env) return env;
  // __FILE__ = <dir>/symflow/runtime/pass_compiler.hpp, as the first include of it spelled the
  // path: through another header that may be ".../symflow/symbolic/../runtime/...", whose
  // parents are not the include folder until the ".." are resolved.
  const std::filesystem::path header = std::filesystem::absolute(__FILE__).lexically_normal();
  return header.parent_path().parent_path().parent_path();
}

inline std::filesystem::path default_eigen_dir() {
#ifdef SYMFLOW_EIGEN_INCLUDE_DIR
  return env_or("SYMFLOW_EIGEN_INCLUDE_DIR", SYMFLOW_EIGEN_INCLUDE_DIR);
#else
  return env_or("SYMFLOW_EIGEN_INCLUDE_DIR", "/usr/include/eigen3");
#endif
}

inline std::filesystem::path default_cache_dir() {
  if (const char* env = std::getenv("SYMFLOW_PASS_CACHE"); env && *env) return env;
  // Under the user's home first: /tmp is shared, and a name there can be taken by another user first.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::filesystem::path(xdg) / "symflow" / "passes";
  if (const char* home = std::getenv("HOME"); home && *home == '/') return std::filesystem::path(home) / ".cache" / "symflow" / "passes";
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
#if defined(__unix__)
  return tmp / ("symflow-passes-" + std::to_string(::getuid()));
#else
  return tmp / "symflow-passes";
#endif
}

// The first line the command prints, or "" when it cannot be run.
inline std::string first_output_line(const std::string& command) {
#if defined(__unix__)
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return {};
  char buf[512];
  std::string line = std::fgets(buf, sizeof buf, p) ? buf : "";
  while (std::fgets(buf, sizeof buf, p)) {
  }
  ::pclose(p);
  return line;
#else
  (void)command;
  return {};
#endif
}

// Every regular file under <include_dir>/symflow, by path and content.
inline std::string include_tree_fingerprint(const std::filesystem::path& include_dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(include_dir / "symflow", ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  content_hash h;
  for (const auto& f : files) {
    h.add(f.lexically_relative(include_dir).string());
    h.add(read_file_or_empty(f));
  }
  return h.hex();
}

}  // namespace pass_detail

// Process-wide: passes by key, each compiled or loaded once. Thread-safe. Loaded objects stay loaded
// for the life of the process (a pass may be running in another thread).
class pass_library {
 public:
  static pass_library& global() {
    static pass_library* library = new pass_library;  // never destroyed: its passes may run at exit
    return *library;
  }

  // The pass for this source, or nullptr when it cannot be built on this machine (no compiler, no
  // writable cache directory, a compile error); last_error() says why. Either answer is remembered.
  pass_function get(const std::string& source, const pass_compiler_options& wanted = {}) {
    std::lock_guard lock(mutex_);
    const pass_compiler_options o = resolved(wanted);
    const std::string command_flags = pass_detail::host_target_flags() + " -O3 -fPIC -shared -w -I" +
                                      pass_detail::quoted(o.include_dir.string()) + " -I" +
                                      pass_detail::quoted(o.eigen_include_dir.string());
    content_hash h;
    h.add(source);
    h.add(o.compiler + command_flags);
    h.add(compiler_identity(o.compiler));
    h.add(tree_fingerprint(o.include_dir));
    const std::string key = h.hex();
    if (auto it = passes_.find(key); it != passes_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
    pass_function f = load_or_build(key, source, o, command_flags);
    passes_.emplace(key, f);
    return f;
  }

  pass_library_stats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  std::string last_error() const {
    std::lock_guard lock(mutex_);
    return last_error_;
  }

 private:
  static pass_compiler_options resolved(pass_compiler_options o) {
    if (o.compiler.empty()) o.compiler = pass_detail::env_or("SYMFLOW_CXX", "c++");
    if (o.cache_dir.empty()) o.cache_dir = pass_detail::default_cache_dir();
    if (o.include_dir.empty()) o.include_dir = pass_detail::default_include_dir();
    if (o.eigen_include_dir.empty()) o.eigen_include_dir = pass_detail::default_eigen_dir();
    return o;
  }

  const std::string& compiler_identity(const std::string& compiler) {
    auto it = identities_.find(compiler);
    if (it == identities_.end())
      it = identities_.emplace(compiler, pass_detail::first_output_line(pass_detail::quoted(compiler) + " --version 2>/dev/null")).first;
    return it->second;
  }
  const std::string& tree_fingerprint(const std::filesystem::path& dir) {
    auto it = fingerprints_.find(dir.string());
    if (it == fingerprints_.end())
      it = fingerprints_.emplace(dir.string(), pass_detail::include_tree_fingerprint(dir)).first;
    return it->second;
  }

  pass_function fail(std::string why) {
    ++stats_.failures;
    last_error_ = std::move(why);
    return nullptr;
  }

  static pass_function open(const std::filesystem::path& object, std::string& why) {
#if defined(__unix__)
    void* handle = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = ::dlerror();
      why = e ? e : "dlopen failed";
      return nullptr;
    }
    void* entry = ::dlsym(handle, pass_entry_name);
    if (!entry) {
      why = object.string() + " has no " + pass_entry_name;
      return nullptr;
    }
    return reinterpret_cast<pass_function>(entry);
#else
    (void)object;
    why = "loading generated code needs dlopen";
    return nullptr;
#endif
  }

  pass_function load_or_build(const std::string& key, const std::string& source, const pass_compiler_options& o,
                              const std::string& command_flags) {
    if (std::string unsafe = prepare_private_directory(o.cache_dir); !unsafe.empty())
      return fail("the pass cache directory is not private, so no code is loaded from it: " + unsafe +
                  " (set pass_compiler_options::cache_dir or SYMFLOW_PASS_CACHE to a directory only you can write)");
    const std::filesystem::path object = o.cache_dir / (key + ".so");
    std::string why;
    std::error_code ec;
    if (std::filesystem::exists(object, ec)) {
      if (verified_entry_matches(object)) {
        if (pass_function f = open(object, why)) {
          ++stats_.disk_hits;
          return f;
        }
      }
      std::filesystem::remove(object, ec);  // unreadable, damaged or not the bytes we built: build it again
    }
    const std::filesystem::path cpp = o.cache_dir / (key + ".cpp");
    if (!write_file_atomically(cpp, source))
      return fail("cannot write " + cpp.string() + " (set pass_compiler_options::cache_dir or SYMFLOW_PASS_CACHE)");
    const std::filesystem::path built = temporary_sibling(object), log = temporary_sibling(o.cache_dir / (key + ".log"));
    const std::string command = pass_detail::quoted(o.compiler) + command_flags + " -o " +
                                pass_detail::quoted(built.string()) + " " + pass_detail::quoted(cpp.string()) + " > " +
                                pass_detail::quoted(log.string()) + " 2>&1";
    const int status = std::system(command.c_str());
    if (status != 0) {
      std::string output = read_file_or_empty(log);
      if (output.size() > 2000) output.resize(2000);
      std::filesystem::remove(built, ec);
      std::filesystem::rename(log, o.cache_dir / (key + ".log"), ec);
      return fail("compiling a generated pass failed (" + command + "): " + output);
    }
    std::filesystem::remove(log, ec);
    // The digest first, then the object under its name: a reader that sees the new object with the
    // old digest refuses it and rebuilds, never the other way round.
    const std::string digest = sha256::of(read_file_or_empty(built));
    if (!write_file_atomically(object.string() + ".sha256", digest)) {
      std::filesystem::remove(built, ec);
      return fail("cannot write " + object.string() + ".sha256");
    }
    std::filesystem::rename(built, object, ec);
    if (ec) {
      std::filesystem::remove(built, ec);
      return fail("cannot write " + object.string());
    }
    if (!verified_entry_matches(object)) return fail(object.string() + " changed between compiling and loading it");
    pass_function f = open(object, why);
    if (!f) return fail("cannot load " + object.string() + ": " + why);
    ++stats_.compiled;
    return f;
  }

  mutable std::mutex mutex_;
  std::map<std::string, pass_function> passes_;
  std::map<std::string, std::string> identities_, fingerprints_;
  pass_library_stats stats_;
  std::string last_error_;
};

}  // namespace symflow
