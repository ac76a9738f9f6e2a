# SPDX-License-Identifier: Apache-2.0
# Stand-in package: only `python -m torch.distributed.run|launch` (tests/slurm_corpus/README.md).
