// The live page of a running worker: frames from /ui/events, drawn with the
// chart code of the simulator page.
import {
  TimeChart, Announcer, connect, instanceColor, fmtInt, fmtNum, fmtClock, fmtSeconds, setText, QUOTA_COLOR,
} from './chart.js';

const $ = (id) => document.getElementById(id);
const OUTCOMES = {
  succeeded: 'Succeeded', dead_lettered: 'Dead-lettered', redelivered: 'Redelivered (after failed attempts)',
  rejected: 'Handed back (limiter full)', released: 'Released at shutdown', unsettled: 'Unsettled (an output failed)',
};
const announce = new Announcer($('announce'));
const rate = new TimeChart($('rate'), {
  span: 600, grow: true, unit: 'units/min', minMax: 10, legend: $('rate-legend'), markerLabel: 'Throttles', bandLabel: 'Paused',
});
const backlog = new TimeChart($('backlog'), {
  span: 600, grow: true, unit: 'jobs', minMax: 5, legend: $('backlog-legend'),
  series: [
    { key: 'backlog', label: 'Backlog (jobs in the queue)', color: '#7a869a', fill: true },
    { key: 'inflight', label: 'Jobs in flight', color: '#1f6fb4' },
    { key: 'queue', label: 'Waiting for units', color: '#a86b00' },
  ],
});
window.sluice = { frame: null, frames: 0 };

let prev = null;
let t0 = null; // the worker's clock when this page opened
let pauses = 0;
let estimated = false; // an estimate was seen since the page opened
const jobHistory = []; // [t, {outcome: count}] for the last minute

const sum = (list) => list.reduce((a, c) => a + c.value, 0);
const get = (list, name) => (list.find((c) => c.name === name) || { value: 0 }).value;

function onFrame(f) {
  if (prev && f.t < prev.t) { rate.clear(); backlog.clear(); t0 = null; }
  if (t0 == null) t0 = f.t;
  const t = f.t - t0;
  window.sluice.frame = f;
  window.sluice.frames++;
  setText($('title'), f.title ? `(${f.title})` : '');
  setText($('error'), f.error ? `Could not read the worker: ${f.error}` : '');
  const clock = $('clock');
  setText(clock, fmtClock(t));
  clock.dataset.t = String(t);

  const throttled = sum(f.throttles);
  const newThrottles = prev ? Math.max(0, throttled - sum(prev.throttles)) : 0;
  if (prev && f.paused && !prev.paused) pauses++;

  // Rate chart: this worker's sending rate, the API's accepted rate and
  // the limiter's estimate of what the API accepts, and the other members'
  // sending rates when there are.
  const series = [{ key: 'self', label: 'This worker: sending at', color: instanceColor(0), width: 2.4 }];
  if (f.accepted != null) series.push({ key: 'accepted', label: 'This worker: API accepted (last minute)', color: instanceColor(0), dash: true });
  if (f.estimate != null) estimated = true; // kept in the legend once seen; a gap while there is none
  if (estimated) {
    series.push({ key: 'estimate', label: 'This worker: API accepts (the limiter\'s estimate)', color: QUOTA_COLOR, dash: true });
  }
  const others = (f.members || []).filter((m) => !m.self);
  others.forEach((m, k) => series.push({ key: `m:${m.id}`, label: m.id, color: instanceColor(k + 1) }));
  rate.setSeries(series);
  const values = { self: f.rate, accepted: f.accepted, estimate: f.estimate };
  for (const m of others) values[`m:${m.id}`] = m.rate;
  rate.add(t, values, newThrottles, f.paused);
  rate.draw();
  backlog.add(t, { backlog: f.backlog, inflight: f.in_flight, queue: f.queue });
  backlog.draw();

  // Figures.
  setText($('fig-rate'), f.disabled ? 'off (recording only)' : `${fmtInt(f.rate)} units/min`);
  setText($('fig-accepted'), f.accepted != null ? `${fmtInt(f.accepted)} units/min`
    : f.disabled ? 'not measured (limiter disabled)' : 'not measured (limiter.slow_start is off)');
  setText($('fig-estimate'), estimateText(f));
  setText($('fig-burst'), burstText(f));
  const members = f.members || [];
  $('fig-fleet-row').hidden = !members.length;
  if (members.length) {
    const sending = members.reduce((a, m) => a + m.rate, 0);
    const accepted = members.reduce((a, m) => a + (m.accepted || 0), 0);
    setText($('fig-fleet'), `${members.length} workers sending at ${fmtInt(sending)} units/min · API accepted ${fmtInt(accepted)} units/min`);
  }
  setText($('fig-queue'), fmtInt(f.queue));
  setText($('fig-paused'), f.paused ? `yes, ${fmtSeconds(f.pause_left)} left` : 'no');
  setText($('fig-throttled'), fmtInt(throttled));
  setText($('fig-backlog'), f.backlog == null ? 'unknown' : fmtInt(f.backlog));
  setText($('fig-inflight'), fmtInt(f.in_flight));
  setText($('fig-succeeded'), fmtInt(get(f.jobs, 'succeeded')));

  // Jobs by outcome, with the count of the last minute.
  const now = {};
  for (const c of f.jobs) now[c.name] = c.value;
  jobHistory.push([f.t, now]);
  while (jobHistory.length > 1 && jobHistory[0][0] < f.t - 60) jobHistory.shift();
  const then = jobHistory[0][1];
  const rows = f.jobs.map((c) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = OUTCOMES[c.name] || c.name;
    const a = document.createElement('td');
    a.textContent = fmtInt(c.value);
    const b = document.createElement('td');
    b.textContent = fmtInt(c.value - (then[c.name] || 0));
    tr.append(th, a, b);
    return tr;
  });
  if (rows.length) $('jobs-rows').replaceChildren(...rows);

  // Throttles by status, rejections by reason, pauses.
  const trows = [];
  const row = (what, n) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = what;
    const td = document.createElement('td');
    td.textContent = n;
    tr.append(th, td);
    trows.push(tr);
  };
  for (const c of f.throttles) row(`Throttled with status ${c.name}`, fmtInt(c.value));
  if (!f.throttles.length) row('Throttled', '0');
  for (const c of f.rejections) if (c.value > 0) row(`Rejected by the limiter: ${c.name.replace('_', ' ')}`, fmtInt(c.value));
  row('Pauses seen since this page opened', fmtInt(pauses));
  row('Paused now', f.paused ? `yes, ${fmtSeconds(f.pause_left)} left` : 'no');
  $('throttle-rows').replaceChildren(...trows);
  setText($('limiter-note'), f.instances > 1 ? `${f.instances} instances share the budget; this one has ${fmtNum(f.share * 100)}% of it.`
    : f.share > 0 && f.share < 1 ? `This worker has ${fmtNum(f.share * 100)}% of the budget.` : '');

  // Members, only when membership is on.
  const memberPanel = $('members');
  memberPanel.hidden = !members.length;
  if (!memberPanel.hidden) {
    $('member-rows').replaceChildren(...f.members.map((m) => {
      const tr = document.createElement('tr');
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = m.self ? `${m.id} (this worker)` : m.id;
      const r = document.createElement('td');
      r.textContent = fmtInt(m.rate);
      const a = document.createElement('td');
      a.textContent = fmtInt(m.accepted);
      const s = document.createElement('td');
      s.textContent = `${fmtNum(m.share * 100)}%`;
      tr.append(th, r, a, s);
      return tr;
    }));
  }

  // Text equivalent and announcements.
  setText($('rate-text'), `Sending at ${fmtInt(f.rate)} units per minute; ` +
    `${f.accepted == null ? 'the accepted rate is not measured' : `the API accepted ${fmtInt(f.accepted)} in the last minute`}; ` +
    `${f.estimate == null ? 'no estimate of what the API accepts' : `the limiter estimates the API accepts ${fmtInt(f.estimate)}`}; ` +
    `${fmtInt(throttled)} throttles in all` +
    `${others.length ? `; ${others.length} other workers at ${others.map((m) => fmtInt(m.rate)).join(', ')}` : ''}. ` +
    `Backlog ${f.backlog == null ? 'unknown' : fmtInt(f.backlog)} jobs, ${fmtInt(get(f.jobs, 'succeeded'))} succeeded.`);
  if (prev && f.paused && !prev.paused) announce.say(`Throttled: paused for ${fmtSeconds(f.pause_left)}; rate ${fmtInt(f.rate)} units per minute.`);
  else if (prev && prev.backlog > 0 && f.backlog === 0) announce.say('The backlog is drained.');
  else if (prev && prev.estimate == null && f.estimate != null) announce.say(`The limiter estimates the API accepts ${fmtInt(f.estimate)} units per minute.`);
  prev = f;
}

// estimateText says what the limiter estimates the API accepts, or why it
// has no estimate (docs/ui.md): never a 0 that reads as an API that
// accepts nothing.
const NO_ESTIMATE = {
  not_yet: 'none yet (no 429 or quota header so far)',
  slow_start_off: 'none (limiter.slow_start is off)',
  fleet: 'none of its own (the fleet sets its rate)',
  disabled: 'none (limiter disabled)',
};
function estimateText(f) {
  if (f.estimate != null) return `${fmtInt(f.estimate)} units/min`;
  return NO_ESTIMATE[f.estimate_none] || '—';
}

// burstText says what the limiter would send at once now, in units and in
// seconds of its current rate (docs/ui.md): not the bucket's size, which
// is only the most it can hold.
function burstText(f) {
  if (f.disabled) return 'no limit (recording only)';
  if (f.burst == null) return '—';
  if (f.paused) return '0 units (paused)';
  if (f.queue > 0 && f.burst === 0) return '0 units (requests are waiting)';
  const secs = f.rate > 0 ? ` (= ${fmtSeconds(f.burst / f.rate * 60)} at the current rate)` : '';
  return `${fmtInt(f.burst)} units${secs}`;
}

connect('events', { frame: onFrame }, (status) => {
  const el = $('conn');
  setText(el, status === 'open' ? 'Connected' : 'Reconnecting…');
  el.className = `conn ${status}`;
});
