# SPDX-License-Identifier: Apache-2.0
# `pip install ./python` works offline: into a fresh virtual environment, with pip's build
# isolation and no package index at all (the package and its build backend are standard
# library only), and the installed copy talks to the pool.
import os
import subprocess
import sys
import zipfile

from conftest import SRC


def test_pip_install_offline(pool, tmp_path):
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True, capture_output=True, timeout=120)
    py = str(venv / 'bin' / 'python')
    env = dict(os.environ, PIP_NO_INDEX='1', PIP_DISABLE_PIP_VERSION_CHECK='1', PIP_NO_CACHE_DIR='1')
    r = subprocess.run([py, '-m', 'pip', 'install', '--no-index', os.path.join(SRC, 'python')], env=env,
                       capture_output=True, text=True, timeout=180, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    code = ('import gpool, sys; c = gpool.Client(sys.argv[1], sys.argv[2]); '
            'print(gpool.__file__); print(c.whoami()["user"], gpool.__version__)')
    r = subprocess.run([py, '-c', code, pool.url, pool.tokens['bob']], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=''))
    assert r.returncode == 0, r.stderr
    where, who = r.stdout.splitlines()
    assert where.startswith(str(venv)) and who == 'bob 0.1.0'
    # The wheel the backend makes is a proper one: every file in RECORD with its hash.
    out = tmp_path / 'wheel'
    r = subprocess.run([py, '-m', 'pip', 'wheel', '--no-index', '-w', str(out), os.path.join(SRC, 'python')],
                       env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = list(out.iterdir())
    assert whl.name == 'gpool-0.1.0-py3-none-any.whl'
    names = zipfile.ZipFile(whl).namelist()
    assert 'gpool/client.py' in names and 'gpool-0.1.0.dist-info/RECORD' in names
    assert not any('_build' in n or 'test' in n for n in names)
