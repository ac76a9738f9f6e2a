#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The web console's paint times at fleet scale, in headless Chromium on this machine: a real
# `gpool server` with 1,250 nodes of 8 GPUs (10,000 GPUs) registered through the agent API
# and 10,000 jobs submitted through /v1/jobs, then
#   - jobs view: from navigation start to the first page of the list painted (the page's
#     own `jobs-painted` mark, set in the frame after the rows are in the DOM);
#   - GPUs view: the heatmap's canvas draw of the 10,000 GPUs (`heatmap-draw` measure),
#     and from navigation start to the whole view painted (`gpus-painted`).
# Each is the median of RUNS fresh page loads (the draw also of 4 redraws per load, as a
# window resize makes). Prints one line per figure.
#   GPOOL_BIN=build/rel/gpool /usr/bin/python3 bench/web_paint.py [--nodes 1250] [--jobs 10000]
import argparse
import concurrent.futures
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ap = argparse.ArgumentParser()
ap.add_argument('--nodes', type=int, default=1250)
ap.add_argument('--jobs', type=int, default=10000)
ap.add_argument('--runs', type=int, default=5)
args = ap.parse_args()
GPOOL = os.environ['GPOOL_BIN']
ADMIN, AGENT = secrets.token_hex(16), secrets.token_hex(16)
DIR = tempfile.mkdtemp(prefix='gpool-webbench.')
URL = None


def call(method, path, token, body=None):
    req = urllib.request.Request(URL + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={'Authorization': f'Bearer {token}', 'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def register(i):
    name = f'n{i:05d}'
    gpus = [{'index': g, 'uuid': f'GPU-{i:05d}-{g}', 'mem_mib': 81920, 'mode': 'exclusive'} for g in range(8)]
    body = {'node': {'name': name, 'model': 'H100-80GB', 'gpus': 8, 'cpus': 64, 'mem_mib': 512000, 'gpu_list': gpus},
            'agent_url': 'http://127.0.0.1:1', 'jobs': [], 'credential': secrets.token_hex(32)}
    return call('POST', '/v1/agent/register', AGENT, body)


def submit(i):
    # A mix like a busy fleet: most take one GPU, some wait for a whole node.
    gpus = 8 if i % 10 == 0 else 1
    return call('POST', '/v1/jobs', ADMIN, {'name': f'bench-{i}', 'gpus': gpus, 'command': ['true'], 'workdir': '/'})


def page_mark(d, url, mark, measure=None):
    d.get('about:blank')
    d.get(url)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        v = d.execute_script(
            'const m = performance.getEntriesByName(arguments[0])[0];'
            'const s = arguments[1] ? performance.getEntriesByName(arguments[1]).slice(-1)[0] : null;'
            'return m ? [m.startTime, s ? s.duration : null] : null;', mark, measure)
        if v:
            if os.environ.get('WEB_BENCH_SLOW') and v[0] > 5000:
                print(d.execute_script('return performance.getEntries().filter(e => e.duration > 300 || e.entryType === "mark").map(e => [e.name.slice(-50), e.entryType, Math.round(e.startTime), Math.round(e.duration)])'))
            return v
        time.sleep(0.02)
    raise SystemExit(f'the page never set {mark}')


def main():
    global URL
    os.makedirs(f'{DIR}/server')
    with open(f'{DIR}/server.yaml', 'w') as f:
        f.write(f'listen: 127.0.0.1:0\ndata_dir: {DIR}/server\n'
                f'tokens:\n  - {{token: "{ADMIN}", user: alice, role: admin}}\n  - {{token: "{AGENT}", user: agent, role: agent}}\n'
                'queues:\n  - {name: default, users: ["*"]}\ndefault_queue: default\n'
                'node_timeout_s: 86400\nmax_pending_per_user: 100000\nmax_pending_per_queue: 100000\n')
    srv = subprocess.Popen([GPOOL, 'server', '--config', f'{DIR}/server.yaml'], stdout=subprocess.DEVNULL,
                           stderr=open(f'{DIR}/server.log', 'w'))
    try:
        for _ in range(200):
            if os.path.exists(f'{DIR}/server/server.url') and os.path.getsize(f'{DIR}/server/server.url'):
                break
            time.sleep(0.1)
        URL = open(f'{DIR}/server/server.url').readline().strip()
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            bad = [s for s in ex.map(register, range(args.nodes)) if s not in (200, 201)]
            if bad:
                raise SystemExit(f'register: {len(bad)} failed ({bad[0]})')
            t1 = time.monotonic()
            bad = [s for s in ex.map(submit, range(args.jobs)) if s != 201]
            if bad:
                raise SystemExit(f'submit: {len(bad)} failed ({bad[0]})')
        t2 = time.monotonic()
        print(f'setup: {args.nodes} nodes registered in {t1 - t0:.1f} s, {args.jobs} jobs submitted in {t2 - t1:.1f} s')

        opts = webdriver.ChromeOptions()
        for a in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--window-size=1280,900',
                  f'--user-data-dir={DIR}/chrome'):
            opts.add_argument(a)
        d = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=opts)
        try:
            d.set_script_timeout(60)
            d.get(URL + '/')
            d.execute_script('sessionStorage.setItem("gpool.session", JSON.stringify({token: arguments[0], user: "alice", role: "admin"}))', ADMIN)
            jobs, draw, gpus_view = [], [], []
            for _ in range(args.runs):
                jobs.append(page_mark(d, f'{URL}/#/jobs?scope=all&state=any', 'jobs-painted')[0])
                at, dur = page_mark(d, f'{URL}/#/gpus', 'gpus-painted', 'heatmap-draw')
                gpus_view.append(at)
                # Redraws of the same page (a window resize redraws the heatmap): more samples.
                draw.extend(d.execute_script(
                    'for (let i = 0; i < 4; i++) window.dispatchEvent(new Event("resize"));'
                    'return performance.getEntriesByName("heatmap-draw").map((m) => m.duration);'))
            rows = d.execute_script('return document.querySelectorAll("#heat-summary").length ? document.getElementById("heat-summary").textContent : ""')
        finally:
            d.quit()
        print(f'fleet: {rows}')
        print(f'jobs view first paint ({args.jobs} jobs in the server, first page of 250): median {statistics.median(jobs):.0f} ms (runs: {", ".join(f"{x:.0f}" for x in jobs)})')
        print(f'heatmap draw ({args.nodes * 8} GPUs, {len(draw)} draws): median {statistics.median(draw):.1f} ms, '
              f'fastest {min(draw):.1f} ms, slowest {max(draw):.1f} ms')
        print(f'GPUs view painted from navigation ({args.nodes} nodes fetched): median {statistics.median(gpus_view):.0f} ms')
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(20)
        except subprocess.TimeoutExpired:
            srv.kill()
        shutil.rmtree(DIR, ignore_errors=True)


if __name__ == '__main__':
    main()
