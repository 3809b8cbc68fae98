#pragma once
// ONNX TensorProto <-> graph_tensor, for the importer (onnx_import.hpp) and the conformance
// driver's test data. A TensorProto read from a file is untrusted: its dims, dtype and data fields
// are checked against each other and against a size bound before anything is allocated.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../ir/graph.hpp"

namespace symflow {

// An ONNX model cannot be imported: unsupported ops, attributes or dtypes (every one listed), a
// malformed or oversized file, or a graph whose nodes do not fit the ops' rules.
class onnx_import_error : public error {
 public:
  using error::error;
};

namespace onnx_detail {

// The symflow dtype of an ONNX TensorProto.DataType code, or an error naming it.
inline dtype dtype_of_onnx_code(std::int32_t code, const std::string& who) {
  if (const auto d = find_dtype(&dtype_info::onnx, code)) return *d;
  const std::string name = onnx::TensorProto_DataType_IsValid(code)
                               ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code))
                               : std::string("an unknown code");
  throw onnx_import_error(who + ": ONNX data type " + std::to_string(code) + " (" + name + ") is not a symflow dtype");
}

// A TensorProto of the given dtype and extents holding `size` bytes as raw_data (little-endian, as
// ONNX's raw_data and a graph_tensor are).
inline void set_tensor(onnx::TensorProto& out, const std::string& name, dtype type, const std::vector<std::int64_t>& extents,
                       const void* bytes, std::size_t size) {
  out.set_name(name);
  out.set_data_type(dtype_info_of(type).onnx);
  for (std::int64_t e : extents) out.add_dims(e);
  out.set_raw_data(std::string(static_cast<const char*>(bytes), size));
}

// Element count of dims, refusing negative dims and counts over `max_elements`.
inline std::size_t checked_count(const google::protobuf::RepeatedField<std::int64_t>& dims, std::size_t max_elements,
                                 const std::string& who) {
  std::size_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) throw onnx_import_error(who + ": negative extent " + std::to_string(d));
    if (d != 0 && n > max_elements / std::size_t(d))
      throw onnx_import_error(who + ": more than " + std::to_string(max_elements) + " elements");
    n *= std::size_t(d);
  }
  if (n > max_elements) throw onnx_import_error(who + ": more than " + std::to_string(max_elements) + " elements");
  return n;
}

template <class Field>
void check_field_size(const Field& f, std::size_t n, const char* field, const std::string& who) {
  if (std::size_t(f.size()) != n)
    throw onnx_import_error(who + ": " + field + " holds " + std::to_string(f.size()) + " values for " +
                            std::to_string(n) + " elements");
}

}  // namespace onnx_detail

// The tensor's elements as a graph_tensor (C order, little-endian bytes). `who` names it in errors;
// `max_bytes` bounds its size.
inline graph_tensor from_onnx_tensor(const onnx::TensorProto& t, const std::string& who, std::size_t max_bytes) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    throw onnx_import_error(who + ": data in external files is not read");
  if (t.has_segment()) throw onnx_import_error(who + ": segmented tensors are not read");
  graph_tensor out;
  out.type = onnx_detail::dtype_of_onnx_code(t.data_type(), who);
  const std::size_t size = dtype_size(out.type);
  const std::size_t n = onnx_detail::checked_count(t.dims(), max_bytes / size, who);
  out.extents.assign(t.dims().begin(), t.dims().end());
  out.bytes.resize(n * size);
  unsigned char* dst = out.bytes.data();
  if (t.has_raw_data()) {
    if (t.raw_data().size() != out.bytes.size())
      throw onnx_import_error(who + ": raw_data holds " + std::to_string(t.raw_data().size()) + " bytes for " +
                              std::to_string(n) + " elements of " + std::string(dtype_name(out.type)));
    if (n) std::memcpy(dst, t.raw_data().data(), out.bytes.size());
    if (out.type == dtype::boolean)  // one byte each, 0 or 1 in a graph_tensor
      for (auto& b : out.bytes) b = b != 0;
    return out;
  }
  // Typed fields (onnx.proto): each element in the field of its C++ type's kind: float_data,
  // double_data, int64_data, uint64_data for u32 and u64, and int32_data for the narrower integers,
  // bool and the 16-bit floats' bits.
  visit_dtype(out.type, [&](auto zero) {
    using T = decltype(zero);
    const auto copy = [&](const auto& field, const char* name) {
      onnx_detail::check_field_size(field, n, name, who);
      for (std::size_t i = 0; i < n; ++i) {
        const auto v = field.Get(int(i));
        if constexpr (std::is_same_v<T, bool>) {
          dst[i] = v != 0;
        } else if constexpr (std::is_arithmetic_v<T>) {
          const T x = static_cast<T>(v);
          std::memcpy(dst + i * size, &x, size);
        } else {  // f16, bf16: their bits, the low 16 of the int32
          const std::uint16_t bits = static_cast<std::uint16_t>(v);
          std::memcpy(dst + i * size, &bits, size);
        }
      }
    };
    if constexpr (std::is_same_v<T, float>) copy(t.float_data(), "float_data");
    else if constexpr (std::is_same_v<T, double>) copy(t.double_data(), "double_data");
    else if constexpr (std::is_same_v<T, std::int64_t>) copy(t.int64_data(), "int64_data");
    else if constexpr (std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>) copy(t.uint64_data(), "uint64_data");
    else copy(t.int32_data(), "int32_data");
  });
  return out;
}

// The tensor as an ONNX TensorProto with raw_data.
inline onnx::TensorProto to_onnx_tensor(const graph_tensor& t, const std::string& name) {
  onnx::TensorProto out;
  onnx_detail::set_tensor(out, name, t.type, t.extents, t.bytes.data(), t.bytes.size());
  return out;
}

}  // namespace symflow
