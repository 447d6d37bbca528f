#include "jni_guard.h"

#include <exception>
#include <new>
#include <stdexcept>

#include "../src/lightgbm_error.h"
#include "handle_registry.h"

namespace treescore::jni {
namespace {

// Global refs, so the classes stay loaded and lookups never happen on the error path.
jclass native_exception = nullptr;       // treescore.nativelib.NativeException
jclass illegal_argument = nullptr;       // java.lang.IllegalArgumentException
jclass illegal_state = nullptr;          // java.lang.IllegalStateException
jclass out_of_memory = nullptr;          // java.lang.OutOfMemoryError

jclass Pin(JNIEnv* env, const char* name) {
  jclass local = env->FindClass(name);
  if (local == nullptr) return nullptr;
  auto global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return global;
}

}  // namespace

bool CacheExceptionClasses(JNIEnv* env) {
  native_exception = Pin(env, "treescore/nativelib/NativeException");
  illegal_argument = Pin(env, "java/lang/IllegalArgumentException");
  illegal_state = Pin(env, "java/lang/IllegalStateException");
  out_of_memory = Pin(env, "java/lang/OutOfMemoryError");
  return native_exception && illegal_argument && illegal_state && out_of_memory;
}

void ReleaseExceptionClasses(JNIEnv* env) {
  for (jclass* cls : {&native_exception, &illegal_argument, &illegal_state, &out_of_memory}) {
    if (*cls != nullptr) env->DeleteGlobalRef(*cls);
    *cls = nullptr;
  }
}

void ThrowPendingJavaException(JNIEnv* env) noexcept {
  if (env->ExceptionCheck()) return;  // a JNI call already raised one; keep it
  try {
    throw;
  } catch (const LightGbmError& e) {
    env->ThrowNew(native_exception, e.what());
  } catch (const UnknownHandle& e) {
    env->ThrowNew(illegal_state, e.what());
  } catch (const std::invalid_argument& e) {
    env->ThrowNew(illegal_argument, e.what());
  } catch (const std::bad_alloc&) {
    env->ThrowNew(out_of_memory, "treescore native code could not allocate memory");
  } catch (const std::exception& e) {
    env->ThrowNew(native_exception, e.what());
  } catch (...) {
    env->ThrowNew(native_exception, "unknown C++ exception in treescore native code");
  }
}

}  // namespace treescore::jni
