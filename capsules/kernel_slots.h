/* Per-thread slots of arrowdev's CPU UDF kernels: the address of the launch's string arena state and the row's
 * failure flag. The compiled UDF's signature is the user's, so string operations find the arena through a slot
 * the kernel fills at each row; on a GPU that slot is a __shared__ variable of the block. CPU kernels release the
 * GIL, so several threads (DuckDB's, a thread pool's) run one kernel at once: each needs slots of its own, and
 * numba's JIT cannot allocate thread-local variables in the code it compiles. The kernels call these two
 * functions, through their addresses (arrowdev/udf/compile/strings/managed.py), for this thread's. */
#ifndef ARROWDEV_CAPSULES_KERNEL_SLOTS_H
#define ARROWDEV_CAPSULES_KERNEL_SLOTS_H

#include <stdint.h>

/* This thread's slot for the address of the launch's arena state (int64[4],
 * udf/compile/strings/meminfo_layout.ArenaWord); NULL when the thread starts. */
int64_t** kernel_arena_slot(void);

/* This thread's row failure flag: 1 once the row's UDF failed (the row becomes null). */
int8_t* kernel_failed_slot(void);

#endif
