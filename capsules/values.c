/* Checks of values in buffers received from outside (see values.h). Each scan runs in blocks of kBlock elements
 * whose loop has a fixed count and no early exit, so compilers vectorise it at -O2 (gcc 12 does: its "very
 * cheap" cost model needs the fixed count); only a block that fails is scanned again, one element at a time, to
 * find the first bad value. So a check reads its buffer once, at about memory speed (docs/validation.md). */
#include "values.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

enum { kBlock = 1024, kMaxThreads = 8 };

/* ---- bitmaps ---------------------------------------------------------------------------------------------- */

static int64_t popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return (int64_t)((x * 0x0101010101010101ULL) >> 56);
}

static int64_t count_words_plain(const uint8_t* bytes, int64_t n_words) {
  int64_t total = 0;
  for (int64_t w = 0; w < n_words; w++) {
    uint64_t word;
    memcpy(&word, bytes + 8 * w, 8);
    total += popcount64(word);
  }
  return total;
}

/* On x86, the scans are compiled a second time for the instructions most CPUs have (popcnt; AVX2), and that
 * version runs where the CPU has them (a build for any x86-64 CPU, as wheels are, stays one). */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define VALUES_X86 1
__attribute__((target("popcnt"))) static int64_t count_words_popcnt(const uint8_t* bytes, int64_t n_words) {
  int64_t total = 0;
  for (int64_t w = 0; w < n_words; w++) {
    uint64_t word;
    memcpy(&word, bytes + 8 * w, 8);
    total += __builtin_popcountll(word);
  }
  return total;
}
#endif

static int64_t count_words(const uint8_t* bytes, int64_t n_words) {
#ifdef VALUES_X86
  if (__builtin_cpu_supports("popcnt")) return count_words_popcnt(bytes, n_words);
#endif
  return count_words_plain(bytes, n_words);
}

int64_t values_count_set(const uint8_t* bitmap, int64_t bit_offset, int64_t length) {
  if (length <= 0) return 0;
  const uint8_t* p = bitmap + bit_offset / 8;
  int64_t skip = bit_offset % 8, bits = skip + length; /* bits from the start of byte p */
  int64_t full = bits / 8, total = count_words(p, full / 8);
  for (int64_t i = full / 8 * 8; i < full; i++) total += popcount64(p[i]);
  if (bits % 8) total += popcount64(p[full] & ((1u << (bits % 8)) - 1));
  return total - popcount64(p[0] & ((1u << skip) - 1));
}

static int bit_set(const uint8_t* bitmap, int64_t i) { return (bitmap[i / 8] >> (i % 8)) & 1; }

/* ---- offsets ---------------------------------------------------------------------------------------------- */

/* The first i + 1 with o[i + 1] < o[i] among n offsets, or -1: blocks of kBlock pairs with no early exit (one
 * vectorised compare per 8 or 4 values), then the failing block again, one pair at a time. */
#define IN_ORDER_SCAN(T, NAME, ATTRIBUTE)                                \
  ATTRIBUTE static int64_t NAME(const T* o, int64_t n) {                 \
    int64_t i = 0;                                                       \
    for (; i + kBlock < n; i += kBlock) {                                \
      int bad = 0;                                                       \
      for (int k = 0; k < kBlock; k++) bad |= o[i + k + 1] < o[i + k];   \
      if (bad) break;                                                    \
    }                                                                    \
    for (; i + 1 < n; i++)                                               \
      if (o[i + 1] < o[i]) return i + 1;                                 \
    return -1;                                                           \
  }
IN_ORDER_SCAN(int32_t, in_order32, )
IN_ORDER_SCAN(int64_t, in_order64, )
#ifdef VALUES_X86
IN_ORDER_SCAN(int32_t, in_order32_avx2, __attribute__((target("avx2"))))
IN_ORDER_SCAN(int64_t, in_order64_avx2, __attribute__((target("avx2"))))
#endif

static int64_t in_order(const void* offsets, int width, int64_t n) {
#ifdef VALUES_X86
  if (__builtin_cpu_supports("avx2")) return width == 4 ? in_order32_avx2(offsets, n) : in_order64_avx2(offsets, n);
#endif
  return width == 4 ? in_order32(offsets, n) : in_order64(offsets, n);
}

static int64_t offset_at(const void* offsets, int width, int64_t i) {
  return width == 4 ? ((const int32_t*)offsets)[i] : ((const int64_t*)offsets)[i];
}

/* One thread's share of a split scan: `n` offsets from `first` (the pairs it checks, plus the pair across its end
 * boundary: a piece's last offset is the next piece's first). */
struct Piece {
  const char* first;
  int width;
  int64_t n;
  int64_t found; /* in_order's answer, from `first` */
};

static void* scan_piece(void* arg) {
  struct Piece* piece = arg;
  piece->found = in_order(piece->first, piece->width, piece->n);
  return NULL;
}

/* The CPUs online, asked once: sysconf reads a file under /sys on Linux (tens of microseconds, as long as a scan of
 * a 1 MB buffer). Threads racing to ask store the same answer. */
static int64_t cpus_online(void) {
  static _Atomic int64_t cpus = 0;
  int64_t known = atomic_load_explicit(&cpus, memory_order_relaxed);
  if (known == 0) {
    known = sysconf(_SC_NPROCESSORS_ONLN); /* -1 where unknown: one thread */
    atomic_store_explicit(&cpus, known, memory_order_relaxed);
  }
  return known;
}

/* How many threads share a scan of n offsets: one per `split_bytes` of them (so none below twice that), at most
 * `threads` (0: half the CPUs online), kMaxThreads and one per pair. One core of a server reads memory at a fifth of
 * what its bus carries (20 of 100 GB/s on a 16-core Xeon: docs/distributed.md); a few fill it, more only wait.
 * Half the CPUs leave the others to the process's other work; a 2-CPU machine, whose one core fills its bus
 * already, keeps one thread. */
static int threads_for(int64_t n, int width, int64_t split_bytes, int threads) {
  int64_t pieces = split_bytes > 0 ? n * width / split_bytes : 1; /* each piece holds at least split_bytes */
  if (pieces < 2 || n < 3) return 1;
  int64_t most = threads > 0 ? threads : cpus_online() / 2;
  if (most > kMaxThreads) most = kMaxThreads;
  if (most > n - 1) most = n - 1;
  if (pieces > most) pieces = most;
  return pieces < 1 ? 1 : (int)pieces;
}

/* in_order over `threads` pieces: the calling thread scans the first; a piece whose thread does not start is scanned
 * here too. The answer is the first bad pair of the first piece that has one, so the same as one thread's. */
static int64_t in_order_split(const void* offsets, int width, int64_t n, int threads) {
  struct Piece pieces[kMaxThreads];
  pthread_t ids[kMaxThreads];
  int started[kMaxThreads] = {0};
  int64_t pairs = (n - 1) / threads;
  for (int t = 0; t < threads; t++) {
    int64_t from = t * pairs, to = t == threads - 1 ? n - 1 : from + pairs; /* pairs [from, to) */
    pieces[t] = (struct Piece){(const char*)offsets + from * width, width, to - from + 1, -1};
    if (t > 0) started[t] = pthread_create(&ids[t], NULL, scan_piece, &pieces[t]) == 0;
  }
  scan_piece(&pieces[0]);
  for (int t = 1; t < threads; t++) {
    if (started[t]) pthread_join(ids[t], NULL);
    else scan_piece(&pieces[t]);
  }
  for (int t = 0; t < threads; t++) {
    if (pieces[t].found >= 0) return t * pairs + pieces[t].found;
  }
  return -1;
}

int64_t values_offsets(const void* offsets, int width, int64_t n, int64_t low, int64_t high, int64_t split_bytes,
                       int threads) {
  if (n <= 0) return -1;
  if (offset_at(offsets, width, 0) < low) return 0;
  if (offset_at(offsets, width, n - 1) > high) return n - 1;
  int use = threads_for(n, width, split_bytes, threads);
  return use > 1 ? in_order_split(offsets, width, n, use) : in_order(offsets, width, n);
}

/* ---- indices ---------------------------------------------------------------------------------------------- */

/* One unsigned comparison of the element's own width per index (a negative signed index becomes a value past any
 * limit), so the block loop vectorises; `limit` is first cut to what the width can hold: MAX_INDEX + 1 for signed
 * types (their negative values stay bad), and for unsigned ones a limit past every value means none is bad. */
#define INDICES_SCAN(T, UT, MAX_INDEX, SIGNED)                                                              \
  static int64_t indices_##T(const T* v, int64_t n, int64_t limit, const uint8_t* validity, int64_t bit) { \
    int past = (uint64_t)limit > (uint64_t)(MAX_INDEX);                                                    \
    if (past && !(SIGNED)) return -1;                                                                      \
    UT lim = past ? (UT)((uint64_t)(MAX_INDEX) + 1) : (UT)limit;                                           \
    for (int64_t i = 0; i < n; i += kBlock) {                                                              \
      int64_t m = n - i < kBlock ? n - i : kBlock;                                                         \
      int bad = 0;                                                                                         \
      if (m == kBlock) {                                                                                   \
        for (int k = 0; k < kBlock; k++) bad |= (UT)v[i + k] >= lim;                                       \
      } else {                                                                                             \
        for (int64_t k = 0; k < m; k++) bad |= (UT)v[i + k] >= lim;                                        \
      }                                                                                                    \
      if (!bad) continue;                                                                                  \
      for (int64_t k = 0; k < m; k++) {                                                                    \
        if ((UT)v[i + k] >= lim && (validity == NULL || bit_set(validity, bit + i + k))) return i + k;     \
      }                                                                                                    \
    }                                                                                                      \
    return -1;                                                                                             \
  }
INDICES_SCAN(int8_t, uint8_t, INT8_MAX, 1)
INDICES_SCAN(int16_t, uint16_t, INT16_MAX, 1)
INDICES_SCAN(int32_t, uint32_t, INT32_MAX, 1)
INDICES_SCAN(int64_t, uint64_t, INT64_MAX, 1)
INDICES_SCAN(uint8_t, uint8_t, UINT8_MAX, 0)
INDICES_SCAN(uint16_t, uint16_t, UINT16_MAX, 0)
INDICES_SCAN(uint32_t, uint32_t, UINT32_MAX, 0)
INDICES_SCAN(uint64_t, uint64_t, INT64_MAX, 1) /* as int64: PyArrow reads uint64 indices so */

int64_t values_indices(const void* values, int width, int is_signed, int64_t n, int64_t limit,
                       const uint8_t* validity, int64_t bit_offset) {
  if (limit < 0) limit = 0;
  switch (width * (is_signed ? 1 : -1)) {
    case 1: return indices_int8_t(values, n, limit, validity, bit_offset);
    case 2: return indices_int16_t(values, n, limit, validity, bit_offset);
    case 4: return indices_int32_t(values, n, limit, validity, bit_offset);
    case 8: return indices_int64_t(values, n, limit, validity, bit_offset);
    case -1: return indices_uint8_t(values, n, limit, validity, bit_offset);
    case -2: return indices_uint16_t(values, n, limit, validity, bit_offset);
    case -4: return indices_uint32_t(values, n, limit, validity, bit_offset);
    default: return indices_uint64_t(values, n, limit, validity, bit_offset);
  }
}

/* ---- views, list views, run ends, unions --------------------------------------------------------------------- */

static int view_bad(const uint8_t* view, const int64_t* sizes, int64_t n_buffers) {
  int32_t fields[4];
  memcpy(fields, view, 16);
  if (fields[0] < 0) return 1;
  if (fields[0] <= 12) return 0; /* inline: the bytes are in the view */
  if (fields[2] < 0 || fields[2] >= n_buffers || fields[3] < 0) return 1;
  return (int64_t)fields[3] + fields[0] > sizes[fields[2]];
}

int64_t values_views(const uint8_t* views, int64_t n, const int64_t* sizes, int64_t n_buffers,
                     const uint8_t* validity, int64_t bit_offset) {
  for (int64_t i = 0; i < n; i++) {
    if (view_bad(views + 16 * i, sizes, n_buffers) && (validity == NULL || bit_set(validity, bit_offset + i))) {
      return i;
    }
  }
  return -1;
}

#define LIST_VIEWS_SCAN(T)                                                           \
  static int64_t list_views_##T(const T* o, const T* s, int64_t n, int64_t limit) { \
    for (int64_t i = 0; i < n; i++) {                                               \
      int64_t off = o[i], size = s[i];                                              \
      if (off < 0 || size < 0 || off > limit || size > limit - off) return i;       \
    }                                                                               \
    return -1;                                                                      \
  }
LIST_VIEWS_SCAN(int32_t)
LIST_VIEWS_SCAN(int64_t)

int64_t values_list_views(const void* offsets, const void* sizes, int width, int64_t n, int64_t limit) {
  return width == 4 ? list_views_int32_t(offsets, sizes, n, limit) : list_views_int64_t(offsets, sizes, n, limit);
}

#define RUN_ENDS_SCAN(T)                                               \
  static int64_t run_ends_##T(const T* e, int64_t n, int64_t end) {   \
    if (e[0] <= 0) return 0;                                          \
    for (int64_t i = 1; i < n; i++)                                   \
      if (e[i] <= e[i - 1]) return i;                                 \
    return (int64_t)e[n - 1] < end ? n - 1 : -1;                      \
  }
RUN_ENDS_SCAN(int16_t)
RUN_ENDS_SCAN(int32_t)
RUN_ENDS_SCAN(int64_t)

int64_t values_run_ends(const void* ends, int width, int64_t n, int64_t end) {
  if (n <= 0) return end > 0 ? 0 : -1;
  if (width == 2) return run_ends_int16_t(ends, n, end);
  return width == 4 ? run_ends_int32_t(ends, n, end) : run_ends_int64_t(ends, n, end);
}

int64_t values_union(const int8_t* ids, const int32_t* offsets, int64_t n, const int64_t* lengths) {
  int32_t last[128] = {0}; /* each child's last offset: a child's offsets do not go down (PyArrow's rule) */
  for (int64_t i = 0; i < n; i++) {
    if (ids[i] < 0 || lengths[ids[i]] < 0) return i;
    if (offsets == NULL) continue;
    if (offsets[i] < last[ids[i]] || offsets[i] >= lengths[ids[i]]) return i;
    last[ids[i]] = offsets[i];
  }
  return -1;
}
