#include "kernels/cpu/convert.hpp"

#include <cstring>
#include <type_traits>

namespace meshsim::kernels::cpu {
namespace {

// Calls f(T{}) with T the storage type of t.
template <class F>
void with_storage_type(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::bf16:
      f(Bf16{});
      return;
    case ScalarType::fp16:
      f(Fp16{});
      return;
    case ScalarType::fp32:
      f(float{});
      return;
    case ScalarType::fp64:
      f(double{});
      return;
  }
}

template <class M>
void load_as(const void* src, ScalarType t, std::int64_t n, M* dst) {
  with_storage_type(t, [&](auto tag) {
    using S = decltype(tag);
    const S* s = static_cast<const S*>(src);
    for (std::int64_t i = 0; i < n; ++i) dst[i] = to_math<M>(s[i]);
  });
}

template <class M>
void store_as(const M* src, std::int64_t n, void* dst, ScalarType t, Store mode) {
  with_storage_type(t, [&](auto tag) {
    using S = decltype(tag);
    S* d = static_cast<S*>(dst);
    if (mode == Store::overwrite) {
      for (std::int64_t i = 0; i < n; ++i) d[i] = ScalarFrom<S>::from(src[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) d[i] = ScalarFrom<S>::from(to_math<M>(d[i]) + src[i]);
    }
  });
}

}  // namespace

void load(const void* src, ScalarType t, std::int64_t n, float* dst) {
  load_as(src, t, n, dst);
}
void load(const void* src, ScalarType t, std::int64_t n, double* dst) {
  load_as(src, t, n, dst);
}
void store(const float* src, std::int64_t n, void* dst, ScalarType t, Store mode) {
  store_as(src, n, dst, t, mode);
}
void store(const double* src, std::int64_t n, void* dst, ScalarType t, Store mode) {
  store_as(src, n, dst, t, mode);
}

void convert(const void* src, ScalarType src_type, void* dst, ScalarType dst_type, std::int64_t n) {
  if (src_type == dst_type) {
    if (src != dst && n > 0) {
      std::memmove(dst, src, static_cast<std::size_t>(n * scalar_bytes(src_type)));
    }
    return;
  }
  with_storage_type(src_type, [&](auto src_tag) {
    with_storage_type(dst_type, [&](auto dst_tag) {
      using S = decltype(src_tag);
      using D = decltype(dst_tag);
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      // Widening to float32 is exact for bf16/fp16/fp32 sources; fp64 sources go to the target
      // in one rounding.
      if constexpr (std::is_same_v<S, double>) {
        for (std::int64_t i = 0; i < n; ++i) d[i] = ScalarFrom<D>::from(s[i]);
      } else {
        for (std::int64_t i = 0; i < n; ++i) d[i] = ScalarFrom<D>::from(to_math<float>(s[i]));
      }
    });
  });
}

void fill(void* dst, ScalarType t, std::int64_t n, double value) {
  with_storage_type(t, [&](auto tag) {
    using S = decltype(tag);
    const S v = ScalarFrom<S>::from(value);
    S* d = static_cast<S*>(dst);
    for (std::int64_t i = 0; i < n; ++i) d[i] = v;
  });
}

}  // namespace meshsim::kernels::cpu
