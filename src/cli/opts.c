/* SPDX-License-Identifier: Apache-2.0 */
/* The option scanner declared in opts.h. */
#include "cli/opts.h"

#include <stdio.h>
#include <string.h>

void gp_opt_init(gp_opt_iter *it, int argc, char **argv, int first) {
  memset(it, 0, sizeof *it);
  it->argc = argc;
  it->argv = argv;
  it->i = first;
}

static int fail(gp_opt_iter *it, gp_err *err, const char *fmt, const char *what) {
  char msg[400];
  snprintf(msg, sizeof msg, fmt, what);
  return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "%s%s%s", it->where ? it->where : "",
                    it->where ? ": " : "", msg);
}

int gp_opt_next(gp_opt_iter *it, const gp_opt *table, const char **ret_arg, gp_err *err) {
  if (it->dashdash || it->i >= it->argc) return GP_OPT_END;
  char *word = it->argv[it->i++];
  if (!strcmp(word, "--")) {
    it->dashdash = true;
    return GP_OPT_END;
  }
  if (word[0] != '-' || word[1] == '\0') {
    *ret_arg = word;
    return GP_OPT_POSITIONAL;
  }
  const gp_opt *o = NULL;
  const char *inline_arg = NULL;
  if (word[1] == '-') {
    const char *name = word + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (const gp_opt *t = table; t->id; t++)
      if (t->long_name && strlen(t->long_name) == len && !strncmp(t->long_name, name, len)) o = t;
    if (!o) return fail(it, err, "unknown option '%s'", word);
    if (eq) {
      if (!o->has_arg) return fail(it, err, "option '%s' takes no value", word);
      inline_arg = eq + 1;
    }
  } else {
    for (const gp_opt *t = table; t->id; t++)
      if (t->short_name && t->short_name == word[1]) o = t;
    if (!o) return fail(it, err, "unknown option '%s'", word);
    if (word[2]) {
      if (!o->has_arg) return fail(it, err, "option '%s' takes no value", word);
      inline_arg = word[2] == '=' ? word + 3 : word + 2;
    }
  }
  if (!o->has_arg) {
    *ret_arg = NULL;
    return o->id;
  }
  if (inline_arg) {
    *ret_arg = inline_arg;
    return o->id;
  }
  if (it->i >= it->argc) return fail(it, err, "option '%s' needs a value", word);
  *ret_arg = it->argv[it->i++];
  return o->id;
}

int gp_opt_split(char *line, char **words, int max) {
  int n = 0;
  char *r = line, *w = line;
  for (;;) {
    while (*r == ' ' || *r == '\t' || *r == '\r' || *r == '\n') r++;
    if (!*r || *r == '#') break;
    if (n >= max) return GP_ELIMIT;
    words[n++] = w;
    char quote = 0;
    while (*r) {
      if (quote) {
        if (*r == quote) {
          quote = 0;
          r++;
          continue;
        }
      } else if (*r == '\'' || *r == '"') {
        quote = *r++;
        continue;
      } else if (*r == ' ' || *r == '\t' || *r == '\r' || *r == '\n') {
        break;
      }
      *w++ = *r++;
    }
    if (quote) return GP_EINVAL;
    int at_end = !*r;
    if (!at_end) r++;
    *w++ = '\0';
    if (at_end) break;
  }
  return n;
}
