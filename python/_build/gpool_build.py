# SPDX-License-Identifier: Apache-2.0
"""A PEP 517 build backend for the gpool package, standard library only.

pip builds a package in an isolated environment into which it installs the backend's
requirements from an index; setuptools or flit from an index would need the network, so
`pip install ./python` offline would fail. This backend needs nothing: it zips gpool/*.py
into a wheel (PEP 427) with its metadata and RECORD, or a .pth file for an editable
install (PEP 660), and packs an sdist. Name and version come from pyproject.toml
(tomllib where Python has it, else the two keys read line by line)."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = 'gpool'
TAG = 'py3-none-any'


def _project():
    path = os.path.join(ROOT, 'pyproject.toml')
    try:
        import tomllib
        with open(path, 'rb') as f:
            p = tomllib.load(f)['project']
        return p['name'], p['version'], p.get('description', ''), p.get('requires-python', '')
    except ImportError:
        text = open(path, encoding='utf-8').read()
        section = text.split('[project]', 1)[1]
        def key(k):
            m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(k), section, re.M)
            return m.group(1) if m else ''
        return key('name'), key('version'), key('description'), key('requires-python')


def _metadata():
    name, version, summary, requires = _project()
    readme = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
    lines = ['Metadata-Version: 2.1', f'Name: {name}', f'Version: {version}', f'Summary: {summary}',
             'License: Apache-2.0']
    if requires:
        lines.append(f'Requires-Python: {requires}')
    lines.append('Description-Content-Type: text/markdown')
    return name, version, '\n'.join(lines) + '\n\n' + readme


def _dist_info(name, version):
    return f'{name}-{version}.dist-info'


def _wheel_files(name, version, editable):
    """(archive name, bytes) of every file of the wheel but RECORD."""
    files = []
    if editable:
        files.append((f'{PACKAGE}_editable.pth', (ROOT + '\n').encode()))
    else:
        pkg = os.path.join(ROOT, PACKAGE)
        for fn in sorted(os.listdir(pkg)):
            if fn.endswith('.py') or fn == 'py.typed':
                with open(os.path.join(pkg, fn), 'rb') as f:
                    files.append((f'{PACKAGE}/{fn}', f.read()))
    info = _dist_info(name, version)
    _, _, meta = _metadata()
    files.append((f'{info}/METADATA', meta.encode()))
    files.append((f'{info}/WHEEL', ('Wheel-Version: 1.0\nGenerator: gpool_build\nRoot-Is-Purelib: true\n'
                                    f'Tag: {TAG}\n').encode()))
    files.append((f'{info}/top_level.txt', (PACKAGE + '\n').encode()))
    return files


def _write_wheel(wheel_directory, editable):
    name, version, _ = _metadata()
    filename = f'{name}-{version}-{TAG}.whl'
    files = _wheel_files(name, version, editable)
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), 'w', zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
            record.append(f'{arc},sha256={digest},{len(data)}')
        rec = f'{_dist_info(name, version)}/RECORD'
        record.append(f'{rec},,')
        z.writestr(zipfile.ZipInfo(rec, (2020, 1, 1, 0, 0, 0)), '\n'.join(record) + '\n')
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, meta = _metadata()
    info = os.path.join(metadata_directory, _dist_info(name, version))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, 'METADATA'), 'w', encoding='utf-8') as f:
        f.write(meta)
    return _dist_info(name, version)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    name, version, meta = _metadata()
    base = f'{name}-{version}'
    filename = base + '.tar.gz'
    with tarfile.open(os.path.join(sdist_directory, filename), 'w:gz', format=tarfile.PAX_FORMAT) as t:
        for rel in ['pyproject.toml', 'README.md', '_build/gpool_build.py'] + \
                   [f'{PACKAGE}/{fn}' for fn in sorted(os.listdir(os.path.join(ROOT, PACKAGE)))
                    if fn.endswith('.py') or fn == 'py.typed']:
            t.add(os.path.join(ROOT, rel), arcname=f'{base}/{rel}')
        data = meta.encode()
        info = tarfile.TarInfo(f'{base}/PKG-INFO')
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return filename
