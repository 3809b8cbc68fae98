#pragma once
// Name-free device evaluators. The host lowers an expression's fusion group to a tree of these
// structs: pointers, strides, literal values and op types, nothing else (no names, no scopes, no
// source locations), so that kernels can be instantiated on them. Each node evaluates one element
// given frame coordinates (`at`), a linear index when every operand is dense (`flat`), or V
// consecutive elements with vector loads (`vec`). Ops are asked for their scalar function only.
#include "device_code.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <symflow/core/config.hpp>

namespace symflow::cuda::dev {

#if defined(SYMFLOW_CUDA_DEVICE_CODE)
#define SYMFLOW_DEVICE __device__ __forceinline__
#else
#define SYMFLOW_DEVICE inline
#endif

inline constexpr int max_rank = 8;

// Kernel template arguments go through this. nvcc writes the spelling of a kernel's template
// arguments into its host stub, typedef sugar included: an argument spelled through a member alias
// of a class that carries names (fixed_string template arguments) breaks the stub's compilation.
// Resolving the type through a template yields the plain type.
template <class T>
struct canonical {
  using type = T;
};
template <class T>
using canonical_t = typename canonical<T>::type;

// V consecutive elements, aligned for one wide load or store.
template <class T, int V>
struct alignas(sizeof(T) * V >= 16 ? 16 : sizeof(T) * V) vec {
  T v[V];
};

#if defined(SYMFLOW_CUDA_DEVICE_CODE)
// Plain loads, not __ldg: CUDA's __ldg is an `asm volatile`, which the compiler may neither merge nor
// reorder, so a leaf read twice in one group (exp(z) in both a loss and its gradient, or in two
// places of one gradient) was loaded, and everything computed from it recomputed, once per
// occurrence. Plain loads of memory nothing in the kernel writes before reading are merged, and
// global loads are cached in L1 on sm_70 and newer anyway.
template <class T>
SYMFLOW_DEVICE T load(const T* p) {
  return *p;
}

// V elements at p (aligned to sizeof(T) * V, or 16 bytes when that is smaller) in 16-, 8- or 4-byte pieces.
template <class T, int V>
SYMFLOW_DEVICE vec<T, V> load_vec(const T* p) {
  vec<T, V> r;
  constexpr int bytes = int(sizeof(T)) * V;
  if constexpr (bytes % 16 == 0) {
#pragma unroll
    for (int k = 0; k < bytes / 16; ++k) {
      const int4 x = reinterpret_cast<const int4*>(p)[k];
      __builtin_memcpy(reinterpret_cast<char*>(&r) + 16 * k, &x, 16);
    }
  } else if constexpr (bytes == 8) {
    const int2 x = *reinterpret_cast<const int2*>(p);
    __builtin_memcpy(&r, &x, 8);
  } else if constexpr (bytes == 4) {
    const int x = *reinterpret_cast<const int*>(p);
    __builtin_memcpy(&r, &x, 4);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = p[k];
  }
  return r;
}

template <class T, int V>
SYMFLOW_DEVICE void store_vec(T* p, const vec<T, V>& r) {
  constexpr int bytes = int(sizeof(T)) * V;
  if constexpr (bytes % 16 == 0) {
#pragma unroll
    for (int k = 0; k < bytes / 16; ++k) {
      int4 x;
      __builtin_memcpy(&x, reinterpret_cast<const char*>(&r) + 16 * k, 16);
      reinterpret_cast<int4*>(p)[k] = x;
    }
  } else if constexpr (bytes == 8) {
    int2 x;
    __builtin_memcpy(&x, &r, 8);
    *reinterpret_cast<int2*>(p) = x;
  } else if constexpr (bytes == 4) {
    int x;
    __builtin_memcpy(&x, &r, 4);
    *reinterpret_cast<int*>(p) = x;
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) p[k] = r.v[k];
  }
}
#endif

// A fixed-size heterogeneous list (kernel parameters must be plain aggregates).
template <class... C>
struct pack;
template <>
struct pack<> {};
template <class H, class... R>
struct pack<H, R...> {
  H head;
  pack<R...> tail;
};
template <std::size_t I, class P>
SYMFLOW_HD constexpr const auto& get(const P& p) {
  if constexpr (I == 0) return p.head;
  else return get<I - 1>(p.tail);
}
SYMFLOW_HD inline pack<> make_pack() { return {}; }
template <class H, class... R>
SYMFLOW_HD pack<H, R...> make_pack(const H& h, const R&... r) {
  return {h, make_pack(r...)};
}

// Frame coordinates: one per axis of the (collapsed) frame, unused axes 0.
template <class I, int FR>
struct coords {
  I c[FR];
};

// The memory of the named leaves (placeholders, variables) of one kernel, one slot per leaf however
// often it occurs: every occurrence reads its pointer and strides from the same kernel parameter, so
// the compiler sees one address, loads it once, and computes once what the occurrences compute from
// it (exp(z) in a loss and in each of its gradients). Evaluation functions receive it as `env`.
template <int N, int FR>
struct leaf_table {
  const void* p[N > 0 ? N : 1];
  std::size_t s[N > 0 ? N : 1][FR];
};

// A value in memory with strides in frame coordinates (0 along broadcast axes).
template <class T, int FR>
struct leaf {
  using value_type = T;
  const T* p;
  std::size_t s[FR];
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class I>
  SYMFLOW_DEVICE T at(const Env&, const coords<I, FR>& c) const {
    std::size_t off = 0;
#pragma unroll
    for (int a = 0; a < FR; ++a) off += std::size_t(c.c[a]) * s[a];
    return load(p + off);
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env&, std::size_t i) const {
    return load(p + i);
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env&, std::size_t i) const {
    return load_vec<T, V>(p + i);
  }
#endif
};

// A named leaf: slot K of the kernel's leaf_table.
template <class T, int FR, int K>
struct leaf_slot {
  using value_type = T;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class I>
  SYMFLOW_DEVICE T at(const Env& env, const coords<I, FR>& c) const {
    std::size_t off = 0;
#pragma unroll
    for (int a = 0; a < FR; ++a) off += std::size_t(c.c[a]) * env.s[K][a];
    return load(static_cast<const T*>(env.p[K]) + off);
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env& env, std::size_t i) const {
    return load(static_cast<const T*>(env.p[K]) + i);
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env& env, std::size_t i) const {
    return load_vec<T, V>(static_cast<const T*>(env.p[K]) + i);
  }
#endif
};

// A rank-0 value in memory (a fed scalar, a full reduction's result), read everywhere.
template <class T>
struct scalar_ref {
  using value_type = T;
  const T* p;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class C>
  SYMFLOW_DEVICE T at(const Env&, const C&) const {
    return load(p);
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env&, std::size_t) const {
    return load(p);
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env&, std::size_t) const {
    vec<T, V> r;
    const T x = load(p);
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = x;
    return r;
  }
#endif
};

// A named rank-0 leaf: slot K of the kernel's leaf_table.
template <class T, int K>
struct scalar_slot {
  using value_type = T;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env>
  SYMFLOW_DEVICE T value(const Env& env) const {
    return load(static_cast<const T*>(env.p[K]));
  }
  template <class Env, class C>
  SYMFLOW_DEVICE T at(const Env& env, const C&) const {
    return value(env);
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env& env, std::size_t) const {
    return value(env);
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env& env, std::size_t) const {
    vec<T, V> r;
    const T x = value(env);
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = x;
    return r;
  }
#endif
};

// A scalar literal whose value is known only at run time.
template <class T>
struct literal {
  using value_type = T;
  T value;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class C>
  SYMFLOW_DEVICE T at(const Env&, const C&) const {
    return value;
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env&, std::size_t) const {
    return value;
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env&, std::size_t) const {
    vec<T, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = value;
    return r;
  }
#endif
};

// A literal whose value is part of its type (the 0s and 1s of derivatives): a compile-time constant
// the compiler folds.
template <class T, long long Value>
struct fixed_literal {
  using value_type = T;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class C>
  SYMFLOW_DEVICE T at(const Env&, const C&) const {
    return T(Value);
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env&, std::size_t) const {
    return T(Value);
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env&, std::size_t) const {
    vec<T, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = T(Value);
    return r;
  }
#endif
};

// An operand the op does not read (expand_as's shape donor): nothing is loaded.
template <class T>
struct unread {
  using value_type = T;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class C>
  SYMFLOW_DEVICE T at(const Env&, const C&) const {
    return T{};
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env&, std::size_t) const {
    return T{};
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env&, std::size_t) const {
    return vec<T, V>{};
  }
#endif
};

// An elementwise op over its operands: the op's own scalar function, applied per element.
template <class Op, class T, class... C>
struct map {
  using value_type = T;
  pack<C...> children;
#if defined(SYMFLOW_CUDA_DEVICE_CODE)
  template <class Env, class Crd>
  SYMFLOW_DEVICE T at(const Env& env, const Crd& c) const {
    return at_impl(env, c, std::index_sequence_for<C...>{});
  }
  template <class Env>
  SYMFLOW_DEVICE T flat(const Env& env, std::size_t i) const {
    return flat_impl(env, i, std::index_sequence_for<C...>{});
  }
  template <int V, class Env>
  SYMFLOW_DEVICE vec<T, V> vec_at(const Env& env, std::size_t i) const {
    return vec_impl<V>(env, i, std::index_sequence_for<C...>{});
  }

 private:
  template <class Env, class Crd, std::size_t... I>
  SYMFLOW_DEVICE T at_impl(const Env& env, const Crd& c, std::index_sequence<I...>) const {
    return T(Op::apply(get<I>(children).at(env, c)...));
  }
  template <class Env, std::size_t... I>
  SYMFLOW_DEVICE T flat_impl(const Env& env, std::size_t i, std::index_sequence<I...>) const {
    return T(Op::apply(get<I>(children).flat(env, i)...));
  }
  template <int V, class Env, std::size_t... I>
  SYMFLOW_DEVICE vec<T, V> vec_impl(const Env& env, std::size_t i, std::index_sequence<I...>) const {
    const auto in = make_pack(get<I>(children).template vec_at<V>(env, i)...);
    vec<T, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = T(Op::apply(get<I>(in).v[k]...));
    return r;
  }
#endif
};

// The frame a fused group runs over, after adjacent axes were merged: `rank` axes of `extents`.
struct frame {
  int rank = 1;
  std::size_t extents[max_rank] = {1};
};

}  // namespace symflow::cuda::dev
