/* Per-thread slots of the CPU UDF kernels (kernel_slots.h). No Python. */
#include "kernel_slots.h"

static _Thread_local int64_t* arena_state;
static _Thread_local int8_t row_failed;

int64_t** kernel_arena_slot(void) { return &arena_state; }

int8_t* kernel_failed_slot(void) { return &row_failed; }
