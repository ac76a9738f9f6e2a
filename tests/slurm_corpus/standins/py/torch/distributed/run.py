# SPDX-License-Identifier: Apache-2.0
# Stand-in for `python -m torch.distributed.run` (torchrun under its module name).
import sys

import corpus_launch

if __name__ == "__main__":
    sys.exit(corpus_launch.torchrun(sys.argv[1:], prog="torch.distributed.run"))
