/* Checks of the values inside buffers that came from outside (received frames: arrowdev/serialize/checks.py),
 * in host memory, at about the speed memory is read. The caller has checked that each buffer holds the elements
 * it passes (sizes against the layout): these functions read exactly those and nothing else.
 *
 * Each check returns -1 when every value passes, else the index (from the first element passed) of the first
 * value that does not, so the caller can name it. */
#ifndef ARROWDEV_CAPSULES_VALUES_H
#define ARROWDEV_CAPSULES_VALUES_H

#include <stdint.h>

/* Set bits among bits [bit_offset, bit_offset + length) of a little-endian bitmap. */
int64_t values_count_set(const uint8_t* bitmap, int64_t bit_offset, int64_t length);

/* n offsets of `width` bytes (4 or 8): low <= first, each <= the next, last <= high. The first bad one is found
 * in that order (first, last, then the first out of order). Buffers of at least twice `split_bytes` (<= 0: never)
 * are scanned by several threads, one per `split_bytes`, at most `threads` (0: half the CPUs online) and 8, each
 * over a range and the pair across its end; the answer is the same as one thread's. VALUES_SPLIT_BYTES: where a
 * second thread starts to pay for itself (a thread starts in tens of microseconds; 4 MiB take about 150). */
#define VALUES_SPLIT_BYTES ((int64_t)4 << 20)
int64_t values_offsets(const void* offsets, int width, int64_t n, int64_t low, int64_t high, int64_t split_bytes,
                       int threads);

/* n integers of `width` bytes (1, 2, 4, 8; signed or not) in [0, limit); where `validity` is not NULL,
 * only those whose bit (from bit_offset) is set. */
int64_t values_indices(const void* values, int width, int is_signed, int64_t n, int64_t limit,
                       const uint8_t* validity, int64_t bit_offset);

/* n 16-byte binary views: a length >= 0; past 12 bytes, a buffer index in [0, n_buffers) and an offset >= 0
 * with offset + length <= sizes[buffer]. Where `validity` is not NULL, only views whose bit is set. */
int64_t values_views(const uint8_t* views, int64_t n, const int64_t* sizes, int64_t n_buffers,
                     const uint8_t* validity, int64_t bit_offset);

/* n list-view (offset, size) pairs of `width` bytes (4 or 8): 0 <= offset, 0 <= size, offset + size <= limit. */
int64_t values_list_views(const void* offsets, const void* sizes, int width, int64_t n, int64_t limit);

/* n run ends of `width` bytes (2, 4, 8): the first > 0, each < the next, the last >= end. */
int64_t values_run_ends(const void* ends, int width, int64_t n, int64_t end);

/* n union type ids: lengths[id] >= 0 (a type code of the union; 128 entries); with dense offsets (not
 * NULL), 0 <= offsets[i] < lengths[ids[i]], and each child's offsets in order (never lower than its last). */
int64_t values_union(const int8_t* ids, const int32_t* offsets, int64_t n, const int64_t* lengths);

#endif /* ARROWDEV_CAPSULES_VALUES_H */
