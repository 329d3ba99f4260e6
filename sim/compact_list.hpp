#pragma once
// A short list kept out of line behind one pointer: 8 bytes in its owner and no block at all while
// empty (issue 22's flat Program: an op's tensor slots and an attention call's token ranges are
// empty or a few entries, and a vector's 24 bytes were paid by every op). Reads like a
// std::vector (size, [], iteration, a std::span view); converts to and from std::vector.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace meshsim {

template <class T>
class CompactList {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));

 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;

  CompactList() = default;
  CompactList(std::initializer_list<T> items) { assign(items.begin(), items.size()); }
  CompactList(const std::vector<T>& items) { assign(items.data(), items.size()); }  // NOLINT
  CompactList(std::span<const T> items) { assign(items.data(), items.size()); }     // NOLINT
  CompactList(const CompactList& other) { assign(other.data(), other.size()); }
  CompactList(CompactList&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  CompactList& operator=(const CompactList& other) {
    if (this != &other) assign(other.data(), other.size());
    return *this;
  }
  CompactList& operator=(CompactList&& other) noexcept {
    if (this != &other) {
      std::free(block_);
      block_ = std::exchange(other.block_, nullptr);
    }
    return *this;
  }
  ~CompactList() { std::free(block_); }

  size_type size() const { return block_ != nullptr ? block_->size : 0; }
  bool empty() const { return size() == 0; }
  const T* data() const { return block_ != nullptr ? items() : nullptr; }
  T* data() { return block_ != nullptr ? items() : nullptr; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  T* begin() { return data(); }
  T* end() { return data() + size(); }
  const T& operator[](size_type i) const { return items()[i]; }
  T& operator[](size_type i) { return items()[i]; }
  const T& front() const { return items()[0]; }
  const T& back() const { return items()[size() - 1]; }

  void push_back(const T& value) {
    const T copy = value;  // `value` may live in this list's block
    const size_type n = size();
    if (block_ == nullptr || n == block_->capacity) grow(std::max<size_type>(4, 2 * n));
    items()[n] = copy;
    block_->size = static_cast<std::uint32_t>(n + 1);
  }
  void clear() {
    if (block_ != nullptr) block_->size = 0;
  }

  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }
  operator std::vector<T>() const { return to_vector(); }           // NOLINT
  operator std::span<const T>() const { return {data(), size()}; }  // NOLINT

  friend bool operator==(const CompactList& a, const CompactList& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  struct Header {
    std::uint32_t size;
    std::uint32_t capacity;
  };
  static constexpr std::size_t kOffset =
      (sizeof(Header) + alignof(T) - 1) / alignof(T) * alignof(T);

  T* items() const {
    return std::launder(reinterpret_cast<T*>(reinterpret_cast<char*>(block_) + kOffset));
  }
  void grow(size_type capacity) {
    if (capacity > UINT32_MAX) throw std::length_error("CompactList: over 2^32 entries");
    void* bigger = std::realloc(block_, kOffset + capacity * sizeof(T));
    if (bigger == nullptr) throw std::bad_alloc();
    const bool was_empty = block_ == nullptr;
    block_ = static_cast<Header*>(bigger);
    if (was_empty) block_->size = 0;
    block_->capacity = static_cast<std::uint32_t>(capacity);
  }
  void assign(const T* from, size_type n) {
    if (n == 0) {
      clear();
      return;
    }
    if (block_ == nullptr || block_->capacity < n) {
      std::free(block_);
      block_ = nullptr;
      grow(n);
    }
    std::memcpy(static_cast<void*>(items()), from, n * sizeof(T));
    block_->size = static_cast<std::uint32_t>(n);
  }

  Header* block_ = nullptr;
};

}  // namespace meshsim
