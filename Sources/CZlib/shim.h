// Data path, step 5 (sync): zlib for GzipCodec.

#ifndef TRACKME_CZLIB_SHIM_H
#define TRACKME_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2/inflateInit2 are macros (they pass ZLIB_VERSION and sizeof(z_stream)); Swift
// cannot call macros, so these give it plain functions. windowBits 15+16 selects the gzip wrapper.
static inline int trackme_deflate_init_gzip(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

static inline int trackme_inflate_init_gzip(z_streamp stream) {
    return inflateInit2(stream, 15 + 16);
}
#endif
