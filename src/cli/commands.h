/* SPDX-License-Identifier: Apache-2.0 */
/* Entry points of gpool's subcommands. Each takes the arguments after its own name
 * (argv[0] is the subcommand name) and returns the process exit status. */
#ifndef GP_CLI_COMMANDS_H
#define GP_CLI_COMMANDS_H

#define GP_COMMANDS(X)                                                                  \
  X(plan, "plan", "run one scheduling step on a cluster snapshot and print the plan")    \
  X(up, "up", "start a whole pool on this machine (server + local agent)")               \
  X(server, "server", "run the control-plane server")                                    \
  X(agent, "agent", "run the node agent")                                                \
  X(submit, "submit", "submit a job")                                                    \
  X(jobs, "jobs", "list jobs")                                                           \
  X(show, "show", "show one job")                                                        \
  X(why, "why", "explain why a job is pending")                                          \
  X(logs, "logs", "print a job's output")                                                \
  X(cancel, "cancel", "cancel jobs")                                                     \
  X(run, "run", "submit a job and run a command in it on this terminal (--pty: a shell)") \
  X(alloc, "alloc", "hold an allocation and open a shell on it (Slurm's salloc)")      \
  X(port_forward, "port-forward", "forward a local TCP port to a port inside a running job") \
  X(attach, "attach", "stream a running job's output as it is written")                 \
  X(exec, "exec", "run a command inside a running job (-it: a shell on its terminal)")   \
  X(hold, "hold", "hold pending jobs")                                                   \
  X(release, "release", "release held jobs")                                             \
  X(nodes_forget, "nodes forget", "free a node's name for the next agent to register it") \
  X(nodes_delete, "nodes delete", "delete a drained, empty node (or --force)")             \
  X(nodes, "nodes", "list nodes and their GPUs")                                         \
  X(images_pull, "images pull", "pre-pull a container image on nodes (admins)")            \
  X(images, "images", "the container images each node holds")                            \
  X(registry, "registry", "your container registry credentials: login, logout, list")    \
  X(drain, "drain", "drain a node (or one GPU) with a reason")                           \
  X(cordon, "cordon", "cordon a node with a reason")                                     \
  X(resume, "resume", "return a drained or cordoned node (or GPU) to service")           \
  X(queues, "queues", "show the queue tree with quotas and usage")                       \
  X(shares, "shares", "fair share over time: decayed usage and factor per queue and user") \
  X(reserve, "reserve", "advance reservations and maintenance windows (admins)")       \
  X(prices, "prices", "show the price catalogue; set FILE or reset it (admins)")         \
  X(notify, "notify", "your job notifications: mail address, webhook, events")           \
  X(top, "top", "live view of the fleet")                                                \
  X(sim_frag, "sim frag", "replay a GPU-sharing trace and measure fragmentation")        \
  X(sim_replay, "sim replay", "replay a cluster trace through the scheduler")            \
  X(sim_compare, "sim compare", "replay one trace under several policies, side by side") \
  X(report, "report", "GPU-hours, use and cost by queue, user, model, node or job")       \
  X(advise, "advise", "where GPU-hours and money go unused, and what to change")          \
  X(provider_test, "provider test", "run one provider call of a node template and check it") \
  X(templates, "templates", "node templates: nodes, creations, deletions and backoff") \
  X(service, "service", "inference services: apply, list, show, scale, restart, rollback, delete, endpoints") \
  X(slurm_shims, "slurm-shims", "link Slurm's sbatch, squeue, scancel, sinfo, sacct, scontrol in DIR")

/* Slurm's scontrol inside a job (scontrol.c): the gpool binary run by the name `scontrol`
 * (argv[0] is "scontrol"). */
int gp_cmd_scontrol(int argc, char **argv);

#define GP_DECLARE_COMMAND(fn, name, help) int gp_cmd_##fn(int argc, char **argv);
GP_COMMANDS(GP_DECLARE_COMMAND)
#undef GP_DECLARE_COMMAND

#endif
