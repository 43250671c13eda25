#ifndef TILEPACK_CZLIB_SHIM_H
#define TILEPACK_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2/inflateInit2 are macros that pass the library version and the z_stream size;
// Swift cannot import function-like macros, so these inline wrappers do it for us.
static inline int tp_deflateInit2(z_streamp strm, int level, int method, int windowBits,
                                  int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

static inline int tp_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}

#endif
