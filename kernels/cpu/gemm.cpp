#include "kernels/cpu/gemm.hpp"

#include <cblas.h>

#include <climits>
#include <vector>

#include "kernels/cpu/blas.hpp"

namespace meshsim::kernels::cpu {
namespace {

blasint blas_int(std::int64_t v) {
  MESHSIM_KERNEL_CHECK(v >= 0 && v <= INT_MAX, "dimension exceeds the BLAS integer range");
  return static_cast<blasint>(v);
}

}  // namespace

namespace detail {
namespace {

// cblas_sgemm or cblas_dgemm, row-major, with the dimensions checked against the BLAS int range.
template <class T, class Gemm>
void row_major_gemm(Gemm gemm, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                    T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta,
                    T* c, std::int64_t ldc) {
  gemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blas_int(m),
       blas_int(n), blas_int(k), alpha, a, blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
}

}  // namespace

void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
               float* c, std::int64_t ldc) {
  row_major_gemm(cblas_sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
               const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
               double* c, std::int64_t ldc) {
  row_major_gemm(cblas_dgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace detail

namespace {

using detail::blas_gemm;

template <class M>
constexpr ScalarType math_type() {
  return sizeof(M) == 8 ? ScalarType::fp64 : ScalarType::fp32;
}

// A matrix in math type M as BLAS wants it: the view itself when it already is, else a contiguous
// converted copy (loaded only when `load_it`).
template <class M>
struct Operand {
  std::vector<M> scratch;
  M* data = nullptr;
  std::int64_t ld = 1;
  bool converted = false;

  Operand(const MatrixView& v, bool load_it) {
    if (v.type == math_type<M>() && v.ld >= (v.cols > 0 ? v.cols : 1)) {
      data = static_cast<M*>(v.data);
      ld = v.ld;
      return;
    }
    converted = true;
    ld = v.cols > 0 ? v.cols : 1;
    scratch.assign(static_cast<std::size_t>(v.rows * v.cols), M(0));
    data = scratch.data();
    if (!load_it) return;
    for (std::int64_t i = 0; i < v.rows; ++i) {
      load(element_address(v.data, v.type, i * v.ld), v.type, v.cols, data + i * v.cols);
    }
  }
};

template <class M>
void gemm_in(const MatrixView& a, bool ta, const MatrixView& b, bool tb, const MatrixView& c,
             double alpha, double beta) {
  const std::int64_t m = c.rows, n = c.cols, k = ta ? a.rows : a.cols;
  const Operand<M> oa(a, true);
  const Operand<M> ob(b, true);
  Operand<M> oc(c, beta != 0.0);
  blas_gemm(ta, tb, m, n, k, static_cast<M>(alpha), oa.data, oa.ld, ob.data, ob.ld,
            static_cast<M>(beta), oc.data, oc.ld);
  if (!oc.converted) return;
  for (std::int64_t i = 0; i < m; ++i) {
    store(oc.data + i * n, n, element_address(c.data, c.type, i * c.ld), c.type);
  }
}

}  // namespace

void gemm(const MatrixView& a, Transpose trans_a, const MatrixView& b, Transpose trans_b,
          const MatrixView& c, double alpha, double beta) {
  const bool ta = trans_a == Transpose::yes, tb = trans_b == Transpose::yes;
  const std::int64_t m = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  const std::int64_t kb = tb ? b.cols : b.rows, n = tb ? b.rows : b.cols;
  MESHSIM_KERNEL_CHECK(k == kb, "inner dimensions of op(A) and op(B) differ");
  MESHSIM_KERNEL_CHECK(c.rows == m && c.cols == n, "C is not [rows of op(A), cols of op(B)]");
  for (const MatrixView* v : {&a, &b, &c}) {
    MESHSIM_KERNEL_CHECK(v->ld >= v->cols, "leading dimension smaller than the columns");
  }
  if (m == 0 || n == 0) return;
  if (math_in_double(a.type, b.type, c.type)) {
    gemm_in<double>(a, ta, b, tb, c, alpha, beta);
  } else {
    gemm_in<float>(a, ta, b, tb, c, alpha, beta);
  }
}

void linear_backward(const MatrixView& x, const MatrixView& w, const MatrixView& dy,
                     const MatrixView& dx, const MatrixView& dw, WeightLayout layout,
                     Store dw_mode) {
  const double dw_beta = dw_mode == Store::accumulate ? 1.0 : 0.0;
  if (layout == WeightLayout::in_out) {
    gemm(dy, Transpose::no, w, Transpose::yes, dx);                // dX [m, in] = dY W^T
    gemm(x, Transpose::yes, dy, Transpose::no, dw, 1.0, dw_beta);  // dW [in, out] += X^T dY
  } else {
    gemm(dy, Transpose::no, w, Transpose::no, dx);                 // dX [m, in] = dY W
    gemm(dy, Transpose::yes, x, Transpose::no, dw, 1.0, dw_beta);  // dW [out, in] += dY^T X
  }
}

int blas_threads() {
  return openblas_get_num_threads();
}

void set_blas_threads(int threads) {
  MESHSIM_KERNEL_CHECK(threads >= 1, "thread count must be at least 1");
  openblas_set_num_threads(threads);
}

std::string blas_config() {
  const char* config = openblas_get_config();
  return config != nullptr ? std::string(config) : std::string();
}

}  // namespace meshsim::kernels::cpu
