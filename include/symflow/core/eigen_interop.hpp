#pragma once
// Zero-copy bridges between symflow tensors and Eigen: map a tensor as an Eigen matrix, or view any
// Eigen dense object with direct access (Matrix, Map, Block) as a strided tensor_view.
#include "eigen.hpp"

#include "tensor.hpp"

namespace symflow {

template <class T>
using eigen_row_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using eigen_vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// Rank-2 tensors map as row-major matrices, rank-1 tensors as column vectors. No copy is made.
template <class T, class S>
  requires(S::rank == 2)
auto as_eigen(tensor<T, S>& t) {
  return Eigen::Map<eigen_row_major<T>, Eigen::Aligned64>(t.data(), Eigen::Index(t.extent(0)),
                                                          Eigen::Index(t.extent(1)));
}
template <class T, class S>
  requires(S::rank == 2)
auto as_eigen(const tensor<T, S>& t) {
  return Eigen::Map<const eigen_row_major<T>, Eigen::Aligned64>(t.data(), Eigen::Index(t.extent(0)),
                                                                Eigen::Index(t.extent(1)));
}
template <class T, class S>
  requires(S::rank == 1)
auto as_eigen(tensor<T, S>& t) {
  return Eigen::Map<eigen_vector<T>, Eigen::Aligned64>(t.data(), Eigen::Index(t.extent(0)));
}
template <class T, class S>
  requires(S::rank == 1)
auto as_eigen(const tensor<T, S>& t) {
  return Eigen::Map<const eigen_vector<T>, Eigen::Aligned64>(t.data(), Eigen::Index(t.extent(0)));
}

// Views an Eigen matrix (either storage order) as a rank-2 tensor_view with the matrix's strides,
// so a column-major matrix is seen with its true row/column layout. The matrix must outlive the view.
template <class Derived>
auto view_of(Eigen::PlainObjectBase<Derived>& m) {
  using T = typename Derived::Scalar;
  return tensor_view<T, shape<dyn, dyn>>(
      m.data(), {std::size_t(m.rows()), std::size_t(m.cols())},
      {std::size_t(m.rowStride()), std::size_t(m.colStride())});
}
template <class Derived>
auto view_of(const Eigen::PlainObjectBase<Derived>& m) {
  using T = const typename Derived::Scalar;
  return tensor_view<T, shape<dyn, dyn>>(
      m.data(), {std::size_t(m.rows()), std::size_t(m.cols())},
      {std::size_t(m.rowStride()), std::size_t(m.colStride())});
}

}  // namespace symflow
