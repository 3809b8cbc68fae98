#pragma once
// SIMD packet functions come from Eigen's packet math (exp, log, sin, tanh... within a few ulps, no
// -ffast-math needed). Ops call them through this alias only.
#include <Eigen/Core>

namespace symflow::simd {
namespace pm = Eigen::internal;
template <class T>
using packet_t = typename pm::packet_traits<T>::type;
template <class T>
inline constexpr int packet_size = pm::unpacket_traits<packet_t<T>>::size;
}  // namespace symflow::simd
