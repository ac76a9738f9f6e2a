/* SPDX-License-Identifier: Apache-2.0 */
/* Registry credentials (docs/containers.md#credentials): `gpool registry login` puts a
 * user's credential for one registry (PUT /v1/registries/REG), an admin a pool-wide one
 * (?pool=true) used for users who have none. A credential leaves the server only inside the
 * start order of its owner's job whose image comes from that registry, added as the order
 * is sent to the node running it (gp__srv_registry_order_doc): the stored order, the job's
 * document, the events and every API answer never hold it (GET lists registries only).
 *
 * In the store (settings "registry/USER/REG", "registry-pool/REG") a credential is sealed:
 * AES-256-GCM under a key of the server's own (<data_dir>/registry.key, 32 random bytes,
 * 0600, made on first use), with the setting's owner and registry as associated data, so
 * a store dump or backup holds no password and a sealed value moved to another user's name
 * does not open. The key file is what a store restore needs beside the database. */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/registry.h"
#include "server/state/server_int.h"
#include "server/state/state.h"
#include "util/mem.h"

#define KEY_BYTES 32
#define NONCE_BYTES 12
#define TAG_BYTES 16
#define MAX_ENTRIES 4096 /* credentials in all: a bound on what users can make the server keep */
#define MAX_PER_USER 32

typedef struct entry {
  char *user;   /* "" : pool-wide */
  char *registry;
  char *sealed; /* base64 of nonce, ciphertext and tag */
} entry;

struct gp__srv_registry_state {
  entry *v;
  size_t n, cap;
  unsigned char key[KEY_BYTES];
  bool have_key;
};

static struct gp__srv_registry_state *rst(gp_srv_state *s) {
  if (!s->registry_st) s->registry_st = gp_xcalloc(1, sizeof *s->registry_st);
  return s->registry_st;
}

void gp__srv_registry_free(gp_srv_state *s) {
  struct gp__srv_registry_state *r = s->registry_st;
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->v[i].user);
    free(r->v[i].registry);
    free(r->v[i].sealed);
  }
  free(r->v);
  explicit_bzero(r->key, sizeof r->key);
  free(r);
  s->registry_st = NULL;
}

/* Reads (or on first use makes) the key file. */
static int load_key(const gp_srv_state *s, struct gp__srv_registry_state *r, gp_err *err) {
  if (r->have_key) return 0;
  if (!s->cfg->data_dir)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "registry", "the server has no data directory for its key");
  char path[1024];
  snprintf(path, sizeof path, "%s/registry.key", s->cfg->data_dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    unsigned char k[KEY_BYTES];
    if (gnutls_rnd(GNUTLS_RND_KEY, k, sizeof k) != 0)
      return gp_err_set(err, GP_EIO, NULL, 0, "registry", "no random bytes for a key");
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && write(fd, k, sizeof k) == (ssize_t)sizeof k && fsync(fd) == 0;
    if (fd >= 0) close(fd);
    explicit_bzero(k, sizeof k);
    if (!ok) return gp_err_set(err, GP_EIO, NULL, 0, "registry", "cannot write %s", path);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd < 0) return gp_err_set(err, GP_EIO, NULL, 0, "registry", "cannot read %s: %s", path, strerror(errno));
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) == 0 &&
            read(fd, r->key, sizeof r->key) == (ssize_t)sizeof r->key;
  close(fd);
  if (!ok)
    return gp_err_set(err, GP_EIO, NULL, 0, "registry", "%s must be a 0600 file of %d bytes", path, KEY_BYTES);
  r->have_key = true;
  return 0;
}

static void aad(char *buf, size_t size, const char *user, const char *registry) {
  snprintf(buf, size, "gpool-registry\n%s\n%s", user, registry);
}

/* base64(nonce | AES-GCM(plain)) or NULL. */
static char *seal(struct gp__srv_registry_state *r, const char *user, const char *registry,
                  const char *plain) {
  size_t len = strlen(plain), ct_len = len + TAG_BYTES;
  unsigned char *buf = gp_xcalloc(1, NONCE_BYTES + ct_len);
  char ad[600];
  aad(ad, sizeof ad, user, registry);
  gnutls_datum_t key = {r->key, KEY_BYTES};
  gnutls_aead_cipher_hd_t h;
  char *out = NULL;
  if (gnutls_rnd(GNUTLS_RND_NONCE, buf, NONCE_BYTES) == 0 &&
      gnutls_aead_cipher_init(&h, GNUTLS_CIPHER_AES_256_GCM, &key) == 0) {
    int rc = gnutls_aead_cipher_encrypt(h, buf, NONCE_BYTES, ad, strlen(ad), TAG_BYTES, plain, len,
                                        buf + NONCE_BYTES, &ct_len);
    gnutls_aead_cipher_deinit(h);
    gnutls_datum_t in = {buf, (unsigned)(NONCE_BYTES + ct_len)}, b64 = {0};
    if (rc == 0 && gnutls_base64_encode2(&in, &b64) == 0) {
      out = gp_xstrdup((const char *)b64.data);
      gnutls_free(b64.data);
    }
  }
  free(buf);
  return out;
}

/* The plain text (owned, to be wiped) or NULL when it does not open. */
static char *unseal(struct gp__srv_registry_state *r, const char *user, const char *registry,
                    const char *sealed) {
  gnutls_datum_t in = {(unsigned char *)sealed, (unsigned)strlen(sealed)}, raw = {0};
  if (gnutls_base64_decode2(&in, &raw) != 0) return NULL;
  char *out = NULL;
  if (raw.size > NONCE_BYTES + TAG_BYTES) {
    size_t len = raw.size - NONCE_BYTES;
    char *plain = gp_xcalloc(1, len + 1);
    char ad[600];
    aad(ad, sizeof ad, user, registry);
    gnutls_datum_t key = {r->key, KEY_BYTES};
    gnutls_aead_cipher_hd_t h;
    if (gnutls_aead_cipher_init(&h, GNUTLS_CIPHER_AES_256_GCM, &key) == 0) {
      int rc = gnutls_aead_cipher_decrypt(h, raw.data, NONCE_BYTES, ad, strlen(ad), TAG_BYTES,
                                          raw.data + NONCE_BYTES, len, plain, &len);
      gnutls_aead_cipher_deinit(h);
      if (rc == 0) {
        plain[len] = '\0';
        out = plain;
      }
    }
    if (!out) free(plain);
  }
  gnutls_free(raw.data);
  return out;
}

static entry *find(struct gp__srv_registry_state *r, const char *user, const char *registry) {
  for (size_t i = 0; r && i < r->n; i++)
    if (!strcmp(r->v[i].user, user) && !strcmp(r->v[i].registry, registry)) return &r->v[i];
  return NULL;
}

static void put(struct gp__srv_registry_state *r, const char *user, const char *registry, char *sealed) {
  entry *e = find(r, user, registry);
  if (e) {
    free(e->sealed);
    e->sealed = sealed;
    return;
  }
  gp_xgrow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v);
  r->v[r->n++] = (entry){gp_xstrdup(user), gp_xstrdup(registry), sealed};
}

static void drop(struct gp__srv_registry_state *r, const char *user, const char *registry) {
  entry *e = find(r, user, registry);
  if (!e) return;
  free(e->user);
  free(e->registry);
  free(e->sealed);
  *e = r->v[--r->n];
}

static void setting_name(char *buf, size_t size, const char *user, const char *registry) {
  if (*user) snprintf(buf, size, "registry/%s/%s", user, registry);
  else snprintf(buf, size, "registry-pool/%s", registry);
}

void gp__srv_registry_loaded(gp_srv_state *s, const char *name, const char *doc) {
  char user[GP_SRV_SETTING_NAME_MAX] = "";
  const char *reg;
  if (!strncmp(name, "registry-pool/", 14)) {
    reg = name + 14;
  } else {
    const char *rest = name + 9, *slash = strrchr(rest, '/');
    if (!slash || slash == rest || (size_t)(slash - rest) >= sizeof user) {
      fprintf(stderr, "gpool server: registry: the stored credential %s names no user; ignored\n", name);
      return;
    }
    snprintf(user, sizeof user, "%.*s", (int)(slash - rest), rest);
    reg = slash + 1;
  }
  json_t *o = json_loads(doc, 0, NULL);
  const char *sealed = json_string_value(json_object_get(o, "sealed"));
  if (!gp_proto_registry_check(reg) && sealed)
    put(rst(s), user, reg, gp_xstrdup(sealed));
  else
    fprintf(stderr, "gpool server: registry: the stored credential %s is not valid; ignored\n", name);
  json_decref(o);
}

static json_t *list_json(gp_srv_state *s, const char *user) {
  json_t *a = json_array();
  struct gp__srv_registry_state *r = s->registry_st;
  for (size_t i = 0; r && i < r->n; i++) {
    bool pool = !*r->v[i].user;
    if (!pool && strcmp(r->v[i].user, user)) continue;
    json_array_append_new(a, json_pack("{s:s, s:s}", "registry", r->v[i].registry, "scope",
                                       pool ? "pool" : "user"));
  }
  return json_pack("{s:o}", "registries", a);
}

/* "user:password" in base64, bounded and checked. */
static int credential(gp_srv_req *req, char **ret) {
  const char *u = json_string_value(json_object_get(req->json, "username"));
  const char *p = json_string_value(json_object_get(req->json, "password"));
  if (!json_is_object(req->json) || !u || !p) {
    gp__srv_reply_error(req, 400, "invalid_argument", NULL, "the body is {\"username\", \"password\"}");
    return -1;
  }
  const char *why = NULL, *field = "username";
  if (!*u || strlen(u) > GP_PROTO_REGISTRY_USER_MAX) why = "1 to 256 bytes";
  else if (strchr(u, ':')) why = "has no ':'";
  else if (!*p || strlen(p) > GP_PROTO_REGISTRY_PASSWORD_MAX) why = "1 to 4096 bytes", field = "password";
  for (const char *c = u; !why && *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) why = "has no control characters";
  for (const char *c = p; !why && *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) why = "has no control characters", field = "password";
  if (why) {
    gp__srv_reply_error(req, 400, "invalid_argument", field, "%s: %s", field, why);
    return -1;
  }
  size_t n = strlen(u) + 1 + strlen(p);
  char *plain = gp_xcalloc(1, n + 1);
  snprintf(plain, n + 1, "%s:%s", u, p);
  gnutls_datum_t in = {(unsigned char *)plain, (unsigned)n}, b64 = {0};
  int rc = gnutls_base64_encode2(&in, &b64);
  explicit_bzero(plain, n);
  free(plain);
  if (rc != 0) {
    gp__srv_reply_error(req, 500, "internal", NULL, "cannot encode the credential");
    return -1;
  }
  *ret = gp_xstrdup((const char *)b64.data);
  explicit_bzero(b64.data, b64.size);
  gnutls_free(b64.data);
  return 0;
}

int gp__srv_registry_route(gp_srv_state *s, gp_srv_req *req, const char *rest, gp_err *err) {
  static const char *const keys[] = {"pool", NULL};
  if (!gp__srv_query_known(req, keys, "pool")) return 0;
  bool get = gp__srv_req_method(req, "GET"), put_m = gp__srv_req_method(req, "PUT"),
       del = gp__srv_req_method(req, "DELETE");
  if (!*rest) {
    if (!get) {
      gp__srv_reply_error(req, 405, "method_not_allowed", NULL, "use GET on /v1/registries");
      return 0;
    }
    gp__srv_reply_json(req, 200, list_json(s, req->user));
    return 0;
  }
  if (*rest != '/' || !(put_m || del)) {
    gp__srv_reply_error(req, 405, "method_not_allowed", NULL, "use PUT or DELETE on /v1/registries/REGISTRY");
    return 0;
  }
  const char *reg = rest + 1, *why = gp_proto_registry_check(reg);
  if (why) {
    gp__srv_reply_error(req, 400, "invalid_argument", "registry", "registry: %s", why);
    return 0;
  }
  const char *pool_q = gp__srv_req_query(req, "pool");
  bool pool = pool_q && !strcmp(pool_q, "true");
  if (req->role == GP_ROLE_VIEWER || (pool && !gp__srv_req_admin(req))) {
    gp__srv_reply_error(req, 403, "permission_denied", NULL,
                        pool ? "only an admin sets a pool-wide credential" : "viewers pull no images");
    return 0;
  }
  const char *owner = pool ? "" : req->user;
  char name[GP_SRV_SETTING_NAME_MAX];
  if (strlen(owner) + strlen(reg) + 16 > sizeof name) {
    gp__srv_reply_error(req, 400, "invalid_argument", "registry", "registry: too long for this user");
    return 0;
  }
  setting_name(name, sizeof name, owner, reg);
  struct gp__srv_registry_state *r = rst(s);
  if (del) {
    if (!find(r, owner, reg)) {
      gp__srv_reply_error(req, 404, "not_found", "registry", "no %s credential for %s",
                          pool ? "pool-wide" : "own", reg);
      return 0;
    }
    int rc = gp_store_put_setting(s->store, name, NULL, err);
    if (rc) return rc;
    drop(r, owner, reg);
    gp__srv_reply_json(req, 200, list_json(s, req->user));
    return 0;
  }
  size_t mine = 0;
  for (size_t i = 0; i < r->n; i++) mine += !strcmp(r->v[i].user, owner);
  if (!find(r, owner, reg) && (r->n >= MAX_ENTRIES || mine >= MAX_PER_USER)) {
    gp__srv_reply_error(req, 409, "too_many", NULL, "at most %d credentials per user", MAX_PER_USER);
    return 0;
  }
  char *auth = NULL;
  if (credential(req, &auth)) return 0;
  gp_err kerr = {0};
  if (load_key(s, r, &kerr)) {
    explicit_bzero(auth, strlen(auth));
    free(auth);
    fprintf(stderr, "gpool server: registry: %s\n", kerr.message);
    gp__srv_reply_error(req, 500, "internal", NULL, "the server cannot seal credentials: %s", kerr.message);
    return 0;
  }
  char *sealed = seal(r, owner, reg, auth);
  explicit_bzero(auth, strlen(auth));
  free(auth);
  if (!sealed) {
    gp__srv_reply_error(req, 500, "internal", NULL, "the server cannot seal the credential");
    return 0;
  }
  json_t *doc = json_pack("{s:s}", "sealed", sealed);
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  int rc = gp_store_put_setting(s->store, name, text, err);
  free(text);
  if (rc) {
    free(sealed);
    return rc;
  }
  put(r, owner, reg, sealed);
  gp__srv_reply_json(req, 200, list_json(s, req->user));
  return 0;
}

/* The credential for `image` of `user` (else the pool's; user NULL: the pool's only),
 * opened, or NULL; *pool says which it is. */
static char *credential_for(const gp_srv_state *s, const char *user, const char *image, bool *pool) {
  struct gp__srv_registry_state *r = s->registry_st;
  char reg[GP_PROTO_REGISTRY_MAX + 1];
  if (!r || r->n == 0 || !image || !gp_proto_image_registry(image, reg, sizeof reg)) return NULL;
  const entry *e = user ? find(r, user, reg) : NULL;
  if (!e) e = find(r, "", reg);
  if (!e) return NULL;
  if (pool) *pool = !e->user[0];
  gp_err err = {0};
  if (load_key(s, r, &err)) {
    fprintf(stderr, "gpool server: registry: %s\n", err.message);
    return NULL;
  }
  char *auth = unseal(r, e->user, e->registry, e->sealed);
  if (!auth) fprintf(stderr, "gpool server: registry: the credential for %s does not open with this key\n", reg);
  return auth;
}

char *gp__srv_registry_order_doc(const gp_srv_state *s, const gp_srv_order *o) {
  if (!s->registry_st || s->registry_st->n == 0) return NULL;
  char *auth = NULL;
  bool pool = true;
  json_t *doc = NULL, *where = NULL;
  if (o->is_start) {
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)o->job_id);
    const gp_srv_job *j = gp__srv_job_get(s, id);
    const char *image = j && j->container ? json_string_value(json_object_get(j->container, "image")) : NULL;
    if (!image || !j->user || !(auth = credential_for(s, j->user, image, &pool))) return NULL;
    doc = json_loads(o->doc, 0, NULL);
    where = json_object_get(doc, "job");
  } else if (o->job_id == 0 && strstr(o->doc, "\"pull_image\"")) {
    /* An admin's pre-pull: the pool-wide credential of the image's registry. */
    doc = json_loads(o->doc, 0, NULL);
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind || strcmp(kind, "pull_image") ||
        !(auth = credential_for(s, NULL, json_string_value(json_object_get(doc, "image")), NULL))) {
      json_decref(doc);
      return NULL;
    }
    where = doc;
  } else {
    return NULL;
  }
  char *out = NULL;
  if (json_is_object(where)) {
    json_object_set_new(where, "registry_auth", json_string(auth));
    /* The agent checks every later start in an image of a registry that a user's own
     * credential pulled from (docs/containers.md#credentials); the pool's needs no check. */
    if (o->is_start) json_object_set_new(where, "registry_auth_scope", json_string(pool ? "pool" : "user"));
    out = json_dumps(doc, JSON_COMPACT);
  }
  explicit_bzero(auth, strlen(auth));
  free(auth);
  json_decref(doc);
  return out;
}
