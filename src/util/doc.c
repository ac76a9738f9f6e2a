/* SPDX-License-Identifier: Apache-2.0 */
/* Loads a YAML/JSON document with libyaml's event parser into the line-aware tree of
 * doc.h. Bounded in bytes, depth and nodes; aliases are refused (no billion laughs). */
#include "util/doc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "util/mem.h"
#include "util/units.h"

typedef struct builder {
  gp_doc *doc;
  yaml_parser_t parser;
  long nodes;
  gp_err *err;
} builder;

static int parse_node(builder *b, yaml_event_t *ev, int depth, gp_doc_node **ret);

static int fail(builder *b, int line, const char *msg) {
  return gp_err_set(b->err, GP_EPARSE, b->doc->name, line, NULL, "%s", msg);
}

static int next_event(builder *b, yaml_event_t *ev) {
  if (!yaml_parser_parse(&b->parser, ev)) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s%s%s", b->parser.problem ? b->parser.problem : "syntax error",
             b->parser.context ? " " : "", b->parser.context ? b->parser.context : "");
    return fail(b, (int)b->parser.problem_mark.line + 1, msg);
  }
  return 0;
}

static gp_doc_node *new_node(builder *b, gp_doc_kind kind, int line) {
  gp_doc_node *n = gp_arena_alloc(b->doc->arena, sizeof *n);
  n->kind = kind;
  n->line = line;
  return n;
}

/* Collects children into a temporary array, then copies it into the arena. */
typedef struct kids {
  gp_doc_node **items;
  const char **keys;
  size_t n, cap, kcap;
} kids;

static int parse_children(builder *b, gp_doc_node *parent, int depth) {
  kids k = {0};
  int r = 0;
  for (;;) {
    yaml_event_t ev;
    if ((r = next_event(b, &ev))) break;
    if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    const char *key = NULL;
    if (parent->kind == GP_DOC_MAP) {
      if (ev.type != YAML_SCALAR_EVENT) {
        r = fail(b, (int)ev.start_mark.line + 1, "map keys must be plain scalars");
        yaml_event_delete(&ev);
        break;
      }
      key = gp_arena_strdup(b->doc->arena, (const char *)ev.data.scalar.value);
      int key_line = (int)ev.start_mark.line + 1;
      yaml_event_delete(&ev);
      for (size_t i = 0; i < k.n; i++)
        if (strcmp(k.keys[i], key) == 0) {
          char msg[200];
          snprintf(msg, sizeof msg, "duplicate key '%.100s'", key);
          r = fail(b, key_line, msg);
          goto out;
        }
      if ((r = next_event(b, &ev))) break;
    }
    gp_doc_node *child;
    r = parse_node(b, &ev, depth + 1, &child);
    yaml_event_delete(&ev);
    if (r) break;
    gp_xgrow((void **)&k.items, &k.cap, k.n + 1, sizeof *k.items);
    if (key) {
      gp_xgrow((void **)&k.keys, &k.kcap, k.n + 1, sizeof *k.keys);
      k.keys[k.n] = key;
    }
    k.items[k.n++] = child;
  }
out:
  if (!r) {
    parent->n = (int)k.n;
    parent->items = gp_arena_alloc(b->doc->arena, (k.n ? k.n : 1) * sizeof *k.items);
    if (k.n) memcpy(parent->items, k.items, k.n * sizeof *k.items);
    if (parent->kind == GP_DOC_MAP) {
      parent->keys = gp_arena_alloc(b->doc->arena, (k.n ? k.n : 1) * sizeof *k.keys);
      if (k.n) memcpy(parent->keys, k.keys, k.n * sizeof *k.keys);
    }
  }
  free(k.items);
  free(k.keys);
  return r;
}

static int parse_node(builder *b, yaml_event_t *ev, int depth, gp_doc_node **ret) {
  int line = (int)ev->start_mark.line + 1;
  if (depth > GP_DOC_MAX_DEPTH) return fail(b, line, "document nested too deeply");
  if (++b->nodes > GP_DOC_MAX_NODES) return fail(b, line, "document has too many nodes");
  switch (ev->type) {
  case YAML_SCALAR_EVENT: {
    gp_doc_node *n = new_node(b, GP_DOC_SCALAR, line);
    n->scalar = gp_arena_strdup(b->doc->arena, (const char *)ev->data.scalar.value);
    n->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    *ret = n;
    return 0;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    gp_doc_node *n =
        new_node(b, ev->type == YAML_SEQUENCE_START_EVENT ? GP_DOC_SEQ : GP_DOC_MAP, line);
    int r = parse_children(b, n, depth);
    if (!r) *ret = n;
    return r;
  }
  case YAML_ALIAS_EVENT:
    return fail(b, line, "YAML aliases are not supported");
  default:
    return fail(b, line, "unexpected YAML event");
  }
}

int gp_doc_load_string(const char *name, const char *text, size_t len, gp_doc **ret,
                       gp_err *err) {
  if (len > GP_DOC_MAX_BYTES)
    return gp_err_set(err, GP_ELIMIT, name, 0, NULL, "document larger than %zu bytes",
                      GP_DOC_MAX_BYTES);
  builder b = {.err = err};
  b.doc = gp_xcalloc(1, sizeof *b.doc);
  b.doc->arena = gp_arena_new();
  b.doc->name = gp_arena_strdup(b.doc->arena, name ? name : "<input>");
  yaml_parser_initialize(&b.parser);
  yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
  int r = 0;
  bool in_doc = false, done = false;
  while (!r && !done) {
    yaml_event_t ev;
    if ((r = next_event(&b, &ev))) break;
    switch (ev.type) {
    case YAML_STREAM_END_EVENT: done = true; break;
    case YAML_DOCUMENT_START_EVENT:
      if (in_doc || b.doc->root) r = fail(&b, (int)ev.start_mark.line + 1, "only one document is allowed");
      in_doc = true;
      break;
    case YAML_DOCUMENT_END_EVENT: in_doc = false; break;
    case YAML_STREAM_START_EVENT: break;
    default: r = parse_node(&b, &ev, 0, &b.doc->root); break;
    }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&b.parser);
  if (r) {
    gp_doc_free(b.doc);
    return r;
  }
  *ret = b.doc;
  return 0;
}

int gp_doc_load_file(const char *path, gp_doc **ret, gp_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open: %s", strerror(errno));
  char *data = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    gp_xgrow((void **)&data, &cap, len + 65536, 1);
    size_t n = fread(data + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
    if (len > GP_DOC_MAX_BYTES) break;
  }
  bool bad = ferror(f);
  fclose(f);
  int r = bad ? gp_err_set(err, GP_EIO, path, 0, NULL, "read error")
              : gp_doc_load_string(path, data ? data : "", len, ret, err);
  free(data);
  return r;
}

void gp_doc_free(gp_doc *doc) {
  if (!doc) return;
  gp_arena_free(doc->arena);
  free(doc);
}

const gp_doc_node *gp_doc_get(const gp_doc_node *map, const char *key) {
  if (!map || map->kind != GP_DOC_MAP) return NULL;
  for (int i = 0; i < map->n; i++)
    if (strcmp(map->keys[i], key) == 0) return map->items[i];
  return NULL;
}

bool gp_doc_is_null(const gp_doc_node *n) {
  if (!n) return true;
  if (n->kind != GP_DOC_SCALAR || n->quoted) return false;
  return !n->scalar[0] || !strcmp(n->scalar, "~") || !strcmp(n->scalar, "null") ||
         !strcmp(n->scalar, "Null") || !strcmp(n->scalar, "NULL");
}

static const char *kind_name(gp_doc_kind k) {
  return k == GP_DOC_SCALAR ? "a value" : k == GP_DOC_SEQ ? "a list" : "a map";
}

static int type_error(const gp_doc *d, const gp_doc_node *n, const char *field, const char *want,
                      gp_err *err) {
  if (n && n->kind == GP_DOC_SCALAR)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, field, "expected %s, got '%.60s'", want,
                      n->scalar);
  return gp_err_set(err, GP_EINVAL, d->name, n ? n->line : 0, field, "expected %s, got %s", want,
                    n ? kind_name(n->kind) : "nothing");
}

int gp_doc_int(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t *ret,
               gp_err *err) {
  int64_t v;
  if (!n || n->kind != GP_DOC_SCALAR || gp_parse_int64(n->scalar, &v))
    return type_error(d, n, field, "an integer", err);
  *ret = v;
  return 0;
}

int gp_doc_int_range(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t lo,
                     int64_t hi, int *ret, gp_err *err) {
  int64_t v;
  int r = gp_doc_int(d, n, field, &v, err);
  if (r) return r;
  if (v < lo || v > hi)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, field, "must be between %lld and %lld",
                      (long long)lo, (long long)hi);
  *ret = (int)v;
  return 0;
}

int gp_doc_double(const gp_doc *d, const gp_doc_node *n, const char *field, double *ret,
                  gp_err *err) {
  double v;
  if (!n || n->kind != GP_DOC_SCALAR || gp_parse_double(n->scalar, &v))
    return type_error(d, n, field, "a number", err);
  *ret = v;
  return 0;
}

int gp_doc_bool(const gp_doc *d, const gp_doc_node *n, const char *field, bool *ret,
                gp_err *err) {
  if (n && n->kind == GP_DOC_SCALAR) {
    const char *s = n->scalar;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on")) {
      *ret = true;
      return 0;
    }
    if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off")) {
      *ret = false;
      return 0;
    }
  }
  return type_error(d, n, field, "true or false", err);
}

int gp_doc_str(const gp_doc *d, const gp_doc_node *n, const char *field, const char **ret,
               gp_err *err) {
  if (!n || n->kind != GP_DOC_SCALAR) return type_error(d, n, field, "a string", err);
  *ret = n->scalar;
  return 0;
}

int gp_doc_mem_mib(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t *ret,
                   gp_err *err) {
  int64_t v;
  if (!n || n->kind != GP_DOC_SCALAR || gp_parse_mem_mib(n->scalar, &v))
    return type_error(d, n, field, "a memory size such as 64G or 512M", err);
  *ret = v;
  return 0;
}

int gp_doc_duration_s(const gp_doc *d, const gp_doc_node *n, const char *field, int64_t *ret,
                      gp_err *err) {
  int64_t v;
  if (!n || n->kind != GP_DOC_SCALAR || gp_parse_duration_s(n->scalar, &v))
    return type_error(d, n, field, "a duration such as 3600, 30s or 4h", err);
  *ret = v;
  return 0;
}

const char *gp_doc_path(char *buf, size_t size, const char *path, const char *key) {
  snprintf(buf, size, "%s%s%s", path ? path : "", path && *path ? "." : "", key);
  return buf;
}

int gp_doc_enum(const gp_doc *d, const gp_doc_node *n, const char *field,
                const char *const *names, int count, int *ret, gp_err *err) {
  const char *v;
  int r = gp_doc_str(d, n, field, &v, err);
  if (r) return r;
  for (int i = 0; i < count; i++)
    if (strcmp(v, names[i]) == 0) {
      *ret = i;
      return 0;
    }
  char all[160] = "";
  for (int i = 0; i < count; i++)
    snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s",
             i ? (i == count - 1 ? " or " : ", ") : "", names[i]);
  return gp_err_set(err, GP_EINVAL, d->name, n->line, field, "must be %s, not \"%.64s\"", all, v);
}

int gp_doc_check_keys(const gp_doc *d, const gp_doc_node *map, const char *path,
                      const char *const *allowed, gp_err *err) {
  if (!map || map->kind != GP_DOC_MAP) return type_error(d, map, path, "a map", err);
  for (int i = 0; i < map->n; i++) {
    bool ok = false;
    for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, map->keys[i]);
    if (!ok) {
      char field[128];
      snprintf(field, sizeof field, "%s%s%s", path && *path ? path : "", path && *path ? "." : "",
               map->keys[i]);
      return gp_err_set(err, GP_EINVAL, d->name, map->items[i]->line, field, "unknown key");
    }
  }
  return 0;
}

int gp_doc_expect(const gp_doc *d, const gp_doc_node *n, const char *path, gp_doc_kind kind,
                  gp_err *err) {
  if (n && n->kind == kind) return 0;
  return type_error(d, n, path, kind_name(kind), err);
}
