/* SPDX-License-Identifier: Apache-2.0 */
/* Provider hooks: how gpool asks an outside program to create, delete and list the
 * machines of a node template, without any cloud SDK in gpool. docs/providers.md is the
 * protocol's specification; this module runs one call of it: it starts the template's
 * executable with the verb as its only argument, a clean environment and a JSON request
 * on stdin, reads a bounded answer from stdout within the request's deadline, and checks
 * every field of that answer before anyone uses it.
 *
 * Threading: no global state, no signal handlers; each call waits only for its own child
 * (by pid), so calls may run on any thread, several at once. A call never returns later
 * than the request's deadline plus a few milliseconds of reaping. */
#ifndef GP_PROVIDER_PROVIDER_H
#define GP_PROVIDER_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define GP_PROVIDER_MAX_STDOUT (1024 * 1024)  /* a longer answer is refused */
#define GP_PROVIDER_MAX_STDERR (64 * 1024)    /* kept for the log; the rest is read and dropped */
#define GP_PROVIDER_MAX_INSTANCES 1000        /* in one answer (and per call) */
#define GP_PROVIDER_ID_MAX 128                /* instance id, in bytes */
#define GP_PROVIDER_NODE_MAX 63               /* node name, in bytes */
#define GP_PROVIDER_KEY_MAX 128               /* idempotency key, in bytes */
#define GP_PROVIDER_MESSAGE_MAX 512           /* an error's message, in bytes (cut to fit) */
#define GP_PROVIDER_MAX_RETRY_AFTER_S 86400   /* a longer retry_after is cut to a day */
#define GP_PROVIDER_MAX_ENV 64                /* `env` entries of a template */

typedef enum gp_provider_verb {
  GP_PROVIDER_CREATE = 0,
  GP_PROVIDER_DELETE,
  GP_PROVIDER_LIST,
} gp_provider_verb;

/* The classes of a failed call. The first five are what a provider may answer; BROKEN is
 * gpool's verdict when the provider itself misbehaved (no answer by the deadline, an exit
 * status other than 0 or 1, a signal, output that is not a valid answer, too much output,
 * or an executable that cannot be started). */
typedef enum gp_provider_class {
  GP_PROVIDER_OK = 0,
  GP_PROVIDER_CAPACITY,   /* no machines of this kind now: try another template */
  GP_PROVIDER_QUOTA,      /* an account limit: more of this template will not come soon */
  GP_PROVIDER_AUTH,       /* credentials refused: an admin must act */
  GP_PROVIDER_TRANSIENT,  /* try the same call again later */
  GP_PROVIDER_INVALID,    /* the request was wrong: a config error, do not retry as is */
  GP_PROVIDER_BROKEN,
} gp_provider_class;

/* A node template (the config's `node_templates:` entry, docs/config.md). Strings are
 * borrowed by every call that takes one. */
typedef struct gp_provider_template {
  const char *name;           /* [A-Za-z0-9._-], unique in the config */
  const char *provider;       /* absolute path of the executable */
  const char *model;          /* GPU model the instances have */
  const char *capacity;       /* "on-demand", "reserved", "spot" or "on-prem" */
  int gpus;                   /* GPUs per instance */
  int64_t gpu_mem_mib;        /* per GPU; 0: not stated */
  double price_per_gpu_hour;  /* < 0: not stated */
  int max_nodes;              /* instances of this template at most */
  int n_labels;
  const char *const *label_keys, *const *label_values;
  int n_env;
  const char *const *env;     /* "NAME=value", added to the provider's clean environment */
} gp_provider_template;

typedef struct gp_provider_request {
  gp_provider_verb verb;
  const gp_provider_template *tmpl;
  int count;                      /* create: instances wanted, 1..GP_PROVIDER_MAX_INSTANCES */
  int n_instances;                /* delete: the ids to delete */
  const char *const *instances;
  const char *idempotency_key;    /* create and delete: the same key repeats the same call */
  int64_t deadline_ms;            /* Unix time in ms; the provider is stopped at it */
} gp_provider_request;

/* One instance of an answer. `node` is empty in a delete's answer; capacity is empty and
 * price < 0 where the provider did not say. */
typedef struct gp_provider_instance {
  char id[GP_PROVIDER_ID_MAX + 1];
  char node[GP_PROVIDER_NODE_MAX + 1];
  char capacity[16];
  double price_per_gpu_hour;
} gp_provider_instance;

typedef struct gp_provider_result {
  int n;                          /* create, list: instances; delete: ids deleted */
  gp_provider_instance *instances; /* owned (gp_provider_result_done) */
  char *stderr_text;              /* the provider's stderr, at most GP_PROVIDER_MAX_STDERR
                                     bytes, control characters but newline replaced; owned */
  int exit_status;                /* 0..255, or 128 + signal number when killed */
  int64_t elapsed_ms;
} gp_provider_result;

typedef struct gp_provider_error {
  gp_provider_class cls;
  char message[GP_PROVIDER_MESSAGE_MAX + 1]; /* one sentence, control characters replaced */
  int retry_after_s;              /* < 0: the provider named no time */
} gp_provider_error;

/* Runs one call. Returns 0 with *res filled, or a negative GP_E* (GP_EINVAL for a request
 * gpool should not have made, GP_EIO for any failed call) with *e saying why; *res holds
 * the stderr, exit status and time of a failed call too (for the log), and must be
 * released with gp_provider_result_done either way. */
int gp_provider_run(const gp_provider_request *req, gp_provider_result *res,
                    gp_provider_error *e);
void gp_provider_result_done(gp_provider_result *res); /* accepts a zeroed result */

const char *gp_provider_verb_name(gp_provider_verb v);
int gp_provider_verb_parse(const char *s, gp_provider_verb *ret); /* 0 or GP_EINVAL */
const char *gp_provider_class_name(gp_provider_class c);

/* True for an instance id ([A-Za-z0-9._:@/-], 1..GP_PROVIDER_ID_MAX bytes) and a node
 * name ([A-Za-z0-9._-], 1..GP_PROVIDER_NODE_MAX bytes, not starting with '.' or '-'). */
bool gp_provider_id_valid(const char *s);
bool gp_provider_node_valid(const char *s);

#endif
