// Every JNI entry point runs its body through Guarded(), so no C++ exception ever unwinds
// into the JVM (which would abort it): each one becomes a pending Java exception instead.
#pragma once

#include <jni.h>

#include <utility>

namespace treescore::jni {

// Looks up and pins the Java exception classes; called once from JNI_OnLoad.
bool CacheExceptionClasses(JNIEnv* env);
void ReleaseExceptionClasses(JNIEnv* env);

// Converts the exception currently being handled into a pending Java exception.
void ThrowPendingJavaException(JNIEnv* env) noexcept;

template <typename Result, typename Body>
Result Guarded(JNIEnv* env, Result on_error, Body&& body) noexcept {
  try {
    return std::forward<Body>(body)();
  } catch (...) {
    ThrowPendingJavaException(env);
    return on_error;
  }
}

template <typename Body>
void GuardedVoid(JNIEnv* env, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
  } catch (...) {
    ThrowPendingJavaException(env);
  }
}

}  // namespace treescore::jni
