/* Exported array streams over arrays that arrowdev already holds.
 *
 * Every array a stream will yield is exported when the stream is made, with the GIL held, so
 * get_schema / get_next / release never touch Python and may run on any thread with the GIL
 * released (Polars drains streams that way). Arrays never pulled are released with the stream.
 * The schema is deep-copied for each get_schema, so every copy stands alone (schema.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "released.h"
#include "schema.h"
#include "stream.h"

typedef struct StreamPrivate {
  struct ArrowSchema schema;
  struct ArrowDeviceArray* arrays;
  int64_t n_arrays;
  int64_t next;
  const char* last_error;
} StreamPrivate;

static StreamPrivate* stream_private_new(struct ArrowSchema* schema, struct ArrowDeviceArray* arrays,
                                         int64_t n) {
  StreamPrivate* p = calloc(1, sizeof *p);
  struct ArrowDeviceArray* held = calloc(n > 0 ? (size_t)n : 1, sizeof *held);
  if (p == NULL || held == NULL) {
    free(p);
    free(held);
    ArrowSchemaReleaseIfLive(schema);
    for (int64_t i = 0; i < n; i++) ArrowArrayReleaseIfLive(&arrays[i].array);
    return NULL;
  }
  memcpy(&p->schema, schema, sizeof *schema);
  ArrowSchemaMarkReleased(schema);
  memcpy(held, arrays, (size_t)n * sizeof *held);
  for (int64_t i = 0; i < n; i++) ArrowArrayMarkReleased(&arrays[i].array);
  p->arrays = held;
  p->n_arrays = n;
  atomic_fetch_add(&g_stats.exported_streams, 1);
  return p;
}

static void stream_private_free(StreamPrivate* p) {
  for (int64_t i = p->next; i < p->n_arrays; i++) {
    ArrowArrayReleaseIfLive(&p->arrays[i].array);
  }
  ArrowSchemaReleaseIfLive(&p->schema);
  free(p->arrays);
  free(p);
  atomic_fetch_sub(&g_stats.exported_streams, 1);
}

static int stream_schema(StreamPrivate* p, struct ArrowSchema* out) {
  int rc = schema_deep_copy(&p->schema, out);
  p->last_error = rc ? "out of memory copying the schema" : NULL;
  return rc;
}

/* The next array still held, or NULL at the end of the stream. */
static struct ArrowDeviceArray* stream_next(StreamPrivate* p) {
  return p->next < p->n_arrays ? &p->arrays[p->next++] : NULL;
}

static StreamPrivate* device_private(struct ArrowDeviceArrayStream* s) { return s->private_data; }
static int device_get_schema(struct ArrowDeviceArrayStream* s, struct ArrowSchema* out) {
  return stream_schema(device_private(s), out);
}
static int device_get_next(struct ArrowDeviceArrayStream* s, struct ArrowDeviceArray* out) {
  struct ArrowDeviceArray* next = stream_next(device_private(s));
  memset(out, 0, sizeof *out);
  if (next != NULL) {
    memcpy(out, next, sizeof *out);
    ArrowArrayMarkReleased(&next->array);
  }
  return 0;
}
static const char* device_last_error(struct ArrowDeviceArrayStream* s) { return device_private(s)->last_error; }
static void device_release(struct ArrowDeviceArrayStream* s) {
  stream_private_free(device_private(s));
  ArrowDeviceArrayStreamMarkReleased(s);
}

int export_device_stream(struct ArrowSchema* schema, struct ArrowDeviceArray* arrays, int64_t n,
                         ArrowDeviceType device_type, struct ArrowDeviceArrayStream* out) {
  memset(out, 0, sizeof *out);
  StreamPrivate* p = stream_private_new(schema, arrays, n);
  if (p == NULL) return ENOMEM;
  out->device_type = device_type;
  out->get_schema = device_get_schema;
  out->get_next = device_get_next;
  out->get_last_error = device_last_error;
  out->release = device_release;
  out->private_data = p;
  return 0;
}

static StreamPrivate* cpu_private(struct ArrowArrayStream* s) { return s->private_data; }
static int cpu_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  return stream_schema(cpu_private(s), out);
}
static int cpu_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct ArrowDeviceArray* next = stream_next(cpu_private(s));
  memset(out, 0, sizeof *out);
  if (next != NULL) {
    memcpy(out, &next->array, sizeof *out);
    ArrowArrayMarkReleased(&next->array);
  }
  return 0;
}
static const char* cpu_last_error(struct ArrowArrayStream* s) { return cpu_private(s)->last_error; }
static void cpu_release(struct ArrowArrayStream* s) {
  stream_private_free(cpu_private(s));
  ArrowArrayStreamMarkReleased(s);
}

int export_array_stream(struct ArrowSchema* schema, struct ArrowDeviceArray* arrays, int64_t n,
                        struct ArrowArrayStream* out) {
  memset(out, 0, sizeof *out);
  StreamPrivate* p = stream_private_new(schema, arrays, n);
  if (p == NULL) return ENOMEM;
  out->get_schema = cpu_get_schema;
  out->get_next = cpu_get_next;
  out->get_last_error = cpu_last_error;
  out->release = cpu_release;
  out->private_data = p;
  return 0;
}
