#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The web console in a real browser (headless Chromium driven by Selenium through Debian's
# chromedriver) against a real pool from `gpool up`: jobs running, one pending (too big
# for the free GPUs) and one ended. It logs in with a token, reads the pending job's reason
# in the jobs list, sees a running job's GPU graphs drawn, cancels a job and sees it end,
# sees a GPU drained by an injected Xid in the heatmap's text alternative, and checks that
# another user's token neither shows that user the job's command nor lets them cancel it.
# Also: the pending reason's raw clock value shown as a date; the login asks only for the
# token and "Mine" works from the user the server names (GET /v1/whoami); a user's "All"
# list, whose stream carries only their own jobs, says so and still shows another user's new
# job; node labels on the node's page and in the nodes table; "Open port…" on a running
# job makes a link that shows the job's page, sandboxed away from the console's origin.
# Screenshots of each view go to $GP_BINARY_DIR/web-artifacts/.
#   GPOOL_BIN=build/gpool GP_BINARY_DIR=build /usr/bin/python3 tests/web/console_test.py
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

GPOOL = os.environ.get('GPOOL_BIN') or sys.exit('GPOOL_BIN must point at the gpool binary')
ART = os.path.join(os.environ.get('GP_BINARY_DIR', '.'), 'web-artifacts')
CHROMEDRIVER = '/usr/bin/chromedriver'
DEADLINE = time.monotonic() + 140  # the whole test, however it goes

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
except ImportError:
    sys.exit('FAIL: python3-selenium is not installed (run scripts/setup.sh)')
for tool in (CHROMEDRIVER, shutil.which('chromium')):
    if not tool or not os.path.exists(tool):
        sys.exit('FAIL: chromium and chromium-driver are not installed (run scripts/setup.sh)')

DIR = tempfile.mkdtemp(prefix='gpool-web.')
ADMIN = secrets.token_hex(16)
BOB = secrets.token_hex(16)
AGENT = secrets.token_hex(16)
URL = None


def fail(msg):
    for name in ('server.log', 'agent.log', 'up.log'):
        p = os.path.join(DIR, 'pool', name)
        if os.path.exists(p):
            with open(p, errors='replace') as f:
                sys.stderr.write(f'--- {name} (last 20 lines)\n' + ''.join(f.readlines()[-20:]))
    raise SystemExit(f'FAIL: {msg}')


def api(method, path, token=ADMIN, body=None):
    req = urllib.request.Request(URL + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={'Authorization': f'Bearer {token}', 'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def wait(what, fn, limit=20):
    end = min(time.monotonic() + limit, DEADLINE)
    while True:
        try:
            v = fn()
        except StaleElementReferenceException:  # live updates redraw the page under us
            v = None
        if v:
            return v
        if time.monotonic() > end:
            fail(f'timed out waiting for: {what}')
        time.sleep(0.1)


def job(i):
    return api('GET', f'/v1/jobs/{i}')[1]['job']


def submit(token, name, gpus, command, queue='default', **more):
    st, doc = api('POST', '/v1/jobs', token, {'name': name, 'gpus': gpus, 'command': command, 'workdir': DIR, 'queue': queue, **more})
    if st != 201:
        fail(f'submit {name}: {st} {doc}')
    return doc['job']['id']


EXTRA = []  # processes this test started beside the pool


def cleanup():
    for p in EXTRA:
        p.kill()
        p.wait()
    subprocess.run([GPOOL, 'up', '--stop', '--data', os.path.join(DIR, 'pool')],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    # The jobs run in their own sessions, with their cwd in DIR: end what is left of them.
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) != os.getpid():
            try:
                if os.readlink(f'/proc/{p}/cwd').startswith(DIR):
                    os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
    shutil.rmtree(DIR, ignore_errors=True)


def start_pool():
    global URL
    pool = os.path.join(DIR, 'pool')
    os.makedirs(pool)
    # A second user's token beside the admin's: `gpool up` keeps a tokens.yaml it finds.
    with open(os.path.join(pool, 'tokens.yaml'), 'w') as f:
        f.write('tokens:\n'
                f'  - {{token: "{ADMIN}", user: alice, role: admin}}\n'
                f'  - {{token: "{BOB}", user: bob, role: user}}\n'
                f'  - {{token: "{AGENT}", user: agent, role: agent}}\n')
    os.chmod(os.path.join(pool, 'tokens.yaml'), 0o600)
    env = dict(os.environ, GPOOL_CONFIG_DIR=os.path.join(DIR, 'client'))
    r = subprocess.run([GPOOL, 'up', '--detach', '--data', pool, '--port', '0', '--sim', '4xH100-80GB', '--name', 'n1'],
                       env=env, capture_output=True, text=True, timeout=60)
    if r.returncode:
        fail(f'gpool up: {r.stdout}{r.stderr}')
    with open(os.path.join(pool, 'server', 'server.url')) as f:
        URL = f.readline().strip()
    wait('node n1 up', lambda: api('GET', '/v1/nodes/n1')[0] == 200 and api('GET', '/v1/nodes/n1')[1]['node']['state'] == 'up')


def browser():
    opts = webdriver.ChromeOptions()
    for a in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--window-size=1280,900',
              '--no-first-run', '--disable-extensions', f'--user-data-dir={DIR}/chrome'):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(20)
    d.set_script_timeout(20)
    return d


def shot(d, name):
    os.makedirs(ART, exist_ok=True)
    d.save_screenshot(os.path.join(ART, f'{name}.png'))


def find(d, css, what, limit=15):
    return wait(what, lambda: (d.find_elements(By.CSS_SELECTOR, css) or [None])[0], limit)


def read(d, css, what, fn=lambda e: e.text, limit=15):
    """fn of the element at css, found afresh until it reads without going stale and fn
    gives something other than None (so `lambda e: e.text or None` waits for a text)."""
    def once():
        els = d.find_elements(By.CSS_SELECTOR, css)
        value = fn(els[0]) if els else None
        return None if value is None else (value,)
    return wait(what, once, limit)[0]


def click(d, css, what):
    wait(what, lambda: d.find_elements(By.CSS_SELECTOR, css) and (d.find_element(By.CSS_SELECTOR, css).click() or True))


def login(d, token):
    d.get(URL + '/#/login')
    find(d, '#token', 'the login form').send_keys(token)
    if d.find_elements(By.ID, 'user'):
        fail('the login asks for a user name the server knows from the token')
    return d


def labelled_agent():
    """A second node, n2, whose agent carries labels."""
    data = os.path.join(DIR, 'agent-n2')
    os.makedirs(data)
    log = open(os.path.join(DIR, 'agent-n2.log'), 'w')
    EXTRA.append(subprocess.Popen([GPOOL, 'agent', '--server', URL, '--token', AGENT, '--name', 'n2',
                                   '--sim', '1xH100-80GB', '--data', data, '--personal', '--heartbeat-s', '1',
                                   '--labels', 'rack=r7,topology.block=b1'],
                                  stdout=log, stderr=subprocess.STDOUT))
    wait('node n2 up', lambda: api('GET', '/v1/nodes/n2')[0] == 200 and api('GET', '/v1/nodes/n2')[1]['node']['state'] == 'up')


def main():
    start_pool()
    # A small tree for the queues view: org/vision and org/nlp under the implied parent org.
    for q, deserved in (('org/vision', 2), ('org/nlp', 1)):
        st, doc = api('PUT', f'/v1/queues/{q}', ADMIN, {'deserved': deserved, 'users': ['*']})
        if st not in (200, 201):
            fail(f'PUT queue {q}: {st} {doc}')
    hold = ['sh', '-c', 'sleep 90']
    # Time limits let the scheduler reserve GPUs for the pending job at a known time.
    running_a = submit(ADMIN, 'train-a', 1, hold, time_limit=600)
    # Bob's job serves a page on a port of its own, for the console's link to it.
    www = os.path.join(DIR, 'www')
    os.makedirs(www)
    with open(os.path.join(www, 'index.html'), 'w') as f:
        f.write('<!doctype html><title>link page</title><h1 id="x">served by the job</h1>\n')
    with socket.socket() as so:
        so.bind(('127.0.0.1', 0))
        port = so.getsockname()[1]
    serve = ['sh', '-c', f'cd {www} && exec python3 -m http.server {port} --bind 127.0.0.1']
    running_b = submit(BOB, 'bob-train', 1, serve, 'org/nlp', time_limit=600)
    ended = submit(ADMIN, 'quick', 1, ['true'])
    wait('job quick to complete', lambda: job(ended)['state'] == 'completed')
    pending = submit(ADMIN, 'too-big', 4, ['true'])
    for i in (running_a, running_b):
        wait(f'job {i} to be launched', lambda i=i: any(e['event'] == 'launched' for e in job(i)['timeline']))
    # 2 of 4 GPUs are taken, so the scheduler says it waits for resources.
    wait('the scheduler to give the pending job its reason and reservation',
         lambda: job(pending)['pending_reason'] == 'Resources' and 't=' in (job(pending)['pending_message'] or ''))
    reason = job(pending)['pending_message']
    at = re.search(r'\bt=(\d+)', reason or '')
    if not at:
        fail(f'the pending job\'s sentence should name its reservation time: {reason}')
    if job(pending)['state'] != 'pending':
        fail(f'job {pending} should be pending (2 of 4 GPUs are taken), it is {job(pending)["state"]}')

    d = browser()
    try:
        login(d, ADMIN)
        shot(d, 'login')
        d.find_element(By.ID, 'login-submit').click()
        who = read(d, '#who', 'the header to name the user', lambda e: e.text or None)
        if who != 'as alice (admin)':
            fail(f'the header should say whose the token is, "as alice (admin)": {who}')

        # The jobs view: the pending job's row says why it waits, in the API's words, with
        # the reservation's time as a date (as `gpool why`), never a raw "t=1796572218".
        why = read(d, f'#jobs-body tr[data-job="{pending}"] .why', 'the pending job in the jobs list')
        year = str(time.localtime(int(at.group(1))).tm_year)
        if not why.startswith(reason[:at.start()]) or 't=' in why or year not in why[at.start():]:
            fail(f'the jobs list shows "{why}" as the pending job\'s reason; the API says "{reason}" '
                 f'and the time should read as a date of {year}')
        if d.find_elements(By.CSS_SELECTOR, f'#jobs-body tr[data-job="{running_b}"]'):
            fail("alice's own jobs (Mine) list bob's job")
        # Live: the console follows /v1/events, and a job submitted elsewhere shows up.
        read(d, '#live[data-mode="live"]', 'the console to follow the event stream')
        st, doc = api('POST', '/v1/jobs', ADMIN, {'name': 'late', 'gpus': 1, 'command': ['true'], 'workdir': DIR, 'hold': True})
        if st != 201:
            fail(f'submit a held job: {st} {doc}')
        late = doc['job']['id']
        read(d, f'#jobs-body tr[data-job="{late}"]', 'a job submitted after the page loaded', limit=10)
        shot(d, 'jobs')

        # A running job's page: its GPU's utilisation, memory and power graphs are drawn.
        d.get(f'{URL}/#/jobs/{running_a}')
        find(d, '#job-graphs svg.chart.util polyline, #job-graphs svg.chart.util circle', 'the running job\'s utilisation graph', 25)
        for kind in ('util', 'mem', 'power'):
            if not d.find_elements(By.CSS_SELECTOR, f'#job-graphs svg.chart.{kind} .series'):
                fail(f'the {kind} graph of job {running_a} has no series drawn')
        uuid = job(running_a)['placements'][0]['gpu_uuids'][0]
        if uuid not in d.find_element(By.TAG_NAME, 'main').text:
            fail(f'the job page does not show its GPU UUID {uuid}')
        shot(d, 'job')

        # Cancel it from its page: it ends cancelled, and the page says so.
        click(d, 'button[data-action="cancel"]', 'the cancel button')
        wait('the job page to show the job cancelled',
             lambda: d.find_element(By.ID, 'job-state').text == 'cancelled', 25)
        if job(running_a)['state'] != 'cancelled':
            fail(f'job {running_a} is {job(running_a)["state"]} after the cancel, not cancelled')

        # An Xid on a free GPU: the health policy drains it, and the heatmap's words say so.
        st, doc = api('POST', '/v1/nodes/n1/inject', ADMIN, {'fault': 'xid:48@gpu3'})
        if st != 200:
            fail(f'inject: {st} {doc}')
        wait('GPU 3 of n1 to be drained',
             lambda: api('GET', '/v1/nodes/n1')[1]['node']['gpu_list'][3]['health'] != 'healthy', 20)
        d.get(f'{URL}/#/gpus')
        kind, text = read(d, '#heat-attention-list li[data-node="n1"][data-gpu="3"]',
                          'GPU 3 of n1 in the list of GPUs needing attention', lambda e: (e.get_attribute('data-kind'), e.text))
        if kind != 'drained' or 'reason: xid 48' not in text:
            fail(f'GPU 3 should be listed drained with its reason, the page says: {kind}: {text}')
        summary = d.find_element(By.ID, 'heat-summary').text
        if not summary.startswith('4 GPUs on 1 nodes') or '1 drained' not in summary:
            fail(f'the heatmap summary should count 4 GPUs, 1 drained: {summary}')
        painted = d.execute_script(
            "const c = document.getElementById('heatmap'); const x = c.getContext('2d');"
            "const p = x.getImageData(0, 0, c.width, c.height).data; let n = 0;"
            "for (let i = 3; i < p.length; i += 4) if (p[i]) n++; return n;")
        if painted < 100:
            fail(f'the heatmap canvas is empty ({painted} painted pixels)')
        shot(d, 'gpus')

        d.get(f'{URL}/#/nodes/n1')
        find(d, f'#node-jobs a[href="#/jobs/{running_b}"]', "bob's job on the node's page")
        shot(d, 'node')
        # A node's labels: on its page and in the nodes table under the heatmap.
        labelled_agent()
        d.get(f'{URL}/#/nodes/n2')
        rack = read(d, '#node-labels li[data-label="rack"]', "n2's labels on its page")
        if rack != 'rack=r7' or 'topology.block=b1' not in d.find_element(By.ID, 'node-labels').text:
            fail(f"n2's page should list its labels rack=r7 and topology.block=b1: {rack}")
        d.get(f'{URL}/#/gpus')
        rows = read(d, '#nodes-table tbody', 'n2 in the nodes table',
                    lambda e: e.get_attribute('textContent') if 'n2' in e.get_attribute('textContent') else None)
        if 'rack=r7' not in rows:
            fail(f'the nodes table should show n2\'s labels: {rows}')
        d.get(f'{URL}/#/queues')
        find(d, '#queues-table tr[data-queue="org/nlp"][aria-level="2"]', 'org/nlp under org in the queue tree')
        shot(d, 'queues')
        # The services view: a service of one replica with its readiness.
        replica = ['python3', '-c', 'import http.server, os; http.server.HTTPServer(("", int(os.environ["PORT"])), '
                   'http.server.SimpleHTTPRequestHandler).serve_forever()']
        st, doc = api('PUT', '/v1/services/web', BOB, {'command': replica, 'gpus': 0,
                                                         'probes': {'readiness': {'path': '/', 'period_s': 1}}})
        if st != 201:
            fail(f'PUT /v1/services/web: {st} {doc}')
        wait('the service web ready', lambda: api('GET', '/v1/services/web', BOB)[1]['service']['replicas']['ready'] == 1, 40)
        d.get(f'{URL}/#/services')
        def shows(css, *words):
            try:
                els = d.find_elements(By.CSS_SELECTOR, css)
                return bool(els) and all(w in els[0].text for w in words)
            except Exception:  # redrawn under us: look again
                return False
        wait('the service web, 1 of 1 ready, in the services view',
             lambda: shows('section[data-service="web"] .service-summary', '1 of 1 ready'))
        wait('its replica on n1, ready', lambda: shows('section[data-service="web"] .service-replicas tbody tr', 'n1', 'ready'))
        shot(d, 'services')
        api('DELETE', '/v1/services/web', BOB)
        d.get(f'{URL}/#/reports?kind=usage&by=user')
        find(d, '#report-table tbody tr', 'a row of the usage report')
        shot(d, 'reports')

        # Pages left behind hold no stream: a browser has 6 connections to a server, and
        # streams kept open by pages in its back-forward cache would stall the 7th load.
        for i in range(8):
            d.get('about:blank')
            t = time.monotonic()
            try:
                d.get(f'{URL}/#/queues')
            except TimeoutException:
                fail(f'load {i + 1} of the console did not finish within 20 s')
            find(d, '#queues-table', f'the queues view, load {i + 1} of 8', 8)
            read(d, '#live[data-mode="live"]', f'the stream of load {i + 1} of 8', limit=8)
            if time.monotonic() - t > 8:
                fail(f'load {i + 1} of the console took {time.monotonic() - t:.1f} s')

        # Bob: alice's pending job shows no command and no buttons, and the API refuses his cancel.
        click(d, '#logout', 'the log out button')
        login(d, BOB)
        d.find_element(By.ID, 'login-submit').click()
        find(d, '#jobs-table', 'bob\'s jobs list')
        # Mine works from the user the server names for the token: bob's job, not alice's.
        read(d, f'#jobs-body tr[data-job="{running_b}"]', "bob's own job under Mine")
        mine = d.find_element(By.CSS_SELECTOR, '.segs button:first-child')
        if mine.get_attribute('aria-pressed') != 'true' or not mine.is_enabled():
            fail('Mine should be on and usable for bob without typing his name')
        if d.find_elements(By.CSS_SELECTOR, f'#jobs-body tr[data-job="{pending}"]'):
            fail("bob's Mine list shows alice's job")
        d.get(f'{URL}/#/jobs/{pending}')
        cmd = find(d, '#job-command', 'the job page as bob').text
        if cmd != '(hidden)':
            fail(f"bob sees alice's command: {cmd}")
        if d.find_elements(By.CSS_SELECTOR, 'button[data-action]'):
            fail("bob is offered buttons on alice's job")
        if d.find_elements(By.ID, 'job-log'):
            fail("bob is offered alice's log")
        status = d.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const t = JSON.parse(sessionStorage.getItem('gpool.session')).token;"
            f"fetch('/v1/jobs/{pending}/cancel', {{method: 'POST', headers: {{Authorization: 'Bearer ' + t}}}})"
            ".then((r) => done(r.status), (e) => done(String(e)));")
        if status != 403:
            fail(f"bob's cancel of alice's job should be refused with 403, got {status}")
        if job(pending)['state'] != 'pending':
            fail(f"alice's job {pending} changed state after bob's refused cancel")
        d.get(f'{URL}/#/jobs?scope=all&state=active')
        if read(d, f'#jobs-body tr[data-job="{pending}"]', "alice's job in bob's list of all jobs",
                lambda e: len(e.find_elements(By.CSS_SELECTOR, 'button'))):
            fail("bob's jobs list offers buttons on alice's job")
        # Every stream carries every job's summary: bob's All list says Live and alice's new
        # job shows up in it within the stream's coalescing, well before any 5 s poll.
        text = read(d, '#live[data-mode="live"]', "bob's All list to follow the event stream")
        if text != 'Live':
            fail(f'the header should say Live: {text}')
        st, doc = api('POST', '/v1/jobs', ADMIN, {'name': 'late-2', 'gpus': 1, 'command': ['true'], 'workdir': DIR, 'hold': True})
        if st != 201:
            fail(f'submit a held job: {st} {doc}')
        read(d, f'#jobs-body tr[data-job="{doc["job"]["id"]}"]', "alice's new job in bob's All list", limit=4)
        shot(d, 'jobs-as-user')
        errors = [e for e in d.get_log('browser') if e['level'] == 'SEVERE' and '/v1/' not in e['message']]
        if errors:
            fail(f'the console logged errors: {errors}')

        # "Open port…" on bob's running job: the link serves the job's page in the browser,
        # sandboxed (an opaque origin: the page cannot read the console's stored token).
        d.get(f'{URL}/#/jobs/{running_b}')
        wait("bob's job's web server", lambda: urllib.request.urlopen(f'http://127.0.0.1:{port}/', timeout=2).status == 200)
        find(d, '#open-port', 'the Open port control').send_keys(str(port))
        click(d, '#open-port-go', 'the Open port button')
        href = read(d, '#port-link', 'the port link', lambda e: e.get_attribute('href'))
        if not re.fullmatch(re.escape(URL) + r'/proxy/[0-9a-f]{64}/' + str(port) + '/', href):
            fail(f'the port link: {href}')
        shot(d, 'job-port-link')
        d.get(href)
        if read(d, 'h1#x', 'the job\'s page through the link') != 'served by the job':
            fail('the link does not show the job\'s page')
        direct = urllib.request.urlopen(f'http://127.0.0.1:{port}/', timeout=5).read().decode()
        if d.execute_script('return document.documentElement.outerHTML').count('served by the job') != direct.count('served by the job'):
            fail('the page through the link differs from the port\'s own')
        origin = d.execute_script('return window.origin')
        storage = d.execute_script("try { sessionStorage.length; return 'readable'; } catch (e) { return e.name; }")
        if origin != 'null' or storage == 'readable':
            fail(f'the linked page runs in the console\'s origin ({origin}, storage {storage})')
        shot(d, 'port-link-page')
    finally:
        d.quit()
    print('ok: web console')


if __name__ == '__main__':
    try:
        main()
    finally:
        cleanup()
