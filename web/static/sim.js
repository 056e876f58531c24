// The simulator page: it shows the frames that the server's simulation
// session streams, and posts the controls to it.
import {
  TimeChart, Announcer, connect, instanceColor, costColor, meterBand, BAND_TEXT,
  fmtInt, fmtNum, fmtClock, fmtSeconds, setText, THROTTLE_COLOR, SUM_COLOR, QUOTA_COLOR,
} from './chart.js';

const $ = (id) => document.getElementById(id);
const MODE_NAMES = { aimd: 'AIMD', cubic: 'CUBIC', none: 'retry only', static: 'static rate' };
const CALL_SPAN = 10; // seconds of calls drawn in the lanes

let session = null;
const touched = new Map(); // control → when the user last changed it
let last = null; // the latest frame
let prev = null;
let calls = []; // calls of the last CALL_SPAN virtual seconds
const history = []; // one row every 10 virtual seconds, for the data table
const announce = new Announcer($('announce'));

const rates = new TimeChart($('rates'), {
  span: 300, unit: 'units/min', minMax: 100, legend: $('rates-legend'), markerLabel: '429s',
});
const queue = new TimeChart($('queue'), {
  span: 300, unit: 'requests', minMax: 10, legend: $('queue-legend'),
  series: [{ key: 'q', label: 'Requests waiting in all limiters', color: '#555', fill: true }],
});

// The page exposes its latest frame for tests and curious readers.
window.sluice = { frame: null, frames: 0 };

for (const c of [1, 2, 5]) {
  $(`cost-${c}`).style.setProperty('--c', costColor(c));
}

// Controls.
async function send(op, value) {
  if (!session) return;
  try {
    const res = await fetch('api/control', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ session, op, value }),
    });
    if (!res.ok) {
      const body = await res.json().catch(() => ({ error: res.statusText }));
      showError(body.error || res.statusText);
      return;
    }
    showError('');
  } catch (e) {
    showError(`The server did not answer: ${e.message}`);
  }
}

function showError(text) {
  setText($('error'), text);
}

$('pause').addEventListener('click', () => send('pause', !(last && last.paused)));
$('reset').addEventListener('click', () => { resetView(); send('reset', true); });
$('drop').addEventListener('click', () => send('drop', true));
$('add').addEventListener('click', () => send('add', true));
$('remove').addEventListener('click', () => send('remove', true));
$('mode').addEventListener('change', (e) => { resetView(); send('mode', e.target.value); });
$('speed').addEventListener('change', (e) => send('speed', Number(e.target.value)));
for (const id of ['quota', 'demand', 'mode', 'speed']) {
  const el = $(id);
  for (const ev of ['input', 'change', 'pointerdown', 'keydown']) el.addEventListener(ev, () => touched.set(el, Date.now()));
}
for (const id of ['quota', 'demand']) {
  const input = $(id);
  input.addEventListener('input', () => setText($(`${id}-out`), fmtInt(Number(input.value))));
  input.addEventListener('change', () => send(id, Number(input.value)));
}
for (const b of document.querySelectorAll('[data-scenario]')) {
  b.addEventListener('click', () => {
    const s = b.dataset.scenario;
    if (s === 'first-throttle' || s === 'no-limiter') resetView();
    send('scenario', s);
  });
}

function resetView() {
  rates.clear();
  queue.clear();
  calls = [];
  history.length = 0;
  prev = null;
}

// Frames.
function onFrame(f) {
  if (last && f.t < last.t) resetView(); // the run restarted
  prev = last;
  last = f;
  window.sluice.frame = f;
  window.sluice.frames++;
  const dt = prev ? f.t - prev.t : 0;
  const newThrottles = prev ? Math.max(0, f.throttled - prev.throttled) : 0;
  const perMin = 60 / f.window;

  // Rates chart.
  const series = [];
  if (f.mode === 'none') {
    // No limiter, no rates: what the instances send instead.
    series.push({ key: 'sent', label: 'Units sent to the API, last 60 s', color: SUM_COLOR, width: 2.6 });
  } else {
    // Instances often run at the same rate: each later line is thinner, so
    // the earlier ones show around it.
    f.instances.forEach((inst, k) => {
      series.push({ key: `i${inst.i}`, label: `Instance ${inst.i + 1}`, color: instanceColor(inst.i), width: Math.max(1.6, 5 - 2.5 * k) });
    });
    series.push({ key: 'sum', label: 'Sum of rates', color: SUM_COLOR, width: 2.6 });
  }
  series.push({ key: 'quota', label: 'Quota left to these clients', color: QUOTA_COLOR, dash: true, width: 2 });
  series.push({ key: 'used', label: 'Units accepted, last 60 s', color: '#7a869a', fill: true });
  rates.setSeries(series);
  const values = { sum: f.sum_rate, quota: f.quota * perMin, used: f.used * perMin, sent: f.sent * perMin };
  for (const inst of f.instances) values[`i${inst.i}`] = inst.rate;
  if (dt > 0 || !prev) {
    rates.add(f.t, values, newThrottles);
    queue.add(f.t, { q: f.queue });
  }
  rates.draw();
  queue.draw();

  // Calls of the last seconds.
  for (const c of f.calls) calls.push(c);
  const cut = f.t - CALL_SPAN;
  let i = 0;
  while (i < calls.length && calls[i].t < cut) i++;
  if (i) calls.splice(0, i);
  drawLanes(f);

  updateFigures(f);
  updateControls(f);
  updateTable(f);
  describe(f, newThrottles);
  recordHistory(f);
}

function updateFigures(f) {
  const clock = $('clock');
  setText(clock, fmtClock(f.t));
  clock.dataset.t = String(f.t);
  setText($('speed-note'), f.paused ? '(paused)' : `(${fmtNum(f.speed)}× real time)`);
  setText($('fig-used'), fmtInt(f.used));
  setText($('fig-sum'), f.mode === 'none' ? '— (no limiter)' : `${fmtInt(f.sum_rate)} units/min`);
  setText($('fig-throttled'), fmtInt(f.throttled));
  setText($('fig-queue'), fmtInt(f.queue));
  setText($('fig-p95'), fmtSeconds(f.p95_wait));
  setText($('fig-rejected'), fmtInt(f.rejected + f.gave_up));

  // The quota meter: the units in the window against the quota left,
  // split by cost.
  const meter = $('meter');
  const quota = f.quota;
  const band = meterBand(f.used, quota);
  meter.setAttribute('aria-valuemax', String(Math.round(quota)));
  meter.setAttribute('aria-valuenow', String(Math.round(f.used)));
  const text = `${fmtInt(f.used)} of ${fmtInt(quota)} units in the last ${fmtInt(f.window)} s`;
  meter.setAttribute('aria-valuetext', `${text}: ${BAND_TEXT[band]}`);
  setText($('meter-text'), text + (f.quota < f.base_quota ? ` (the hidden quota is ${fmtInt(f.base_quota)}; another client takes the rest)` : ''));
  const bandEl = $('meter-band');
  setText(bandEl, BAND_TEXT[band]);
  bandEl.className = `band ${band}`;
  meter.className = `meter ${band}`;
  const fill = $('meter-fill');
  const segs = f.used_by_cost.map((u, k) => {
    const d = document.createElement('div');
    d.className = 'seg';
    d.style.setProperty('--c', costColor(u.cost, k));
    d.style.width = `${quota > 0 ? Math.min(100, (100 * u.units) / quota) : 0}%`;
    return d;
  });
  if (fill.children.length !== segs.length) fill.replaceChildren(...segs);
  else segs.forEach((s, k) => { fill.children[k].style.width = s.style.width; });
}

function updateControls(f) {
  const pause = $('pause');
  pause.setAttribute('aria-pressed', String(f.paused));
  setText(pause, f.paused ? 'Resume' : 'Pause');
  const dropped = f.drop_ends != null;
  for (const id of ['drop', 'try-noisy']) {
    const b = $(id);
    b.disabled = dropped;
    setText(b, dropped ? `Quota dropped (${fmtClock(f.drop_ends - f.t)} left)` : 'Drop the quota');
  }
  // Do not move a control under the user's hand.
  const keep = (el) => Date.now() - (touched.get(el) || 0) < 1500;
  const mode = $('mode');
  if (!keep(mode)) mode.value = f.mode;
  const speed = $('speed');
  if (!keep(speed)) speed.value = String(f.speed);
  for (const [id, v] of [['quota', f.base_quota], ['demand', f.demand]]) {
    const input = $(id);
    if (!keep(input)) {
      input.value = String(v);
      setText($(`${id}-out`), fmtInt(v));
    }
  }
  setText($('count'), String(f.instances.length));
  $('remove').disabled = f.instances.length <= 1;
  $('add').disabled = f.instances.length >= 16;
  $('try-instance').disabled = f.instances.length >= 16;
  $('try-none').disabled = f.mode === 'none';
}

function updateTable(f) {
  const rows = f.instances.map((inst) => {
    const tr = document.createElement('tr');
    const name = document.createElement('th');
    name.scope = 'row';
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.setAttribute('aria-hidden', 'true');
    sw.style.setProperty('--c', instanceColor(inst.i));
    name.append(sw, document.createTextNode(`Instance ${inst.i + 1}`));
    const state = f.mode === 'none' ? 'no limiter'
      : inst.paused ? `paused, ${fmtSeconds(Math.max(0, inst.paused_until - f.t))} left` : 'sending';
    const cells = [
      f.mode === 'none' ? '—' : fmtInt(inst.rate),
      f.mode === 'none' ? '—' : `${fmtNum(inst.tokens)} of ${fmtNum(inst.capacity)}`,
      fmtInt(inst.queue),
      state,
    ].map((t) => { const td = document.createElement('td'); td.textContent = t; return td; });
    tr.append(name, ...cells);
    return tr;
  });
  $('inst-rows').replaceChildren(...rows);
}

// drawLanes draws, for each instance, its queue (blocks coloured by cost,
// the head next to the bucket), its bucket (tokens against capacity) and its
// calls of the last seconds on their way right, to the API.
function drawLanes(f) {
  const c = $('lanes');
  const n = f.instances.length;
  const laneH = 40;
  const top = 20;
  const cssH = top + n * laneH + 6;
  if (c.style.height !== `${cssH}px`) c.style.height = `${cssH}px`;
  const w = c.clientWidth;
  if (!w) return;
  const dpr = window.devicePixelRatio || 1;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(cssH * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(cssH * dpr);
  }
  const g = c.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, cssH);
  const ink = getComputedStyle(c).getPropertyValue('--ink').trim() || '#222';
  const narrow = w < 520;
  const labelW = narrow ? 30 : 92;
  const bucketW = 34;
  const apiW = 34;
  const queueX0 = labelW + 4;
  const bucketX = Math.round(labelW + (w - labelW - apiW) * 0.42);
  const callsX0 = bucketX + bucketW + 8;
  const callsX1 = w - apiW - 4;
  g.font = '12px system-ui, sans-serif';
  g.fillStyle = ink;
  g.textBaseline = 'middle';
  g.textAlign = 'center';
  g.fillText('queue → head', (queueX0 + bucketX) / 2, 9);
  g.fillText('bucket', bucketX + bucketW / 2, 9);
  g.fillText(`calls, last ${CALL_SPAN} s →`, (callsX0 + callsX1) / 2, 9);
  g.fillText('API', w - apiW / 2, 9);
  const unitW = narrow ? 2 : 3;
  const byInst = new Map();
  for (const call of calls) {
    if (!byInst.has(call.i)) byInst.set(call.i, []);
    byInst.get(call.i).push(call);
  }
  f.instances.forEach((inst, k) => {
    const y0 = top + k * laneH;
    const mid = y0 + laneH / 2;
    const color = instanceColor(inst.i);
    g.fillStyle = k % 2 ? 'rgba(0,0,0,0.03)' : 'rgba(0,0,0,0)';
    g.fillRect(0, y0, w, laneH);
    // Label.
    g.fillStyle = color;
    g.fillRect(4, mid - 6, 10, 12);
    g.fillStyle = ink;
    g.textAlign = 'left';
    g.fillText(narrow ? `${inst.i + 1}` : `Instance ${inst.i + 1}`, 18, mid);
    // Queue: from the bucket leftwards.
    let x = bucketX - 4;
    let shown = 0;
    for (const cost of inst.queue_costs || []) {
      const bw = cost * unitW + (cost > 1 ? cost - 1 : 0);
      if (x - bw < queueX0 + 40) break;
      g.fillStyle = costColor(cost);
      g.fillRect(x - bw, mid - 8, bw, 16);
      x -= bw + 2;
      shown++;
    }
    if (inst.queue > shown) {
      g.fillStyle = ink;
      g.textAlign = 'right';
      g.fillText(`+${fmtInt(inst.queue - shown)}`, x - 2, mid);
    }
    // Bucket.
    g.strokeStyle = ink;
    g.lineWidth = 1;
    g.strokeRect(bucketX + 0.5, y0 + 4.5, bucketW - 1, laneH - 9);
    if (f.mode !== 'none' && inst.capacity > 0) {
      const frac = Math.max(0, Math.min(1, inst.tokens / inst.capacity));
      const hh = (laneH - 10) * frac;
      g.fillStyle = color;
      g.globalAlpha = 0.7;
      g.fillRect(bucketX + 1, y0 + laneH - 5 - hh, bucketW - 2, hh);
      g.globalAlpha = 1;
      if (inst.tokens < 0) {
        g.strokeStyle = THROTTLE_COLOR;
        g.strokeRect(bucketX + 2.5, y0 + 6.5, bucketW - 5, laneH - 13);
      }
      if (inst.paused) {
        g.fillStyle = ink;
        g.textAlign = 'center';
        g.fillText('❚❚', bucketX + bucketW / 2, mid);
      }
    } else {
      g.fillStyle = ink;
      g.textAlign = 'center';
      g.fillText('—', bucketX + bucketW / 2, mid);
    }
    // Calls on their way: newest by the bucket, older further right.
    for (const call of byInst.get(inst.i) || []) {
      const age = f.t - call.t;
      const cx = callsX0 + (age / CALL_SPAN) * (callsX1 - callsX0);
      const s = 3 + Math.sqrt(call.c) * 3;
      if (call.ok) {
        g.fillStyle = costColor(call.c);
        g.fillRect(cx - s / 2, mid - s / 2, s, s);
      } else {
        g.strokeStyle = THROTTLE_COLOR;
        g.lineWidth = 2;
        g.beginPath();
        g.moveTo(cx - s / 2, mid - s / 2);
        g.lineTo(cx + s / 2, mid + s / 2);
        g.moveTo(cx + s / 2, mid - s / 2);
        g.lineTo(cx - s / 2, mid + s / 2);
        g.stroke();
      }
    }
  });
  // The API.
  const band = meterBand(f.used, f.quota);
  g.fillStyle = band === 'full' ? '#f6d1cf' : band === 'near' ? '#fbe7c2' : '#d7efd9';
  g.fillRect(w - apiW, top, apiW, n * laneH);
  g.strokeStyle = ink;
  g.strokeRect(w - apiW + 0.5, top + 0.5, apiW - 1, n * laneH - 1);
}

// describe keeps the text equivalent of the charts current and announces
// what changed.
let lastDescribed = 0;
function describe(f, newThrottles) {
  const now = Date.now();
  if (now - lastDescribed > 250) {
    lastDescribed = now;
    const minute = rates.points.filter((p) => p.t > f.t - 60).reduce((a, p) => a + p.m, 0);
    const perInst = f.mode === 'none' ? `no limiter (retry only), ${fmtInt(f.sent * 60 / f.window)} units per minute sent to the API`
      : f.instances.map((i) => `instance ${i.i + 1} ${fmtInt(i.rate)}`).join(', ');
    const sum = f.mode === 'none' ? '' : ` Sum of rates ${fmtInt(f.sum_rate)} units per minute.`;
    setText($('rates-text'), `At ${fmtClock(f.t)} in mode ${MODE_NAMES[f.mode]}: ${perInst}.${sum} ` +
      `Quota left to these clients ${fmtInt(f.quota * 60 / f.window)} per minute; ${fmtInt(f.used)} units accepted in the last 60 s. ` +
      `${fmtInt(minute)} 429s in the last minute, ${fmtInt(f.throttled)} in all.`);
  }
  if (!prev) return;
  if (f.t < prev.t || f.mode !== prev.mode) {
    announce.say(`Restarted in mode ${MODE_NAMES[f.mode]}.`);
  } else if (prev.throttled === 0 && f.throttled > 0) {
    announce.say(`First 429 at ${fmtClock(f.t)}.`);
  } else if (f.drop_ends != null && prev.drop_ends == null) {
    announce.say(`Another client takes part of the quota: ${fmtInt(f.quota)} units are left for ${fmtClock(f.drop_ends - f.t)}.`);
  } else if (f.drop_ends == null && prev.drop_ends != null) {
    announce.say(`The quota is back: ${fmtInt(f.quota)} units.`);
  } else if (f.instances.length !== prev.instances.length) {
    announce.say(`${f.instances.length} instances.`);
  } else if (f.paused !== prev.paused) {
    announce.say(f.paused ? 'Paused.' : 'Running.');
  } else if (newThrottles > 0 && f.mode !== 'none' && f.instances.some((inst) => inst.paused && !(prev.instances.find((p) => p.i === inst.i) || {}).paused)) {
    announce.say(`429 at ${fmtClock(f.t)}: rate cut to ${fmtInt(f.sum_rate)} units per minute; pausing for the Retry-After.`);
  }
}

function recordHistory(f) {
  const slot = Math.floor(f.t / 10) * 10;
  const lastRow = history[history.length - 1];
  if (lastRow && lastRow.t === slot) return;
  const thr = f.throttled;
  history.push({
    t: slot, sum: f.mode === 'none' ? null : f.sum_rate, quota: f.quota * 60 / f.window,
    used: f.used, thr: lastRow ? thr - lastRow.total : thr, total: thr,
    inst: f.instances.map((i) => ({ i: i.i, rate: i.rate })),
  });
  while (history.length > 19) history.shift();
  if ($('data-details').open) renderHistory();
}

function renderHistory() {
  const idx = [...new Set(history.flatMap((h) => h.inst.map((i) => i.i)))].sort((a, b) => a - b);
  const head = document.createElement('tr');
  for (const t of ['Time', 'Sum of rates', ...idx.map((i) => `Instance ${i + 1}`), 'Quota per minute', 'Units used, 60 s', '429s since the row above']) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = t;
    head.append(th);
  }
  $('data-head').replaceChildren(head);
  $('data-rows').replaceChildren(...history.map((h) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = fmtClock(h.t);
    const vals = [h.sum, ...idx.map((i) => (h.inst.find((x) => x.i === i) || {}).rate), h.quota, h.used, h.thr];
    tr.append(th, ...vals.map((v) => { const td = document.createElement('td'); td.textContent = fmtInt(v); return td; }));
    return tr;
  }));
}
$('data-details').addEventListener('toggle', () => { if ($('data-details').open) renderHistory(); });

connect('api/stream', {
  session: (s) => {
    session = s.session;
    resetView();
    last = null;
    $('quota').max = String(Math.min(s.max_quota, 10000));
    $('quota').min = String(s.min_quota);
  },
  frame: onFrame,
}, (status) => {
  const el = $('conn');
  setText(el, status === 'open' ? 'Connected' : 'Reconnecting…');
  el.className = `conn ${status}`;
  if (status !== 'open') session = null;
});
