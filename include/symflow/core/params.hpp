#pragma once
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "aligned_buffer.hpp"
#include "tensor.hpp"

namespace symflow {

// Named tensors of any dtype and shape: the values of variables. Every typed access checks the
// dtype and the extents against what the caller expects and names the variable when they differ.
class params {
 public:
  struct entry {
    dtype type{};
    std::vector<std::size_t> extents;
    aligned_buffer<unsigned char> bytes;
  };

  template <class T, class S>
  void set(std::string name, const tensor<T, S>& value) {
    entry e{dtype_v<T>, {value.extents().begin(), value.extents().end()},
            aligned_buffer<unsigned char>(value.size() * sizeof(T))};
    if (value.size()) std::memcpy(e.bytes.data(), value.data(), value.size() * sizeof(T));
    entries_.insert_or_assign(std::move(name), std::move(e));
  }

  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_) out.push_back(name);
    return out;
  }
  const entry& at(std::string_view name) const { return const_cast<params*>(this)->at(name); }
  entry& at(std::string_view name) {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw value_error("params: no value for variable '" + std::string(name) + "'");
    return it->second;
  }

  // The stored value as a tensor_view of the static shape S; throws value_error or shape_error.
  template <class T, shape_spec S>
  tensor_view<T, S> view(std::string_view name) {
    entry& e = at(name);
    if (e.type != dtype_v<T>)
      throw value_error("params: variable '" + std::string(name) + "' holds " +
                        std::string(dtype_name(e.type)) + " values, not " + std::string(dtype_name(dtype_v<T>)));
    if (e.extents.size() != S::rank)
      throw shape_error("params: variable '" + std::string(name) + "' has shape " + format_extents(e.extents) +
                        ", expected " + shape_string<S>());
    extents_t<S::rank> ext{};
    std::copy(e.extents.begin(), e.extents.end(), ext.begin());
    if (!extents_match<S>(ext))
      throw shape_error("params: variable '" + std::string(name) + "' has shape " + format_extents(ext) +
                        ", expected " + shape_string<S>());
    return tensor_view<T, S>(reinterpret_cast<T*>(e.bytes.data()), ext);
  }
  template <class T, shape_spec S>
  tensor_view<const T, S> view(std::string_view name) const {
    return const_cast<params*>(this)->view<T, S>(name);
  }

 private:
  std::map<std::string, entry, std::less<>> entries_;
};

}  // namespace symflow
