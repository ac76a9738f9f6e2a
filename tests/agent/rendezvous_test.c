/* SPDX-License-Identifier: Apache-2.0 */
/* What each task of a gang is told about the others (agent/rendezvous.c): ranks among all
 * tasks and among those on its node, its node's rank with nodes numbered by their first
 * task (also when a node's tasks are not contiguous), task 0's address as MASTER_ADDR, the
 * host files for OpenMPI and MPICH, and an order from a server that sent no host list. */
#include <unistd.h>

#include "agent/rendezvous.h"
#include "test.h"

static gp_proto_start order(int tasks, int index, char **hosts, char **addrs, int n) {
  gp_proto_start o = {.tasks = tasks, .task_index = index, .hosts = hosts, .addrs = addrs,
                      .n_hosts = n, .n_addrs = addrs ? n : 0};
  return o;
}

static void two_nodes_two_tasks_each(void) {
  char *hosts[] = {"n1", "n1", "n2", "n2"}, *addrs[] = {"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"};
  const int local[] = {0, 1, 0, 1}, node[] = {0, 0, 1, 1};
  for (int t = 0; t < 4; t++) {
    gp_proto_start o = order(4, t, hosts, addrs, 4);
    gp__agent_layout l;
    gp__agent_layout_of(&o, "self", &l);
    CHECK_EQ_INT(4, l.tasks);
    CHECK_EQ_INT(t, l.rank);
    CHECK_EQ_INT(local[t], l.local_rank);
    CHECK_EQ_INT(2, l.local_size);
    CHECK_EQ_INT(node[t], l.node_rank);
    CHECK_EQ_INT(2, l.nodes);
    CHECK_EQ_STR("10.0.0.1", l.master);
  }
}

/* Nodes are ranked by their first task, whatever order the others come in. */
static void interleaved_tasks(void) {
  char *hosts[] = {"a", "b", "a", "c", "b"};
  const int local[] = {0, 0, 1, 0, 1}, size[] = {2, 2, 2, 1, 2}, node[] = {0, 1, 0, 2, 1};
  for (int t = 0; t < 5; t++) {
    gp_proto_start o = order(5, t, hosts, NULL, 5);
    gp__agent_layout l;
    gp__agent_layout_of(&o, "self", &l);
    CHECK_EQ_INT(local[t], l.local_rank);
    CHECK_EQ_INT(size[t], l.local_size);
    CHECK_EQ_INT(node[t], l.node_rank);
    CHECK_EQ_INT(3, l.nodes);
    CHECK_EQ_STR("a", l.master); /* no addresses: the node's name */
  }
}

static void without_a_host_list_every_task_is_here(void) {
  gp_proto_start o = order(3, 2, NULL, NULL, 0);
  gp__agent_layout l;
  gp__agent_layout_of(&o, "127.0.0.9", &l);
  CHECK_EQ_INT(2, l.rank);
  CHECK_EQ_INT(2, l.local_rank);
  CHECK_EQ_INT(3, l.local_size);
  CHECK_EQ_INT(0, l.node_rank);
  CHECK_EQ_INT(1, l.nodes);
  CHECK_EQ_STR("127.0.0.9", l.master);
}

static char *slurp(const char *path) {
  static char buf[4096];
  FILE *f = fopen(path, "r");
  REQUIRE(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void host_files_list_each_node_once(void) {
  char dir[] = "/tmp/gp_rdv_XXXXXX";
  REQUIRE(mkdtemp(dir));
  char ompi[200], mpich[200];
  snprintf(ompi, sizeof ompi, "%s/hostfile", dir);
  snprintf(mpich, sizeof mpich, "%s/hostfile.mpich", dir);
  char *hosts[] = {"a", "b", "a", "c", "b"}, *addrs[] = {"10.1.0.1", "10.1.0.2", "10.1.0.1", "fd00::3", "10.1.0.2"};
  gp_proto_start o = order(5, 3, hosts, addrs, 5);
  CHECK_EQ_INT(0, gp__agent_hostfiles_write(&o, "self", ompi, mpich));
  CHECK_EQ_STR("10.1.0.1 slots=2\n10.1.0.2 slots=2\nfd00::3 slots=1\n", slurp(ompi));
  CHECK_EQ_STR("10.1.0.1:2\n10.1.0.2:2\nfd00::3:1\n", slurp(mpich));
  gp_proto_start none = order(2, 0, NULL, NULL, 0);
  CHECK_EQ_INT(0, gp__agent_hostfiles_write(&none, "127.0.0.2", ompi, mpich));
  CHECK_EQ_STR("127.0.0.2 slots=2\n", slurp(ompi));
  CHECK_EQ_STR("127.0.0.2:2\n", slurp(mpich));
  char bad[250];
  snprintf(bad, sizeof bad, "%s/missing/hostfile", dir);
  CHECK_EQ_INT(-1, gp__agent_hostfiles_write(&o, "self", bad, mpich));
  unlink(ompi);
  unlink(mpich);
  rmdir(dir);
}

static void url_hosts(void) {
  char buf[64];
  gp__agent_url_host("http://10.0.0.5:7001", "n1", buf, sizeof buf);
  CHECK_EQ_STR("10.0.0.5", buf);
  gp__agent_url_host("https://[fd00::5]:7001", "n1", buf, sizeof buf);
  CHECK_EQ_STR("fd00::5", buf);
  gp__agent_url_host("http://node-7.example.org/", "n1", buf, sizeof buf);
  CHECK_EQ_STR("node-7.example.org", buf);
  gp__agent_url_host("http://:7001", "n1", buf, sizeof buf);
  CHECK_EQ_STR("n1", buf);
  gp__agent_url_host("not a url", "n1", buf, sizeof buf);
  CHECK_EQ_STR("n1", buf);
  gp__agent_url_host(NULL, "n1", buf, sizeof buf);
  CHECK_EQ_STR("n1", buf);
  char small[4];
  gp__agent_url_host("http://10.0.0.5:7001", "n1", small, sizeof small); /* too long: the name */
  CHECK_EQ_STR("n1", small);
}

GP_TESTS(two_nodes_two_tasks_each, interleaved_tasks, without_a_host_list_every_task_is_here,
         host_files_list_each_node_once, url_hosts)
