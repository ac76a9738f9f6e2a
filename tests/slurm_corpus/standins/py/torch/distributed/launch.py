# SPDX-License-Identifier: Apache-2.0
# Stand-in for the legacy `python -m torch.distributed.launch`: passes --local_rank=N to the
# script unless --use_env (then LOCAL_RANK only).
import sys

import corpus_launch

if __name__ == "__main__":
    sys.exit(corpus_launch.torchrun(sys.argv[1:], prog="torch.distributed.launch", legacy=True))
