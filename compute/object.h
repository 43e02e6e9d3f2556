// Intrusive reference-counted base for all IR nodes.
//
// Nodes are immutable after construction. Each concrete node type carries a
// static `kKind` from node_kinds.def; `as<T>()` compares kinds instead of
// using dynamic_cast.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace kiln {

enum class NodeKind : uint8_t {
#define KILN_NODE(Name) Name,
#include "compute/node_kinds.def"
#undef KILN_NODE
};

const char* node_kind_name(NodeKind kind);

class Object {
 public:
  explicit Object(NodeKind kind) : kind_(kind) {}
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  virtual ~Object() = default;

  NodeKind kind() const { return kind_; }

  void inc_ref() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  mutable std::atomic<int32_t> ref_count_{0};
  const NodeKind kind_;
};

// Strong reference to a node of type T (T derives from Object).
template <class T>
class Ref {
 public:
  using ContainerType = T;
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT: implicit null
  explicit Ref(const T* p) : ptr_(p) {
    if (ptr_) ptr_->inc_ref();
  }
  Ref(const Ref& o) : ptr_(o.ptr_) {
    if (ptr_) ptr_->inc_ref();
  }
  Ref(Ref&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
  template <class U>
  Ref(const Ref<U>& o) : ptr_(o.get()) {  // NOLINT: upcast
    if (ptr_) ptr_->inc_ref();
  }
  ~Ref() {
    if (ptr_) ptr_->dec_ref();
  }
  Ref& operator=(Ref o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }

  const T* get() const { return ptr_; }
  const T* operator->() const { return ptr_; }
  const T& operator*() const { return *ptr_; }
  bool defined() const { return ptr_ != nullptr; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool same_as(const Ref<Object>& o) const { return static_cast<const Object*>(ptr_) == o.get(); }

  // Downcast by kind; returns nullptr when the node is not a U.
  template <class U>
  const U* as() const {
    if (ptr_ && ptr_->kind() == U::kKind) return static_cast<const U*>(static_cast<const Object*>(ptr_));
    return nullptr;
  }

 private:
  const T* ptr_ = nullptr;
};

template <class T, class U>
bool operator==(const Ref<T>& a, const Ref<U>& b) {
  return static_cast<const Object*>(a.get()) == static_cast<const Object*>(b.get());
}
template <class T, class U>
bool operator!=(const Ref<T>& a, const Ref<U>& b) {
  return !(a == b);
}

struct RefHash {
  template <class T>
  size_t operator()(const Ref<T>& r) const {
    return std::hash<const void*>()(static_cast<const void*>(r.get()));
  }
};

}  // namespace kiln
