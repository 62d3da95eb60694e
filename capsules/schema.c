/* Schema trees: deep copies that stand alone, and keys that identify a tree's content.
 *
 * Invariants:
 * S1 Every node of a copy stands alone, as exported array nodes do (container.c C2): its own
 *    release and private_data, so a consumer may move children out and release nodes in any
 *    order. A node's release releases the children it still owns. The nodes of one copy share
 *    one allocation (strings, child pointers and child structs included), freed by whichever
 *    node is released last.
 * S2 A key is a prefix-free encoding of everything a consumer can see in a tree: two trees have
 *    equal keys exactly when they describe the same type, names, nullability and metadata. So a
 *    type parsed (and validated) for one key may stand for any tree with that key. schema_equal
 *    compares the same content in place, without making a key.
 * S3 A copy keeps only the flags that mean something for each node's type (relevant_flags), so a
 *    copy is what nanoarrow parses: a producer's tree goes through schema_check (check.c) first,
 *    then is copied, and only the copy is parsed.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"  /* g_stats, NodeBlock */
#include "path_error.h" /* kMaxDepth */
#include "released.h"
#include "schema.h"

/* A copy takes one allocation, a NodeBlock (container.h): its header, then per node a SchemaNode
 * followed by the node's child structs, dictionary struct, child pointers and strings. Whichever
 * node is released last frees it (S1). */

typedef struct SchemaNode {
  NodeBlock* block;
  int64_t n_children;
  struct ArrowSchema** children;  /* into the block */
  struct ArrowSchema* dictionary; /* into the block, or NULL */
} SchemaNode;

static void release_schema_copy(struct ArrowSchema* schema) {
  SchemaNode* node = (SchemaNode*)schema->private_data;
  for (int64_t i = 0; i < node->n_children; i++) {
    ArrowSchemaReleaseIfLive(node->children[i]);
  }
  if (node->dictionary != NULL) ArrowSchemaReleaseIfLive(node->dictionary);
  NodeBlock* block = node->block;
  ArrowSchemaMarkReleased(schema); /* before the block may go: schema itself may live in it */
  schema->private_data = NULL;
  node_block_release_node(block, &g_stats.schema_blocks);
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

static size_t string_bytes(const char* s) { return s != NULL ? strlen(s) + 1 : 0; }

/* Bytes one node of src takes in a block, rounded up to keep the next node aligned. */
static size_t node_bytes(const struct ArrowSchema* src) {
  size_t structs = (size_t)src->n_children + (src->dictionary != NULL);
  size_t bytes = sizeof(SchemaNode) + structs * sizeof(struct ArrowSchema) + (size_t)src->n_children * sizeof(void*) +
                 string_bytes(src->format) + string_bytes(src->name) + metadata_size(src->metadata);
  return (bytes + 15) & ~(size_t)15;
}

static size_t tree_bytes(const struct ArrowSchema* src, int64_t* nodes) {
  size_t total = node_bytes(src);
  *nodes += 1;
  for (int64_t i = 0; i < src->n_children; i++) total += tree_bytes(src->children[i], nodes);
  return src->dictionary != NULL ? total + tree_bytes(src->dictionary, nodes) : total;
}

/* Copies n bytes to *cursor and advances it; returns where they went (NULL stays NULL). */
static char* put_bytes(char** cursor, const char* src, size_t n) {
  if (src == NULL) return NULL;
  char* out = *cursor;
  memcpy(out, src, n);
  *cursor += n;
  return out;
}

/* The flags of src that mean something for its type: the specification calls dictionary-ordered
 * relevant to dictionaries only and keys-sorted to maps only, and nanoarrow refuses either flag
 * elsewhere, though PyArrow accepts them (S3). */
static int64_t relevant_flags(const struct ArrowSchema* src) {
  int64_t flags = src->flags & ARROW_FLAG_NULLABLE;
  if (src->dictionary != NULL) flags |= src->flags & ARROW_FLAG_DICTIONARY_ORDERED;
  if (strcmp(src->format, "+m") == 0) flags |= src->flags & ARROW_FLAG_MAP_KEYS_SORTED;
  return flags;
}

/* Copies node src (and its subtree) into dst, carving from the block at *cursor. */
static void copy_node(const struct ArrowSchema* src, NodeBlock* block, char** cursor, struct ArrowSchema* dst) {
  int64_t n = src->n_children;
  SchemaNode* node = (SchemaNode*)*cursor;
  char* end = *cursor + node_bytes(src);
  struct ArrowSchema* child_structs = (struct ArrowSchema*)(node + 1);
  node->block = block;
  node->n_children = n;
  node->children = (struct ArrowSchema**)(child_structs + n + (src->dictionary != NULL));
  node->dictionary = src->dictionary != NULL ? &child_structs[n] : NULL;
  char* strings = (char*)(node->children + n);
  memset(dst, 0, sizeof *dst);
  dst->format = put_bytes(&strings, src->format, string_bytes(src->format));
  dst->name = put_bytes(&strings, src->name, string_bytes(src->name));
  dst->metadata = put_bytes(&strings, src->metadata, metadata_size(src->metadata));
  dst->flags = relevant_flags(src);
  dst->n_children = n;
  dst->children = n > 0 ? node->children : NULL;
  dst->dictionary = node->dictionary;
  dst->release = release_schema_copy;
  dst->private_data = node;
  *cursor = end;
  for (int64_t i = 0; i < n; i++) {
    node->children[i] = &child_structs[i];
    copy_node(src->children[i], block, cursor, node->children[i]);
  }
  if (node->dictionary != NULL) copy_node(src->dictionary, block, cursor, node->dictionary);
}

int schema_deep_copy(const struct ArrowSchema* src, struct ArrowSchema* dst) {
  memset(dst, 0, sizeof *dst);
  int64_t nodes = 0;
  size_t bytes = tree_bytes(src, &nodes);
  char* cursor = NULL;
  NodeBlock* block = node_block_new(bytes, nodes, &g_stats.schema_blocks, &cursor);
  if (block == NULL) return ENOMEM;
  copy_node(src, block, &cursor, dst);
  return 0;
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
  if (b == NULL || ArrowSchemaIsReleased(b) || b->format == NULL) return 0;
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
  if (s == NULL || ArrowSchemaIsReleased(s) || s->format == NULL || depth > kMaxDepth) return -1;
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
