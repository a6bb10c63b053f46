/* Symbol visibility of libmadengine. The library is built with hidden
   visibility by default; only what is marked MADENGINE_API (the C ABI in
   madengine.h and the node's C++ API) is exported from libmadengine.so.
   C and C++ alike include this header. */
#ifndef MADENGINE_EXPORT_H
#define MADENGINE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define MADENGINE_API __attribute__((visibility("default")))
#else
#define MADENGINE_API
#endif

#endif /* MADENGINE_EXPORT_H */
