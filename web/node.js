// SPDX-License-Identifier: Apache-2.0
// One node: its state and reason, each GPU (health, reason, mode, MIG instances, use) and
// the jobs on it, read job by job from the ids its GPUs list.
import {api, ApiError} from './api.js';
import {h, clear, fmtTime, fmtNum, facts, note, table, stateBadge, labelList} from './dom.js';
import {classify, describe, nodeState, resvText} from './fleet.js';

export async function render(main, params) {
  const name = params.name;
  const box = h('div', {});
  main.append(box);
  async function load() {
    let n;
    try {
      n = (await api(`/v1/nodes/${encodeURIComponent(name)}`)).node;
    } catch (e) {
      clear(box).append(h('h1', {}, `Node ${name}`), note(e instanceof ApiError ? e.describe() : String(e), 'error'));
      return;
    }
    const gpus = (n.gpu_list || []).map((g) => [classify(n, g), g]);
    const ids = [...new Set((n.gpu_list || []).flatMap((g) => g.jobs || []))].slice(0, 200);
    const jobs = (await Promise.all(ids.map((id) => api(`/v1/jobs/${encodeURIComponent(id)}`).then((r) => r.job, () => null)))).filter(Boolean);
    clear(box).append(
      h('h1', {}, `Node ${n.name}`),
      facts([['State', stateBadge(nodeState(n))], ['Reason', n.reason || '—'], ['Reservation', resvText(n) || 'none'],
        ['Model', n.model || '—'],
        ['GPUs', String(n.gpus)], ['CPUs', fmtNum(n.cpus)], ['Memory', `${fmtNum(n.mem_mib)} MiB`],
        ['Capacity', n.capacity || '—'], ['Labels', labelList(n.labels, {id: 'node-labels'})],
        ['Conditions', (n.conditions || []).join(', ') || 'none'],
        ['Last heartbeat', fmtTime(n.last_heartbeat)]]),
      h('h2', {}, 'GPUs'),
      table(null, ['GPU', 'UUID', 'State', 'Health', 'Reason', 'Mode', 'MIG', 'Use', 'Memory used', 'Jobs'],
        gpus.map(([c, g]) => [String(g.index), h('code', {}, g.uuid || '—'), h('span', {title: describe(c)}, c.kind), g.health, g.reason || '',
          g.mode, (g.mig || []).map((m) => m.profile).join(', '), c.util === null ? '—' : `${c.util}%`,
          c.used_mib === undefined ? '—' : `${fmtNum(c.used_mib)} / ${fmtNum(g.mem_mib)} MiB`,
          (g.jobs || []).map((id, i) => [i ? ', ' : '', h('a', {href: `#/jobs/${encodeURIComponent(id)}`}, id)])]),
        {id: 'node-gpus'}),
      h('h2', {}, 'Jobs on this node'),
      jobs.length ? table(null, ['ID', 'Name', 'User', 'Queue', 'State', 'Started'],
        jobs.map((j) => [h('a', {href: `#/jobs/${encodeURIComponent(j.id)}`}, j.id), j.name || '', j.user, j.queue,
          stateBadge(j.state), fmtTime(j.started_at)]), {id: 'node-jobs'})
        : h('p', {class: 'muted'}, 'No job runs here.'));
  }
  await load();
  return {refresh: () => load()};
}
