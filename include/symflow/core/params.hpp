#pragma once
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "aligned_buffer.hpp"
#include "tensor.hpp"

namespace symflow {

// The check every typed access to a stored parameter makes (host or device store): the stored dtype
// and extents against the caller's; the store and the variable are named when they differ.
template <class T, shape_spec S>
extents_t<S::rank> checked_parameter_extents(std::string_view store, std::string_view name, dtype stored,
                                             const std::vector<std::size_t>& extents) {
  // Named only when it fails: a training step checks every parameter on each access.
  const auto who = [&] { return std::string(store) + ": variable '" + std::string(name) + "'"; };
  if (stored != dtype_v<T>)
    throw value_error(who() + " holds " + std::string(dtype_name(stored)) + " values, not " +
                      std::string(dtype_name(dtype_v<T>)));
  extents_t<S::rank> ext{};
  if constexpr (S::rank > 0)
    if (extents.size() == S::rank) std::copy(extents.begin(), extents.end(), ext.begin());
  if (extents.size() != S::rank || !extents_match<S>(ext))
    throw shape_error(who() + " has shape " + format_extents(extents) + ", expected " + shape_string<S>());
  return ext;
}

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

  // Stores a value already in type-erased form (what a checkpoint loader builds).
  void set_entry(std::string name, entry value) {
    std::size_t count = 1;
    for (std::size_t e : value.extents) count *= e;
    if (value.bytes.size() != count * dtype_size(value.type))
      throw value_error("params: variable '" + name + "' has " + std::to_string(value.bytes.size()) +
                        " bytes, shape " + format_extents(value.extents) + " of " +
                        std::string(dtype_name(value.type)) + " needs " + std::to_string(count * dtype_size(value.type)));
    entries_.insert_or_assign(std::move(name), std::move(value));
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
    const auto ext = checked_parameter_extents<T, S>("params", name, e.type, e.extents);
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
