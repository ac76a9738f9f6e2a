/* SPDX-License-Identifier: Apache-2.0 */
/* A small MPI program (compiled with mpicc by tests/e2e/mpi_test.sh and the corpus test):
 * every rank contributes rank + 1 to an MPI_Allreduce and writes one line with its rank,
 * the world size, the sum and the node it runs on (SLURMD_NODENAME, else GPOOL_NODE: the
 * variables of the srun step the orted came from, or of the batch step for mpirun's own
 * node) to stdout and, when CORPUS_RESULTS names a file, appended there. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int rank = 0, size = 0, mine, sum = 0;
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mine = rank + 1;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const char *node = getenv("SLURMD_NODENAME");
  if (!node || !*node) node = getenv("GPOOL_NODE");
  const char *job = getenv("SLURM_JOB_ID");
  char line[512];
  int n = snprintf(line, sizeof line, "job=%s rank=%d world=%d node=%s how=mpi sum=%d\n",
                   job ? job : "?", rank, size, node ? node : "?", sum);
  if (n < 0 || (size_t)n >= sizeof line) return 2;
  fputs(line, stdout);
  fflush(stdout);
  const char *path = getenv("CORPUS_RESULTS");
  if (path && *path) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n) return 3;
    close(fd);
  }
  MPI_Finalize();
  return sum == size * (size + 1) / 2 ? 0 : 4;
}
