# SPDX-License-Identifier: Apache-2.0
# A stand-in for the clouds' instance metadata services, on 127.0.0.1, for the spot tests
# (tests/e2e/spot_test.sh, bench/spot_notice.sh). What each cloud's path answers is read
# from a file the test writes in DIR, at every request:
#   DIR/aws    AWS   /latest/meta-data/spot/instance-action (and PUT /latest/api/token)
#   DIR/gcp    GCP   /computeMetadata/v1/instance/preempted
#   DIR/azure  Azure /metadata/scheduledevents
# holding one of: none (the default), notice [DEADLINE_EPOCH_S], 500, hang, garbage, huge.
# The port it listens on is written to DIR/port; every request is logged to DIR/requests
# with its method, path and metadata headers.
#   python3 spot_metadata.py DIR
import json
import os
import sys
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]


def mode(cloud):
    try:
        with open(os.path.join(DIR, cloud)) as f:
            words = f.read().split()
    except OSError:
        words = []
    if not words:
        return 'none', 0
    deadline = int(words[1]) if len(words) > 1 else int(time.time()) + 120
    return words[0], deadline


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def answer(self, status, body, ctype='text/plain'):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def note(self):
        heads = ','.join(f'{k}={v}' for k, v in self.headers.items()
                         if k.lower().startswith(('x-aws', 'metadata')))
        with open(os.path.join(DIR, 'requests'), 'a') as f:
            f.write(f'{self.command} {self.path} {heads}\n')

    def trouble(self, m):
        """Answers a failure mode; False when m is none or notice."""
        if m == '500':
            self.answer(500, 'internal error')
        elif m == 'hang':
            time.sleep(20)  # longer than the agent waits
            self.answer(200, 'late')
        elif m == 'garbage':
            self.answer(200, '\x00\x01{{{ not what you expect')
        elif m == 'huge':
            self.answer(200, 'TRUE' + ' ' * (1 << 20))
        else:
            return False
        return True

    def do_PUT(self):
        self.note()
        if self.path == '/latest/api/token' and self.headers.get('X-aws-ec2-metadata-token-ttl-seconds'):
            m, _ = mode('aws')
            if m == 'hang':
                time.sleep(20)
            self.answer(200, 'tok-123')
        else:
            self.answer(404, 'not found')

    def do_GET(self):
        self.note()
        if self.path == '/latest/meta-data/spot/instance-action':
            m, deadline = mode('aws')
            if self.headers.get('X-aws-ec2-metadata-token') != 'tok-123':
                return self.answer(401, 'token required')
            if self.trouble(m):
                return
            if m == 'notice':
                when = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(deadline))
                return self.answer(200, json.dumps({'action': 'terminate', 'time': when}), 'application/json')
            return self.answer(404, 'not found')
        if self.path == '/computeMetadata/v1/instance/preempted':
            if self.headers.get('Metadata-Flavor') != 'Google':
                return self.answer(403, 'missing Metadata-Flavor')
            m, _ = mode('gcp')
            if self.trouble(m):
                return
            return self.answer(200, 'TRUE' if m == 'notice' else 'FALSE')
        if self.path.startswith('/metadata/scheduledevents'):
            if self.headers.get('Metadata') != 'true':
                return self.answer(400, 'missing Metadata header')
            m, deadline = mode('azure')
            if self.trouble(m):
                return
            events = []
            if m == 'notice':
                events = [{'EventId': 'e1', 'EventType': 'Preempt', 'ResourceType': 'VirtualMachine',
                           'Resources': ['vm1'], 'EventStatus': 'Scheduled',
                           'NotBefore': formatdate(deadline, usegmt=True)}]
            body = json.dumps({'DocumentIncarnation': 1, 'Events': events})
            return self.answer(200, body, 'application/json')
        self.answer(404, 'not found')


server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
server.daemon_threads = True
with open(os.path.join(DIR, 'port.tmp'), 'w') as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(DIR, 'port.tmp'), os.path.join(DIR, 'port'))
server.serve_forever()
