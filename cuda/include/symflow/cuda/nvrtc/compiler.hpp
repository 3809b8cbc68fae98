#pragma once
// NVRTC compilation and the kernel cache for generated code (graph values on the GPU).
//
// A program is its source, the in-memory headers it includes (name and text) and NVRTC's options; its
// key is a 64-bit FNV-1a hash of all of them plus NVRTC's version, so the key changes when an op's
// file changes. Compiled images live in a process-wide in-memory cache (one entry per key; compiling
// needs no GPU) and, when a cache directory is given, on disk as `<key>.ptx` or `<key>.cubin`
// (written to a temporary file and renamed, so readers never see a partial file). Loading onto a
// device uses the CUDA runtime's library API (cudaLibraryLoadData / cudaLibraryGetKernel, CUDA 12+),
// so nothing links libcuda: binaries start on machines without a driver.
//
// Plain host C++ (no kernels of its own): usable from .cpp files compiled by the host compiler.
// Link CUDA::nvrtc and CUDA::cudart.
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <symflow/io/cache_files.hpp>
#include <symflow/core/error.hpp>

namespace symflow::cuda {

// A failing NVRTC call or compilation; the message carries NVRTC's log and the source's first lines.
class nvrtc_error : public symflow::error {
 public:
  using symflow::error::error;
};

namespace nvrtc_detail {

inline void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw nvrtc_error(std::string("NVRTC: ") + what + " failed: " + nvrtcGetErrorString(r));
}

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw nvrtc_error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline int nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return major * 1000 + minor;
}

}  // namespace nvrtc_detail

// One program to compile.
struct nvrtc_program {
  std::string name = "symflow_generated.cu";  // for NVRTC's messages
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // include name, text
  std::string arch = "compute_90";  // compute_XX: PTX (no GPU needed); sm_XX: CUBIN for that GPU
  std::vector<std::string> options{"-std=c++20"};

  std::vector<std::string> all_options() const {
    std::vector<std::string> o{"-arch=" + arch};
    o.insert(o.end(), options.begin(), options.end());
    return o;
  }
  // The cache key: hash of NVRTC's version, the options, the source and every header.
  std::string key() const {
    content_hash h;
    h.add(std::to_string(nvrtc_detail::nvrtc_version()));
    for (const auto& o : all_options()) h.add(o);
    h.add(source);
    for (const auto& [n, t] : headers) {
      h.add(n);
      h.add(t);
    }
    return h.hex();
  }
  bool cubin() const { return arch.rfind("sm_", 0) == 0; }
};

// A compiled program: its image (PTX text or CUBIN bytes) and, once loaded on a device, its kernels.
class compiled_program {
 public:
  compiled_program(std::string key, std::string image, bool cubin, std::string log, bool from_disk)
      : key_(std::move(key)), image_(std::move(image)), cubin_(cubin), log_(std::move(log)), from_disk_(from_disk) {}
  compiled_program(const compiled_program&) = delete;
  compiled_program& operator=(const compiled_program&) = delete;
  ~compiled_program() {
    for (auto& [device, lib] : libraries_) cudaLibraryUnload(lib);  // errors ignored (driver shutdown)
  }

  const std::string& key() const noexcept { return key_; }
  const std::string& image() const noexcept { return image_; }  // PTX (NUL-terminated text) or CUBIN
  bool is_cubin() const noexcept { return cubin_; }
  const std::string& log() const noexcept { return log_; }
  bool loaded_from_disk() const noexcept { return from_disk_; }

  // The kernel `name` on the current device (the program is loaded there on first use; a PTX image
  // is compiled for that device by the driver). Needs a GPU.
  cudaKernel_t kernel(const std::string& name) const {
    int device = 0;
    nvrtc_detail::check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    std::lock_guard lock(mutex_);
    auto lib = libraries_.find(device);
    if (lib == libraries_.end()) {
      cudaLibrary_t l{};
      nvrtc_detail::check_cuda(cudaLibraryLoadData(&l, image_.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                               "cudaLibraryLoadData");
      lib = libraries_.emplace(device, l).first;
    }
    auto k = kernels_.find({device, name});
    if (k == kernels_.end()) {
      cudaKernel_t kernel{};
      nvrtc_detail::check_cuda(cudaLibraryGetKernel(&kernel, lib->second, name.c_str()), "cudaLibraryGetKernel");
      k = kernels_.emplace(std::pair{device, name}, kernel).first;
    }
    return k->second;
  }

 private:
  std::string key_, image_;
  bool cubin_;
  std::string log_;
  bool from_disk_;
  mutable std::mutex mutex_;
  mutable std::map<int, cudaLibrary_t> libraries_;
  mutable std::map<std::pair<int, std::string>, cudaKernel_t> kernels_;
};

// Compiles a program with NVRTC (no GPU needed); throws nvrtc_error with NVRTC's log on failure.
inline std::shared_ptr<compiled_program> compile_program(const nvrtc_program& p) {
  std::vector<const char*> header_texts, header_names;
  for (const auto& [n, t] : p.headers) {
    header_names.push_back(n.c_str());
    header_texts.push_back(t.c_str());
  }
  nvrtcProgram prog{};
  nvrtc_detail::check(nvrtcCreateProgram(&prog, p.source.c_str(), p.name.c_str(), int(header_texts.size()),
                                         header_texts.data(), header_names.data()),
                      "nvrtcCreateProgram");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* q) { nvrtcDestroyProgram(q); });
  const auto opts = p.all_options();
  std::vector<const char*> opt_ptrs;
  for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, int(opt_ptrs.size()), opt_ptrs.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r != NVRTC_SUCCESS) {
    std::string head;
    std::istringstream in(p.source);
    std::string line;
    for (int n = 1; n <= 60 && std::getline(in, line); ++n) head += std::to_string(n) + ": " + line + "\n";
    throw nvrtc_error("NVRTC: compiling " + p.name + " failed (" + nvrtcGetErrorString(r) + "):\n" + log +
                      "\nsource:\n" + head);
  }
  std::string image;
  std::size_t size = 0;
  if (p.cubin()) {
    nvrtc_detail::check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    image.resize(size);
    nvrtc_detail::check(nvrtcGetCUBIN(prog, image.data()), "nvrtcGetCUBIN");
  } else {
    nvrtc_detail::check(nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
    image.resize(size);  // includes the terminating NUL, which cudaLibraryLoadData needs for PTX
    nvrtc_detail::check(nvrtcGetPTX(prog, image.data()), "nvrtcGetPTX");
  }
  return std::make_shared<compiled_program>(p.key(), std::move(image), p.cubin(), std::move(log), false);
}

struct kernel_cache_stats {
  std::size_t compiled = 0;      // NVRTC runs
  std::size_t memory_hits = 0;   // found in memory
  std::size_t disk_hits = 0;     // read from the cache directory
};

// Process-wide cache of compiled programs by key. Thread-safe; an entry lives as long as the process
// (or until clear(); a program is unloaded from the devices when its last user lets it go).
class kernel_cache {
 public:
  // Never destroyed: its programs are not unloaded at exit, when the CUDA runtime may already be
  // shut down (clear() unloads them while it runs).
  static kernel_cache& global() {
    static kernel_cache* c = new kernel_cache;
    return *c;
  }

  // The compiled program for `p`: from memory, else from `disk_dir` (when not empty), else compiled
  // (and then written to `disk_dir`).
  std::shared_ptr<compiled_program> get(const nvrtc_program& p, const std::string& disk_dir = {}) {
    const std::string key = p.key();
    {
      std::lock_guard lock(mutex_);
      if (auto it = entries_.find(key); it != entries_.end()) {
        ++stats_.memory_hits;
        return it->second;
      }
    }
    std::shared_ptr<compiled_program> made;
    const char* ext = p.cubin() ? ".cubin" : ".ptx";
    const std::filesystem::path file = disk_dir.empty() ? std::filesystem::path{} : std::filesystem::path(disk_dir) / (key + ext);
    bool from_disk = false;
    if (!disk_dir.empty()) {
      std::string bytes = read_file_or_empty(file);
      if (!bytes.empty()) {
        made = std::make_shared<compiled_program>(key, std::move(bytes), p.cubin(), "", true);
        from_disk = true;
      }
    }
    if (!made) made = compile_program(p);
    std::lock_guard lock(mutex_);
    auto [it, inserted] = entries_.emplace(key, made);
    if (!inserted) {  // another thread got there first
      ++stats_.memory_hits;
      return it->second;
    }
    if (from_disk) {
      ++stats_.disk_hits;
    } else {
      ++stats_.compiled;
      if (!disk_dir.empty()) write_file_atomically(file, made->image());
    }
    return made;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }
  kernel_cache_stats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
    stats_ = {};
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<compiled_program>> entries_;
  kernel_cache_stats stats_;
};

}  // namespace symflow::cuda
