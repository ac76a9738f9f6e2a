/* SPDX-License-Identifier: Apache-2.0 */
/* agent.yaml: per-GPU sharing modes, labels, overrides and defaults; mistakes are named by
 * file, line and key. */
#include <sys/stat.h>

#include "agent/config.h"
#include "test.h"

static const char *write_tmp(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/gpool-agent-cfg-XXXXXX");
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  return path;
}

static void config_sets_modes_labels_and_overrides(void) {
  const char *path = write_tmp(
      "name: gpu-node-7\n"
      "data_dir: /srv/gpool\n"
      "models_dir: /data/hf/hub\n"
      "labels:\n  topology.block: b3\n  rack: r12\n"
      "capacity: spot\n"
      "cpus: 96\nmem: 1T\n"
      "grace: 2m\n"
      "sharing: shared\n"
      "gpus:\n  \"0-3\": exclusive\n  \"4\": mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb\n  \"5-7\": timeslice:4\n");
  gp_agent_config c;
  gp_agent_config_init(&c);
  gp_err err = {0};
  REQUIRE(gp_agent_config_load(path, &c, &err) == 0);
  unlink(path);
  CHECK_EQ_STR("gpu-node-7", c.name);
  CHECK_EQ_STR("/srv/gpool", c.data_dir);
  CHECK_EQ_STR("/data/hf/hub", c.models_dir);
  CHECK_EQ_STR("spot", c.capacity);
  CHECK_EQ_INT(96, c.cpus);
  CHECK_EQ_INT(1024 * 1024, c.mem_mib);
  CHECK_EQ_INT(120, c.grace_s);
  CHECK_EQ_INT(2, c.n_labels);
  CHECK_EQ_STR("rack", c.label_keys[1]);
  CHECK_EQ_STR("r12", c.label_values[1]);
  CHECK_EQ_INT(GP_MODE_EXCLUSIVE, gp_agent_config_gpu_mode(&c, 2)->mode);
  CHECK_EQ_INT(GP_MODE_MIG, gp_agent_config_gpu_mode(&c, 4)->mode);
  CHECK_EQ_STR("3g.40gb,2g.20gb,1g.10gb,1g.10gb", gp_agent_config_gpu_mode(&c, 4)->mig_layout);
  CHECK_EQ_INT(GP_MODE_TIMESLICE, gp_agent_config_gpu_mode(&c, 6)->mode);
  CHECK_EQ_INT(4, gp_agent_config_gpu_mode(&c, 6)->replicas);
  CHECK_EQ_INT(GP_MODE_SHARED, gp_agent_config_gpu_mode(&c, 9)->mode); /* node default */
  /* Flags add to and replace labels. */
  CHECK_EQ_INT(0, gp_agent_config_add_labels(&c, "rack=r13,zone=a", &err));
  CHECK_EQ_INT(3, c.n_labels);
  CHECK_EQ_STR("r13", c.label_values[1]);
}

static void mistakes_name_file_line_and_key(void) {
  struct {
    const char *text, *field, *words;
    int line;
  } cases[] = {
      {"gpus:\n  \"1\": timeslice\n", "gpus.1", "replica count", 2},
      {"gpus:\n  \"0-99\": shared\n", "gpus.0-99", "GPU index or range", 2},
      {"sharing: half\n", "sharing", "unknown sharing mode 'half'", 1},
      {"name: a\nheartbeat_s: 99\n", "heartbeat_s", "1 to 30", 2},
      {"name: a\nlabls: x\n", "labls", "unknown key", 2},
      {"labels:\n  \"bad key\": v\n", "labels.bad key", "character", 2},
      {"cpus: -3\n", "cpus", "1 to 100000", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *path = write_tmp(cases[i].text);
    gp_agent_config c;
    gp_agent_config_init(&c);
    gp_err err = {0};
    CHECK(gp_agent_config_load(path, &c, &err) != 0);
    unlink(path);
    CHECK_EQ_STR(path, err.file);
    CHECK_EQ_INT(cases[i].line, err.line);
    CHECK_CONTAINS(err.field, cases[i].field);
    CHECK_CONTAINS(err.message, cases[i].words);
  }
}

/* A config anyone may change is refused; one that holds the agent token is a secret. */
static void config_files_open_to_others_are_refused(void) {
  const char *path = write_tmp("name: a\n");
  gp_agent_config c;
  gp_err err = {0};
  REQUIRE(chmod(path, 0666) == 0);
  gp_agent_config_init(&c);
  CHECK_EQ_INT(GP_EPERM, gp_agent_config_load(path, &c, &err));
  CHECK_EQ_STR(path, err.file);
  CHECK_CONTAINS(err.message, "mode 0666 lets any user change it");
  REQUIRE(chmod(path, 0644) == 0);
  gp_agent_config_init(&c);
  CHECK_EQ_INT(0, gp_agent_config_load(path, &c, &err));
  unlink(path);
  path = write_tmp("name: a\ntoken: agent-secret-1\n");
  REQUIRE(chmod(path, 0640) == 0);
  gp_agent_config_init(&c);
  memset(&err, 0, sizeof err);
  CHECK_EQ_INT(GP_EPERM, gp_agent_config_load(path, &c, &err));
  CHECK_EQ_STR("token", err.field);
  CHECK_CONTAINS(err.message, "mode 0640 lets other users read it");
  REQUIRE(chmod(path, 0600) == 0);
  gp_agent_config_init(&c);
  CHECK_EQ_INT(0, gp_agent_config_load(path, &c, &err));
  CHECK_EQ_STR("agent-secret-1", c.token);
  unlink(path);
}

static void modes_parse_from_flags(void) {
  gp_gpu_mode m;
  CHECK_EQ_INT(0, gp_gpu_mode_parse("timeslice:8", &m, NULL));
  CHECK_EQ_INT(8, m.replicas);
  CHECK_EQ_INT(0, gp_gpu_mode_parse("mig:7g.80gb", &m, NULL));
  CHECK_EQ_STR("7g.80gb", m.mig_layout);
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_mode_parse("mig:", &m, NULL));
  CHECK_EQ_INT(GP_EINVAL, gp_gpu_mode_parse("timeslice:1", &m, NULL));
  CHECK_EQ_STR("timeslice", gp_agent_mode_name(GP_MODE_TIMESLICE));
}

GP_TESTS(config_files_open_to_others_are_refused, config_sets_modes_labels_and_overrides, mistakes_name_file_line_and_key,
         modes_parse_from_flags)
