#pragma once
// Checkpoints: params stores (model parameters, optimiser state) and string metadata in the
// safetensors format, so other tools can read them:
//
//   u64 little-endian N | N bytes of JSON header | data section
//
// The header is a JSON object: for every tensor "name": {"data_offsets": [begin, end], "dtype": "F32",
// "shape": [2, 3]} with offsets relative to the data section, and optionally "__metadata__": an object
// of string values. symflow writes keys sorted, tensors in name order with no gaps, and pads the
// header with spaces so the data starts at a multiple of 8 bytes. Dtypes: every row of the dtype table
// (core/dtype.hpp: F32 F64 I32 I64 BOOL F16 BF16 I8 U8 I16 U16 U32 U64), kept as written.
//
// Saving is atomic: the file is written as PATH.tmp.<pid>, flushed and fsynced, renamed over PATH,
// and the directory is fsynced, so a crash leaves either the old checkpoint or the new one. A
// writer killed mid-write leaves its PATH.tmp.<pid> behind; the next save of PATH removes those
// whose pid no longer names a process (kill(pid, 0) fails with ESRCH).
// Loading validates every field before allocating (safetensors_header.hpp) and names the first
// problem in a checkpoint_error; it never allocates more than the file's size justifies.
//
// Needs nlohmann-json 3 (Debian: nlohmann-json3-dev; CMake: find_package(nlohmann_json 3 REQUIRED),
// link nlohmann_json::nlohmann_json) and POSIX (fsync, rename).
//
// The definitions are in checkpoint_impl.hpp (with the JSON parser they use), compiled once per
// program under SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp).
#include <bit>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "../core/params.hpp"
#include "../core/separate_compilation.hpp"
#include "../io/checkpoint_error.hpp"

namespace symflow {

static_assert(std::endian::native == std::endian::little,
              "symflow checkpoints copy tensor bytes as they are: safetensors data is little-endian");

// One params store saved under a name prefix: {"", model} and {"adam/", optimizer_state} give
// "W" and "adam/W".
struct checkpoint_part {
  std::string prefix;
  const params& store;
};

// What a checkpoint file holds.
struct checkpoint {
  params tensors;
  checkpoint_metadata metadata;

  // The tensors whose names start with prefix, under their names without it.
  params part(std::string_view prefix) const;
};

// The bytes of a safetensors file holding the given parts and metadata.
SYMFLOW_LIBRARY_LINKAGE std::vector<unsigned char> encode_checkpoint(std::initializer_list<checkpoint_part> parts,
                                                                     const checkpoint_metadata& metadata = {});
SYMFLOW_LIBRARY_LINKAGE std::vector<unsigned char> encode_checkpoint(const params& tensors,
                                                                     const checkpoint_metadata& metadata = {});

// Reads safetensors bytes (source names them in errors).
SYMFLOW_LIBRARY_LINKAGE checkpoint decode_checkpoint(const unsigned char* data, std::size_t size,
                                                     const std::string& source = "<memory>");
SYMFLOW_LIBRARY_LINKAGE checkpoint decode_checkpoint(const std::vector<unsigned char>& bytes,
                                                     const std::string& source = "<memory>");

// Saves parts (e.g. {{"", model}, {"adam/", optimizer_state}}) and metadata to path, atomically.
SYMFLOW_LIBRARY_LINKAGE void save_checkpoint(const std::string& path, std::initializer_list<checkpoint_part> parts,
                                             const checkpoint_metadata& metadata = {});
SYMFLOW_LIBRARY_LINKAGE void save_checkpoint(const std::string& path, const params& tensors,
                                             const checkpoint_metadata& metadata = {});

// Loads and validates a checkpoint file; tensors are read straight into their own storage.
SYMFLOW_LIBRARY_LINKAGE checkpoint load_checkpoint(const std::string& path);

}  // namespace symflow

#if !SYMFLOW_LIBRARY_DECLARED_ONLY
#include "checkpoint_impl.hpp"
#endif
