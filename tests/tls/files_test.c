/* SPDX-License-Identifier: Apache-2.0 */
/* The `tls:` map of the server's and the agent's configs, read from real files: paths
 * relative to the config's directory, a private key others can read refused with the key
 * and the file named, a certificate without its key, a file that is not PEM, an unknown
 * key, and a client CA without a certificate to serve HTTPS with. */
#include "test.h"

#include <sys/stat.h>

#include "agent/config.h"
#include "server/state/config.h"
#include "tls/tls.h"

static char dir[256];
static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

static void put(const char *name, const char *text, mode_t mode) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs(text, f);
  fclose(f);
  REQUIRE(chmod(path, mode) == 0);
}

/* A directory with ca.pem, srv.pem and srv.key (0600), and `config` as server.yaml. */
static void setup(const char *config) {
  snprintf(dir, sizeof dir, "/tmp/gpool-tls-test.XXXXXX");
  REQUIRE(mkdtemp(dir));
  put("ca.pem", pem, 0644);
  put("srv.pem", pem, 0644);
  put("srv.key", "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n", 0600);
  put("server.yaml", config, 0600);
}

static void teardown(void) {
  const char *names[] = {"ca.pem", "srv.pem", "srv.key", "server.yaml", "agent.yaml", "plain.txt"};
  char path[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static int load(gp_server_config **cfg, gp_err *err) {
  char path[512];
  snprintf(path, sizeof path, "%s/server.yaml", dir);
  return gp_server_config_load(path, cfg, err);
}

static void server_reads_paths_relative_to_its_config(void) {
  setup("tls: {cert: srv.pem, key: srv.key, client_ca: ca.pem, agent_ca: ca.pem}\n");
  gp_server_config *cfg = NULL;
  gp_err err = {0};
  CHECK_EQ_INT(0, load(&cfg, &err));
  REQUIRE(cfg);
  char want[600];
  snprintf(want, sizeof want, "%s/srv.key", dir);
  CHECK_EQ_STR(want, cfg->tls.key);
  snprintf(want, sizeof want, "%s/ca.pem", dir);
  CHECK_EQ_STR(want, cfg->tls.peer_ca);
  CHECK(gp_tls_files_serving(&cfg->tls));
  gp_server_config_free(cfg);
  teardown();
}

static void exposed_key_is_refused_naming_key_and_file(void) {
  setup("tls: {cert: srv.pem, key: srv.key}\n");
  char path[512];
  snprintf(path, sizeof path, "%s/srv.key", dir);
  REQUIRE(chmod(path, 0640) == 0);
  gp_server_config *cfg = NULL;
  gp_err err = {0};
  CHECK_EQ_INT(GP_EPERM, load(&cfg, &err));
  CHECK(cfg == NULL);
  CHECK_EQ_STR("tls.key", err.field);
  CHECK_EQ_INT(1, err.line);
  CHECK_CONTAINS(err.message, path);
  CHECK_CONTAINS(err.message, "0640");
  teardown();
}

static void bad_tls_maps_are_refused(void) {
  struct {
    const char *yaml;
    int rc;
    const char *field;
    const char *says;
  } cases[] = {
      {"tls: {cert: srv.pem}\n", GP_EINVAL, "tls.key", "go together"},
      {"tls: {key: srv.key}\n", GP_EINVAL, "tls.cert", "go together"},
      {"tls: {client_ca: ca.pem}\n", GP_EINVAL, "tls.client_ca", "HTTPS"},
      {"tls: {cert: srv.pem, key: srv.key, server_ca: ca.pem}\n", GP_EINVAL, "tls.server_ca", "unknown"},
      {"tls: {cert: nothing.pem, key: srv.key}\n", GP_EIO, "tls.cert", "nothing.pem"},
      {"tls: {cert: plain.txt, key: srv.key}\n", GP_EINVAL, "tls.cert", "not a PEM file"},
      {"tls: {cert: '', key: srv.key}\n", GP_EINVAL, "tls.cert", "file path"},
      {"tls: srv.pem\n", GP_EINVAL, "tls", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setup(cases[i].yaml);
    put("plain.txt", "not a certificate\n", 0644);
    gp_server_config *cfg = NULL;
    gp_err err = {0};
    CHECK_EQ_INT(cases[i].rc, load(&cfg, &err));
    CHECK(cfg == NULL);
    CHECK_CONTAINS(err.field, cases[i].field);
    CHECK_CONTAINS(err.message, cases[i].says);
    teardown();
  }
}

static void agent_names_the_server_ca(void) {
  setup("");
  put("agent.yaml", "tls: {cert: srv.pem, key: srv.key, server_ca: ca.pem}\n", 0600);
  char path[512];
  snprintf(path, sizeof path, "%s/agent.yaml", dir);
  gp_agent_config cfg;
  gp_agent_config_init(&cfg);
  gp_err err = {0};
  CHECK_EQ_INT(0, gp_agent_config_load(path, &cfg, &err));
  char want[600];
  snprintf(want, sizeof want, "%s/ca.pem", dir);
  CHECK_EQ_STR(want, cfg.tls.peer_ca);
  CHECK(!cfg.tls.client_ca[0]);
  put("agent.yaml", "tls: {cert: srv.pem, key: srv.key, agent_ca: ca.pem}\n", 0600);
  gp_agent_config_init(&cfg);
  CHECK_EQ_INT(GP_EINVAL, gp_agent_config_load(path, &cfg, &err));
  CHECK_CONTAINS(err.field, "tls.agent_ca");
  teardown();
}

static void pem_reader_bounds_the_file(void) {
  setup("");
  char *big = malloc(GP_TLS_PEM_MAX + 64);
  REQUIRE(big);
  memset(big, 'A', GP_TLS_PEM_MAX + 63);
  memcpy(big, "-----BEGIN X-----\n", 18);
  big[GP_TLS_PEM_MAX + 63] = '\0';
  put("plain.txt", big, 0644);
  free(big);
  char path[512];
  snprintf(path, sizeof path, "%s/plain.txt", dir);
  char *text = NULL;
  gp_err err = {0};
  CHECK_EQ_INT(GP_ELIMIT, gp_tls_pem_read(path, false, "tls.cert", &text, &err));
  CHECK(text == NULL);
  snprintf(path, sizeof path, "%s/srv.pem", dir);
  CHECK_EQ_INT(0, gp_tls_pem_read(path, false, "tls.cert", &text, &err));
  CHECK_EQ_STR(pem, text);
  free(text);
  CHECK_EQ_INT(GP_EINVAL, gp_tls_pem_read(dir, false, "tls.cert", &text, &err)); /* a directory */
  teardown();
}

GP_TESTS(server_reads_paths_relative_to_its_config, exposed_key_is_refused_naming_key_and_file,
         bad_tls_maps_are_refused, agent_names_the_server_ca, pem_reader_bounds_the_file)
