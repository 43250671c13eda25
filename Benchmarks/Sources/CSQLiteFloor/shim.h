#ifndef TILEPACK_BENCH_CSQLITEFLOOR_SHIM_H
#define TILEPACK_BENCH_CSQLITEFLOOR_SHIM_H
// The same system SQLite the library links (Debian: libsqlite3-dev), under a name of its own:
// the root package exports no product for its CSQLite system-library target, so the
// benchmarks cannot depend on it, and two modules named CSQLite in one build would clash.
#include <sqlite3.h>
#endif
