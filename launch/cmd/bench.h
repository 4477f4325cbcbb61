/* tpuemu bench: a sweep of sizes with real data over MPI.  Private to launch/. */
#ifndef APP_CMD_BENCH_H
#define APP_CMD_BENCH_H

#include "launch.h"

/* The runner of its row in commands.def. */
int app_cmd_bench(app_ctx_t *ctx);

#endif /* APP_CMD_BENCH_H */
