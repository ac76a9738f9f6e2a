// SPDX-License-Identifier: Apache-2.0
// Inference services (docs/services.md): for each service its revision and rollout, its
// replicas ready against desired, and each replica's job, node, state, readiness and last
// probe, from GET /v1/services and /v1/services/{name}.
import {api} from './api.js';
import {h, clear} from './dom.js';

function replicaRows(s) {
  return (s.replica_jobs || []).map((r) => h('tr', {'data-job': r.job},
    h('td', {}, h('a', {href: `#/jobs/${encodeURIComponent(r.job)}`}, r.job)),
    h('td', {}, r.state), h('td', {class: 'num'}, String(r.revision)), h('td', {}, r.node || '—'),
    h('td', {class: 'num'}, r.port ? String(r.port) : '—'),
    h('td', {}, r.draining ? 'draining' : r.ready ? 'ready' : 'not ready'),
    h('td', {}, r.last_probe || '—')));
}

export async function render(main) {
  const box = h('div', {});
  main.append(h('h1', {}, 'Services'), box);
  async function load() {
    const list = (await api('/v1/services')).services || [];
    const full = await Promise.all(list.map((s) => api(`/v1/services/${encodeURIComponent(s.name)}`).then((d) => d.service)));
    if (!full.length) {
      clear(box).append(h('p', {class: 'muted'}, 'No service. Create one with gpool service apply -f svc.yaml.'));
      return;
    }
    clear(box).append(...full.map((s) => h('section', {'data-service': s.name},
      h('h2', {}, s.name),
      h('p', {class: 'service-summary'},
        `${s.replicas.ready} of ${s.replicas.desired} ready · revision ${s.revision} (serving ${s.serving_revision}) · `,
        `rollout ${s.deleting ? 'deleting' : s.rollout.state}: ${s.rollout.message} · owner ${s.owner}, queue ${s.spec.queue}`),
      h('table', {class: 'service-replicas'},
        h('caption', {class: 'sr-only'}, `Replicas of ${s.name}`),
        h('thead', {}, h('tr', {}, ['Job', 'State', 'Revision', 'Node', 'Port', 'Readiness', 'Last probe']
          .map((x) => h('th', {scope: 'col'}, x)))),
        h('tbody', {}, replicaRows(s))))));
  }
  await load();
  return {refresh: () => load().catch(() => {})};
}
