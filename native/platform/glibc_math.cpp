// Routes the math functions zig's compiler runtime also defines to glibc's own.
//
// zig links its compiler runtime into every library, and that runtime carries musl's exp, exp2,
// log and logf. Once any of its helpers is needed (__powidf2, for one), those definitions come
// along and bind the library's calls locally: exp then differs from glibc's in the last bit or
// two for some inputs, and so would sigmoids and softmaxes against Booster.predict, which calls
// the process's libm. The link wraps each name (-Wl,--wrap=NAME, native/CMakeLists.txt), and
// each wrapper calls glibc's symbol of the oldest version the target has (TREESCORE_GLIBC_BASE).

#define TREESCORE_STRING2(x) #x
#define TREESCORE_STRING(x) TREESCORE_STRING2(x)
#define TREESCORE_FROM_GLIBC(name, type)                                                      \
  extern "C" type glibc_##name(type);                                                         \
  __asm__(".symver glibc_" #name ", " #name "@GLIBC_" TREESCORE_STRING(TREESCORE_GLIBC_BASE)); \
  extern "C" type __wrap_##name(type x) { return glibc_##name(x); }

TREESCORE_FROM_GLIBC(exp, double)
TREESCORE_FROM_GLIBC(exp2, double)
TREESCORE_FROM_GLIBC(log, double)
TREESCORE_FROM_GLIBC(expf, float)
TREESCORE_FROM_GLIBC(exp2f, float)
TREESCORE_FROM_GLIBC(logf, float)
