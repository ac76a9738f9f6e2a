// SPDX-License-Identifier: Apache-2.0
// What state each GPU of the fleet is in, from GET /v1/nodes: one classification that the
// heatmap colours and its text alternative counts, so the two never disagree.

// Under this SM use (%) an allocated GPU counts as idle: the same 5% the idle policy
// assumes without a queue rule (docs/api.md, `idle.threshold_pct`).
export const IDLE_PCT = 5;

export const KINDS = [
  ['busy', 'Busy (allocated, in use)'],
  ['unmeasured', 'Allocated, use not reported'],
  ['idle', 'Allocated but idle'],
  ['free', 'Free'],
  ['drained', 'Drained'],
  ['failed', 'Faulty'],
  ['down', 'Node down'],
];

// One GPU: {node, index, uuid, kind, util (0..100 or null), reason, jobs, mig, mode}.
export function classify(node, g) {
  const t = g.telemetry || {};
  const util = typeof t.gpu_util_pct === 'number' ? t.gpu_util_pct : null;
  const jobs = g.jobs || [];
  let kind, reason = g.reason || null;
  if (node.state === 'down') { kind = 'down'; reason = reason || node.reason || 'no heartbeat'; }
  else if (g.health === 'failed') kind = 'failed';
  else if (g.health === 'drained') kind = 'drained';
  else if (node.state === 'drain' || node.state === 'cordon') { kind = 'drained'; reason = reason || node.reason || node.state; }
  else if (!jobs.length) kind = 'free';
  else kind = util === null ? 'unmeasured' : util < IDLE_PCT ? 'idle' : 'busy';
  return {node: node.name, index: g.index, uuid: g.uuid, kind, util, reason, jobs, mig: g.mig || [],
    mode: g.mode, replicas: g.replicas || 0, mem_mib: g.mem_mib, used_mib: t.fb_used_mib};
}

export function flatten(nodes) {
  const out = [];
  for (const n of nodes) for (const g of n.gpu_list || []) out.push(classify(n, g));
  return out;
}

export function counts(gpus) {
  const c = Object.fromEntries(KINDS.map(([k]) => [k, 0]));
  for (const g of gpus) c[g.kind]++;
  return c;
}

export function describe(g) {
  const parts = [`${g.node} GPU ${g.index}`, KINDS.find(([k]) => k === g.kind)[1].toLowerCase()];
  if (g.util !== null) parts.push(`${g.util}% busy`);
  if (g.jobs.length) parts.push(`job${g.jobs.length > 1 ? 's' : ''} ${g.jobs.join(', ')}`);
  if (g.mig.length) parts.push(`${g.mig.length} MIG instance${g.mig.length > 1 ? 's' : ''}`);
  if (g.reason) parts.push(`reason: ${g.reason}`);
  return parts.join(', ');
}

// An advance reservation in force shows as the state (maint, resv, as `gpool nodes`); one
// to come follows the reason.
export function nodeState(n) {
  const r = n.reservation;
  return r && r.active && n.state === 'up' ? (r.maint ? 'maint' : 'resv') : n.state;
}

export function resvText(n) {
  const r = n.reservation;
  if (!r) return '';
  const at = (t) => new Date(t * 1000).toLocaleString();
  return `${r.maint ? 'maintenance' : 'reserved'} ${r.name} ${at(r.start)} – ${at(r.end)}`;
}
