// Native objects handed to the JVM live here, behind opaque integer handles, each with the bytes
// of native memory building it kept (memory/account.h).
//
// The JVM never holds a raw pointer: a stale or doubly released handle is an exception, not a
// crash. A scoring call holds its own shared_ptr while it runs, so releasing a handle that
// another thread is still scoring with frees the object only when that call returns.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace treescore::jni {

class UnknownHandle : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

template <typename T>
class HandleRegistry {
 public:
  int64_t Add(std::shared_ptr<T> object, int64_t held_bytes = 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t handle = next_handle_++;
    objects_.emplace(handle, Entry{std::move(object), held_bytes});
    return handle;
  }

  std::shared_ptr<T> Get(int64_t handle) const { return Find(handle).object; }

  int64_t HeldBytes(int64_t handle) const { return Find(handle).held_bytes; }

  void Remove(int64_t handle) {
    std::shared_ptr<T> released;  // destroyed after the lock is dropped
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = objects_.find(handle);
      if (found == objects_.end()) throw UnknownHandle(Describe(handle));
      released = std::move(found->second.object);
      objects_.erase(found);
    }
  }

  int64_t Size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(objects_.size());
  }

 private:
  struct Entry {
    std::shared_ptr<T> object;
    int64_t held_bytes;
  };

  Entry Find(int64_t handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = objects_.find(handle);
    if (found == objects_.end()) throw UnknownHandle(Describe(handle));
    return found->second;
  }

  static std::string Describe(int64_t handle) {
    return "native handle " + std::to_string(handle) + " is not live (already released, or never issued)";
  }

  mutable std::mutex mutex_;
  std::unordered_map<int64_t, Entry> objects_;
  int64_t next_handle_ = 1;
};

}  // namespace treescore::jni
