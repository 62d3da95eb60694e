/* Schema trees: deep copies that stand alone, and keys that identify a tree's content.
 *
 * Invariants:
 * S1 Every node of a copy stands alone, as exported array nodes do (container.c C2): its own
 *    release and private_data, so a consumer may move children out and release nodes in any
 *    order. A node's release releases the children it still owns, then frees its one block
 *    (the strings, child pointers and child structs of that node live in it).
 * S2 A key is a prefix-free encoding of everything a consumer can see in a tree: two trees have
 *    equal keys exactly when they describe the same type, names, nullability and metadata. So a
 *    type parsed (and validated) for one key may stand for any tree with that key. schema_equal
 *    compares the same content in place, without making a key.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

static const int kMaxDepth = 256; /* as for arrays (container.c): deeper trees are refused */

/* The private data of a copied node: one block holding everything the node points to. */
typedef struct SchemaBlock {
  int64_t n_children;
  struct ArrowSchema** children;    /* into this block */
  struct ArrowSchema* dictionary;   /* into this block, or NULL */
  /* then: child structs, dictionary struct, child pointers, format, name, metadata bytes */
} SchemaBlock;

static void release_schema_copy(struct ArrowSchema* schema) {
  SchemaBlock* b = (SchemaBlock*)schema->private_data;
  for (int64_t i = 0; i < b->n_children; i++) {
    if (b->children[i]->release != NULL) b->children[i]->release(b->children[i]);
  }
  if (b->dictionary != NULL && b->dictionary->release != NULL) b->dictionary->release(b->dictionary);
  free(b);
  schema->release = NULL;
  schema->private_data = NULL;
}

/* The metadata encoding: int32 pair count, then per pair int32 length + key bytes, int32 length +
 * value bytes, in native byte order. */
static size_t metadata_size(const char* metadata) {
  if (metadata == NULL) return 0;
  int32_t n, len;
  memcpy(&n, metadata, 4);
  size_t pos = 4;
  for (int32_t i = 0; i < 2 * n; i++) {
    memcpy(&len, metadata + pos, 4);
    pos += 4 + (size_t)len;
  }
  return pos;
}

/* Copies n bytes to *cursor and advances it; returns where they went (NULL stays NULL). */
static char* put_bytes(char** cursor, const char* src, size_t n) {
  if (src == NULL) return NULL;
  char* out = *cursor;
  memcpy(out, src, n);
  *cursor += n;
  return out;
}

int schema_deep_copy(const struct ArrowSchema* src, struct ArrowSchema* dst) {
  memset(dst, 0, sizeof *dst);
  int64_t n = src->n_children;
  size_t structs = (size_t)n + (src->dictionary != NULL);
  size_t format_len = strlen(src->format) + 1;
  size_t name_len = src->name != NULL ? strlen(src->name) + 1 : 0;
  size_t metadata_len = metadata_size(src->metadata);
  size_t size = sizeof(SchemaBlock) + structs * sizeof(struct ArrowSchema) +
                (size_t)n * sizeof(struct ArrowSchema*) + format_len + name_len + metadata_len;
  SchemaBlock* b = calloc(1, size);
  if (b == NULL) return ENOMEM;
  struct ArrowSchema* child_structs = (struct ArrowSchema*)(b + 1);
  b->children = (struct ArrowSchema**)(child_structs + structs);
  b->dictionary = src->dictionary != NULL ? &child_structs[n] : NULL;
  char* cursor = (char*)(b->children + n);
  dst->format = put_bytes(&cursor, src->format, format_len);
  dst->name = put_bytes(&cursor, src->name, name_len);
  dst->metadata = put_bytes(&cursor, src->metadata, metadata_len);
  dst->flags = src->flags;
  dst->n_children = n;
  dst->children = n > 0 ? b->children : NULL;
  dst->dictionary = b->dictionary;
  dst->release = release_schema_copy;
  dst->private_data = b;
  int rc = 0;
  for (int64_t i = 0; i < n && rc == 0; i++) {
    b->children[i] = &child_structs[i];
    b->n_children = i + 1;
    rc = schema_deep_copy(src->children[i], b->children[i]);
  }
  if (rc == 0 && b->dictionary != NULL) rc = schema_deep_copy(src->dictionary, b->dictionary);
  if (rc) release_schema_copy(dst);
  return rc;
}

/* ---- content: equality and keys ---------------------------------------------------------- */

static int strings_equal(const char* a, const char* b) {
  return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Compares metadata field by field along a's encoding, so b is never read past a difference. */
static int metadata_equal(const char* a, const char* b) {
  if (a == NULL || b == NULL) return a == b;
  int32_t n, len;
  memcpy(&n, a, 4);
  if (memcmp(a, b, 4) != 0) return 0;
  size_t pos = 4;
  for (int32_t i = 0; i < 2 * n; i++) {
    memcpy(&len, a + pos, 4);
    if (memcmp(a + pos, b + pos, 4 + (size_t)len) != 0) return 0;
    pos += 4 + (size_t)len;
  }
  return 1;
}

int schema_equal(const struct ArrowSchema* a, const struct ArrowSchema* b) {
  if (b == NULL || b->release == NULL || b->format == NULL) return 0;
  if (strcmp(a->format, b->format) != 0 || !strings_equal(a->name, b->name) || a->flags != b->flags) return 0;
  if (a->n_children != b->n_children || (a->dictionary == NULL) != (b->dictionary == NULL)) return 0;
  if (!metadata_equal(a->metadata, b->metadata)) return 0;
  if (a->n_children > 0 && b->children == NULL) return 0;
  for (int64_t i = 0; i < a->n_children; i++) {
    if (!schema_equal(a->children[i], b->children[i])) return 0;
  }
  return a->dictionary == NULL || schema_equal(a->dictionary, b->dictionary);
}

static void key_append(SchemaKey* key, const void* bytes, size_t n) {
  if (key->failed) return;
  if (key->len + n > key->cap) {
    size_t cap = 2 * (key->len + n);
    char* grown = key->data == key->inline_bytes ? malloc(cap) : realloc(key->data, cap);
    if (grown == NULL) {
      key->failed = 1;
      return;
    }
    if (key->data == key->inline_bytes) memcpy(grown, key->inline_bytes, key->len);
    key->data = grown;
    key->cap = cap;
  }
  memcpy(key->data + key->len, bytes, n);
  key->len += n;
}

static void key_int(SchemaKey* key, int64_t value) { key_append(key, &value, sizeof value); }

/* A length (-1 for NULL), then the bytes: no two different values encode the same way. */
static void key_bytes(SchemaKey* key, const char* bytes, size_t n) {
  key_int(key, bytes == NULL ? -1 : (int64_t)n);
  if (bytes != NULL) key_append(key, bytes, n);
}

static int key_node(const struct ArrowSchema* s, int depth, SchemaKey* key) {
  if (s == NULL || s->release == NULL || s->format == NULL || depth > kMaxDepth) return -1;
  if (s->n_children < 0 || (s->n_children > 0 && s->children == NULL)) return -1;
  key_bytes(key, s->format, strlen(s->format));
  key_bytes(key, s->name, s->name != NULL ? strlen(s->name) : 0);
  key_bytes(key, s->metadata, metadata_size(s->metadata));
  key_int(key, s->flags);
  key_int(key, s->n_children);
  for (int64_t i = 0; i < s->n_children; i++) {
    if (key_node(s->children[i], depth + 1, key) != 0) return -1;
  }
  key_int(key, s->dictionary != NULL);
  return s->dictionary != NULL ? key_node(s->dictionary, depth + 1, key) : 0;
}

int schema_key(const struct ArrowSchema* schema, SchemaKey* key) {
  key->data = key->inline_bytes;
  key->len = 0;
  key->cap = sizeof key->inline_bytes;
  key->failed = 0;
  return key_node(schema, 0, key);
}

void schema_key_free(SchemaKey* key) {
  if (key->data != key->inline_bytes) free(key->data);
  key->data = key->inline_bytes;
}
