// The JNI side of treescore.nativelib.NativeMethods. Methods are bound by RegisterNatives in
// JNI_OnLoad rather than by mangled names, so a signature that drifts from the Java facade
// fails loudly when the library loads instead of at the first call.
#include <jni.h>

#if defined(__GLIBC__)
#include <dlfcn.h>
#include <malloc.h>
#endif

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "../src/booster.h"
#include "../src/engine_predictor.h"
#include "../src/memory/account.h"
#include "../src/top_k/selector.h"
#include "../src/program/program_decoder.h"
#include "handle_registry.h"
#include "jni_guard.h"

namespace treescore::jni {
namespace {

HandleRegistry<Predictor>& Models() {
  static HandleRegistry<Predictor> registry;
  return registry;
}

HandleRegistry<Program>& Programs() {
  static HandleRegistry<Program> registry;
  return registry;
}

// One task's top-K selection over a model loaded into treescore's engine or an ensemble
// program, which it keeps alive. The lock makes a mistaken second thread wait rather than race.
struct TopKScan {
  std::shared_ptr<const void> scored;  // the model or the program the selector reads
  TopKSelector selector;
  std::mutex lock;
};

HandleRegistry<TopKScan>& TopKScans() {
  static HandleRegistry<TopKScan> registry;
  return registry;
}

template <typename T, typename JArray, typename Elem>
std::vector<T> CopyArray(JNIEnv* env, JArray array, void (JNIEnv::*get)(JArray, jsize, jsize, Elem*)) {
  if (array == nullptr) throw std::invalid_argument("null array");
  const jsize length = env->GetArrayLength(array);
  std::vector<Elem> raw(static_cast<size_t>(length));
  (env->*get)(array, 0, length, raw.data());
  return std::vector<T>(raw.begin(), raw.end());
}

PredictKind ToKind(jint kind) {
  if (kind < 0 || kind > wire::kPredictKindLast) {
    throw std::invalid_argument("unknown prediction kind " + std::to_string(kind));
  }
  return static_cast<PredictKind>(kind);
}

jlong LoadModel(JNIEnv* env, jclass, jbyteArray model_text, jint engine, jlong max_table_addends) {
  return Guarded<jlong>(env, 0, [&] {
    if (model_text == nullptr) throw std::invalid_argument("model text is null");
    if (max_table_addends < 0) {
      throw std::invalid_argument("the TreeSHAP tables' addends must be at least 0, not " + std::to_string(max_table_addends));
    }
    const jsize length = env->GetArrayLength(model_text);
    std::string text(static_cast<size_t>(length), '\0');
    env->GetByteArrayRegion(model_text, 0, length, reinterpret_cast<jbyte*>(text.data()));
    std::shared_ptr<Predictor> model;
    int64_t held_bytes = 0;
    {
      memory::Charge charge(memory::Kind::kModels);
      switch (static_cast<Engine>(engine)) {
        case Engine::kLightGbm: model = std::make_shared<Booster>(Booster::FromModelText(text)); break;
        case Engine::kTreescore:
          model = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(
              text, engine::Layout::kAuto, engine::BestSimd(), static_cast<size_t>(max_table_addends)));
          break;
        default: throw std::invalid_argument("unknown engine code " + std::to_string(engine));
      }
      held_bytes = charge.net_bytes();
    }
    // Outside the charge: the registry's table outlives every model in it, so it is working memory.
    return static_cast<jlong>(Models().Add(std::move(model), held_bytes));
  });
}

void ReleaseModel(JNIEnv* env, jclass, jlong handle) {
  GuardedVoid(env, [&] { Models().Remove(handle); });
}

// What the model holds now: what loading it kept, and what it built since.
jlong ModelHeldBytes(JNIEnv* env, jclass, jlong handle) {
  return Guarded<jlong>(env, 0, [&] {
    return static_cast<jlong>(Models().HeldBytes(handle) + Models().Get(handle)->built_bytes());
  });
}

// The most working memory one call with the model holds per thread.
jlong ModelWorkingBytes(JNIEnv* env, jclass, jlong handle) {
  return Guarded<jlong>(env, 0, [&] { return static_cast<jlong>(Models().Get(handle)->WorkingBytes()); });
}

jint NumFeatures(JNIEnv* env, jclass, jlong handle) {
  return Guarded<jint>(env, 0, [&] { return Models().Get(handle)->num_features(); });
}

jint NumClasses(JNIEnv* env, jclass, jlong handle) {
  return Guarded<jint>(env, 0, [&] { return Models().Get(handle)->num_classes(); });
}

jlong OutputsPerRow(JNIEnv* env, jclass, jlong handle, jint kind, jint start_iteration, jint num_iterations) {
  return Guarded<jlong>(env, 0, [&] {
    return static_cast<jlong>(
        Models().Get(handle)->OutputsPerRow(ToKind(kind), IterationRange{start_iteration, num_iterations}));
  });
}

// The batch whose column addresses the JVM wrote into off-heap memory at columns_address: one
// int64 per column, each the address of the column's value in row 0, row_stride doubles apart.
// The JVM checks that every column holds num_rows values; here only their presence is checked.
FeatureBatch ColumnsAt(jlong columns_address, jint num_cols, jlong row_stride, jint num_rows) {
  if (num_cols < 0 || num_rows < 0 || row_stride < 1) throw std::invalid_argument("bad batch shape");
  if (columns_address == 0 && num_cols > 0) throw std::invalid_argument("null column address array");
  FeatureBatch batch;
  batch.columns = reinterpret_cast<const double* const*>(columns_address);
  batch.row_stride = row_stride;
  batch.num_rows = num_rows;
  batch.num_cols = num_cols;
  return batch;
}

void Predict(JNIEnv* env, jclass, jlong handle, jlong columns_address, jint num_cols, jlong row_stride, jint num_rows,
             jint kind, jint start_iteration, jint num_iterations, jint num_threads, jlong out_address,
             jlong out_capacity) {
  GuardedVoid(env, [&] {
    if (out_address == 0 && out_capacity > 0) throw std::invalid_argument("null output address");
    const FeatureBatch rows = ColumnsAt(columns_address, num_cols, row_stride, num_rows);
    std::shared_ptr<Predictor> model = Models().Get(handle);  // keeps it alive for this call
    model->Predict(rows, ToKind(kind), IterationRange{start_iteration, num_iterations}, num_threads,
                   reinterpret_cast<double*>(out_address), out_capacity);
  });
}

jlong CompileProgram(JNIEnv* env, jclass, jlongArray code, jdoubleArray constants, jlongArray model_handles) {
  return Guarded<jlong>(env, 0, [&] {
    const auto handles = CopyArray<int64_t>(env, model_handles, &JNIEnv::GetLongArrayRegion);
    std::vector<std::shared_ptr<const Predictor>> models;
    for (int64_t handle : handles) models.push_back(Models().Get(handle));  // the program keeps them alive
    std::shared_ptr<Program> program;
    {
      memory::Charge charge(memory::Kind::kPrograms);
      program = std::make_shared<Program>(DecodeProgram(CopyArray<int64_t>(env, code, &JNIEnv::GetLongArrayRegion),
                                                        CopyArray<double>(env, constants, &JNIEnv::GetDoubleArrayRegion),
                                                        models));
    }
    return static_cast<jlong>(Programs().Add(std::move(program)));
  });
}

void ReleaseProgram(JNIEnv* env, jclass, jlong handle) {
  GuardedVoid(env, [&] { Programs().Remove(handle); });
}

jlong EvaluateProgram(JNIEnv* env, jclass, jlong handle, jlong columns_address, jint num_cols, jlong row_stride,
                      jint num_rows, jlong route_address, jlong route_capacity, jint num_threads, jint grid_points,
                      jintArray grid_inputs, jlong grid_values_address, jlong grid_values_capacity, jint monotone,
                      jint monotone_run, jboolean contributions, jlong out_address, jlong out_capacity) {
  return Guarded<jlong>(env, 0, [&] {
    std::shared_ptr<Program> program = Programs().Get(handle);
    if (num_rows < 0) throw std::invalid_argument("negative row count");
    if (grid_points < 1 || num_rows % grid_points != 0) throw std::invalid_argument("rows must be whole grids");
    GridPoints grid;
    grid.points = grid_points;
    grid.varying = CopyArray<int32_t>(env, grid_inputs, &JNIEnv::GetIntArrayRegion);
    grid.values = reinterpret_cast<const double*>(grid_values_address);
    const FeatureBatch input = ColumnsAt(columns_address, num_cols, row_stride, num_rows / grid_points);
    const int64_t per_row = contributions ? program->contributions_per_row() : 1;
    if (out_capacity / per_row < num_rows ||
        static_cast<int64_t>(num_rows) * program->num_route_slots() > route_capacity ||
        static_cast<int64_t>(num_rows) * static_cast<int64_t>(grid.varying.size()) > grid_values_capacity) {
      throw std::invalid_argument("a batch of " + std::to_string(num_rows) + " rows does not fit the buffers passed");
    }
    if ((out_address == 0 && num_rows > 0) ||
        (grid_values_address == 0 && grid_values_capacity > 0)) {
      throw std::invalid_argument("null buffer address");
    }
    const auto* routes = reinterpret_cast<const int32_t*>(route_address);
    auto* out = reinterpret_cast<double*>(out_address);
    if (contributions && monotone != 0) throw std::invalid_argument("a monotone curve has no exact contributions");
    const auto stats = contributions ? program->EvaluateContributions(input, num_rows, routes, num_threads, grid, out)
                                     : program->Evaluate(input, num_rows, routes, num_threads, grid, monotone,
                                                         monotone_run, out);
    return static_cast<jlong>(stats.escalated);
  });
}

jlong OpenTopK(JNIEnv* env, jclass, jlong model_handle, jint kind, jint start_iteration, jint num_iterations, jint k,
              jboolean descending) {
  return Guarded<jlong>(env, 0, [&] {
    auto model = std::dynamic_pointer_cast<const EnginePredictor>(Models().Get(model_handle));
    if (model == nullptr) throw std::invalid_argument("top-K selection needs a model loaded into treescore's engine");
    const PredictKind predict_kind = ToKind(kind);
    if (predict_kind != PredictKind::kPrediction && predict_kind != PredictKind::kRaw) {
      throw std::invalid_argument("top-K selection ranks predictions or raw scores only");
    }
    TopKSelector selector(RankedScore(model->scorer(), predict_kind == PredictKind::kRaw,
                                      IterationRange{start_iteration, num_iterations}),
                          TopKQuery{k, descending != JNI_FALSE});
    auto scan = std::shared_ptr<TopKScan>(new TopKScan{model, std::move(selector), {}});
    return static_cast<jlong>(TopKScans().Add(std::move(scan)));
  });
}

jlong OpenTopKProgram(JNIEnv* env, jclass, jlong program_handle, jint k, jboolean descending) {
  return Guarded<jlong>(env, 0, [&] {
    std::shared_ptr<const Program> program = Programs().Get(program_handle);
    TopKSelector selector(RankedScore(*program), TopKQuery{k, descending != JNI_FALSE});
    auto scan = std::shared_ptr<TopKScan>(new TopKScan{program, std::move(selector), {}});
    return static_cast<jlong>(TopKScans().Add(std::move(scan)));
  });
}

void ReleaseTopK(JNIEnv* env, jclass, jlong handle) {
  GuardedVoid(env, [&] { TopKScans().Remove(handle); });
}

// Scores what top-K selection needs of a batch: kept[r] (one int32 per row) says whether row r
// may be in its group's top k, and scores[r] is then its score. groups_address is 0 for one
// group, else num_rows int32 group numbers; routes_address 0 without routes, else num_rows x
// route slots int32 route indices; floor is a key k rows kept elsewhere reach (-inf: none).
jint SelectTopK(JNIEnv* env, jclass, jlong handle, jlong columns_address, jint num_cols, jlong row_stride,
                jint num_rows, jlong groups_address, jlong routes_address, jdouble floor, jlong kept_address,
                jlong scores_address, jlong capacity) {
  return Guarded<jint>(env, 0, [&] {
    if (num_rows > capacity) {
      throw std::invalid_argument("a batch of " + std::to_string(num_rows) + " rows does not fit the buffers passed");
    }
    if ((kept_address == 0 || scores_address == 0) && num_rows > 0) throw std::invalid_argument("null buffer address");
    const FeatureBatch rows = ColumnsAt(columns_address, num_cols, row_stride, num_rows);
    std::shared_ptr<TopKScan> scan = TopKScans().Get(handle);
    std::lock_guard<std::mutex> hold(scan->lock);
    return scan->selector.Select(rows, reinterpret_cast<const int32_t*>(groups_address), floor,
                                 reinterpret_cast<int32_t*>(kept_address), reinterpret_cast<double*>(scores_address),
                                 reinterpret_cast<const int32_t*>(routes_address));
  });
}

// Group 0's best keys of a top-K scan so far, for other scans of the same query to start from.
jdoubleArray TopKBestKeys(JNIEnv* env, jclass, jlong handle) {
  return Guarded<jdoubleArray>(env, nullptr, [&] {
    std::shared_ptr<TopKScan> scan = TopKScans().Get(handle);
    std::lock_guard<std::mutex> hold(scan->lock);
    const std::vector<double> keys = scan->selector.BestKeys();
    jdoubleArray result = env->NewDoubleArray(static_cast<jsize>(keys.size()));
    if (result == nullptr) throw std::bad_alloc();
    env->SetDoubleArrayRegion(result, 0, static_cast<jsize>(keys.size()), keys.data());
    return result;
  });
}

// Tree evaluations a top-K scan made so far, and how many full scores of its rows would make.
jlongArray TopKTreeCounts(JNIEnv* env, jclass, jlong handle) {
  return Guarded<jlongArray>(env, nullptr, [&] {
    std::shared_ptr<TopKScan> scan = TopKScans().Get(handle);
    std::lock_guard<std::mutex> hold(scan->lock);
    const jlong counts[2] = {scan->selector.trees_evaluated(), scan->selector.trees_in_full()};
    jlongArray result = env->NewLongArray(2);
    if (result == nullptr) throw std::bad_alloc();
    env->SetLongArrayRegion(result, 0, 2, counts);
    return result;
  });
}

#if defined(__GLIBC__)
// glibc 2.33's mallinfo2, declared here: the library is built for glibc 2.17, whose headers lack
// it, and looks it up where it runs.
struct Mallinfo2 {
  size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
#endif

// Bytes the C allocator has handed out and not had back, for leak tests; -1 where unknown. Before
// glibc 2.33 only mallinfo's int fields exist, which count modulo 4 GiB.
jlong AllocatorInUseBytes(JNIEnv*, jclass) {
#if defined(__GLIBC__)
  static const auto mallinfo2 = reinterpret_cast<Mallinfo2 (*)()>(dlsym(RTLD_DEFAULT, "mallinfo2"));
  if (mallinfo2 != nullptr) return static_cast<jlong>(mallinfo2().uordblks);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // mallinfo2's predecessor, all 2.17 has
  return static_cast<jlong>(static_cast<unsigned int>(mallinfo().uordblks));
#pragma GCC diagnostic pop
#else
  return -1;
#endif
}

// The native memory account (memory/account.h): bytes held per kind, in wire code order, then
// the peak of their total.
jlongArray NativeMemoryHeld(JNIEnv* env, jclass) {
  return Guarded<jlongArray>(env, nullptr, [&] {
    const memory::Totals totals = memory::Read();
    jlong values[memory::kKinds + 1];
    for (int kind = 0; kind < memory::kKinds; ++kind) values[kind] = totals.held[kind];
    values[memory::kKinds] = totals.peak;
    jlongArray result = env->NewLongArray(memory::kKinds + 1);
    if (result == nullptr) throw std::bad_alloc();
    env->SetLongArrayRegion(result, 0, memory::kKinds + 1, values);
    return result;
  });
}

jlong TakeThreadPeak(JNIEnv*, jclass) { return static_cast<jlong>(memory::TakeThreadPeak()); }

// The JVM's off-heap task buffers, allocated here so that the account counts them.
jlong AllocateBuffer(JNIEnv* env, jclass, jlong bytes) {
  return Guarded<jlong>(env, 0, [&] {
    if (bytes < 0) throw std::invalid_argument("a buffer of " + std::to_string(bytes) + " bytes");
    return reinterpret_cast<jlong>(memory::AllocateBuffer(static_cast<size_t>(bytes)));
  });
}

void FreeBuffer(JNIEnv*, jclass, jlong address) { memory::FreeBuffer(reinterpret_cast<void*>(address)); }

jlong LiveModelCount(JNIEnv* env, jclass) {
  return Guarded<jlong>(env, 0, [&] { return static_cast<jlong>(Models().Size()); });
}

const JNINativeMethod kMethods[] = {
    {const_cast<char*>("loadModel"), const_cast<char*>("([BIJ)J"), reinterpret_cast<void*>(&LoadModel)},
    {const_cast<char*>("releaseModel"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&ReleaseModel)},
    {const_cast<char*>("modelHeldBytes"), const_cast<char*>("(J)J"), reinterpret_cast<void*>(&ModelHeldBytes)},
    {const_cast<char*>("modelWorkingBytes"), const_cast<char*>("(J)J"), reinterpret_cast<void*>(&ModelWorkingBytes)},
    {const_cast<char*>("numFeatures"), const_cast<char*>("(J)I"), reinterpret_cast<void*>(&NumFeatures)},
    {const_cast<char*>("numClasses"), const_cast<char*>("(J)I"), reinterpret_cast<void*>(&NumClasses)},
    {const_cast<char*>("outputsPerRow"), const_cast<char*>("(JIII)J"), reinterpret_cast<void*>(&OutputsPerRow)},
    {const_cast<char*>("predict"), const_cast<char*>("(JJIJIIIIIJJ)V"), reinterpret_cast<void*>(&Predict)},
    {const_cast<char*>("liveModelCount"), const_cast<char*>("()J"), reinterpret_cast<void*>(&LiveModelCount)},
    {const_cast<char*>("allocatorInUseBytes"), const_cast<char*>("()J"), reinterpret_cast<void*>(&AllocatorInUseBytes)},
    {const_cast<char*>("nativeMemoryHeld"), const_cast<char*>("()[J"), reinterpret_cast<void*>(&NativeMemoryHeld)},
    {const_cast<char*>("takeThreadPeak"), const_cast<char*>("()J"), reinterpret_cast<void*>(&TakeThreadPeak)},
    {const_cast<char*>("allocateBuffer"), const_cast<char*>("(J)J"), reinterpret_cast<void*>(&AllocateBuffer)},
    {const_cast<char*>("freeBuffer"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&FreeBuffer)},
    {const_cast<char*>("compileProgram"), const_cast<char*>("([J[D[J)J"), reinterpret_cast<void*>(&CompileProgram)},
    {const_cast<char*>("releaseProgram"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&ReleaseProgram)},
    {const_cast<char*>("openTopK"), const_cast<char*>("(JIIIIZ)J"), reinterpret_cast<void*>(&OpenTopK)},
    {const_cast<char*>("openTopKProgram"), const_cast<char*>("(JIZ)J"), reinterpret_cast<void*>(&OpenTopKProgram)},
    {const_cast<char*>("releaseTopK"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&ReleaseTopK)},
    {const_cast<char*>("selectTopK"), const_cast<char*>("(JJIJIJJDJJJ)I"), reinterpret_cast<void*>(&SelectTopK)},
    {const_cast<char*>("topKBestKeys"), const_cast<char*>("(J)[D"), reinterpret_cast<void*>(&TopKBestKeys)},
    {const_cast<char*>("topKTreeCounts"), const_cast<char*>("(J)[J"), reinterpret_cast<void*>(&TopKTreeCounts)},
    {const_cast<char*>("evaluateProgram"), const_cast<char*>("(JJIJIJJII[IJJIIZJJ)J"), reinterpret_cast<void*>(&EvaluateProgram)},
};

constexpr const char* kFacadeClass = "treescore/nativelib/NativeMethods";

}  // namespace
}  // namespace treescore::jni

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  using namespace treescore::jni;
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  if (!CacheExceptionClasses(env)) return JNI_ERR;
  jclass facade = env->FindClass(kFacadeClass);
  if (facade == nullptr) return JNI_ERR;
  const jint count = static_cast<jint>(sizeof(kMethods) / sizeof(kMethods[0]));
  const jint registered = env->RegisterNatives(facade, kMethods, count);
  env->DeleteLocalRef(facade);
  return registered == JNI_OK ? JNI_VERSION_1_8 : JNI_ERR;
}

extern "C" JNIEXPORT void JNICALL JNI_OnUnload(JavaVM* vm, void*) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) == JNI_OK) {
    treescore::jni::ReleaseExceptionClasses(env);
  }
}
