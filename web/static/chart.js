// The chart code shared by the simulator page and the live page of a
// running worker: a time chart drawn on a canvas, colours, number formats,
// the event stream and the screen-reader announcer. Plain JavaScript, no
// dependencies.

// Colours that stay apart for the common kinds of colour blindness.
const INSTANCE_COLORS = ['#1f6fb4', '#2a9d3f', '#8e44ad', '#a86b00', '#138d9c', '#c0397a', '#5d4037', '#6b7a8f'];
const COST_COLORS = new Map([[1, '#56a7e8'], [2, '#f0932b'], [5, '#8e5bd6']]);
const COST_FALLBACK = ['#56a7e8', '#f0932b', '#8e5bd6', '#3aa675', '#d65b7a'];
export const THROTTLE_COLOR = '#d62728';
export const SUM_COLOR = '#111111';
export const QUOTA_COLOR = '#b03a2e';

export function instanceColor(i) {
  return INSTANCE_COLORS[i % INSTANCE_COLORS.length];
}

export function costColor(cost, index = 0) {
  return COST_COLORS.get(cost) || COST_FALLBACK[index % COST_FALLBACK.length];
}

const intFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const oneFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
const twoFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

// fmtInt formats a count or a rate: "2,950"; "—" for null.
export function fmtInt(v) {
  return v == null || Number.isNaN(v) ? '—' : intFmt.format(v);
}

// fmtNum formats with up to one decimal (two below 10).
export function fmtNum(v) {
  if (v == null || Number.isNaN(v)) return '—';
  return Math.abs(v) < 10 ? twoFmt.format(v) : oneFmt.format(v);
}

// fmtClock formats seconds as m:ss, or h:mm:ss from an hour.
export function fmtClock(s) {
  s = Math.max(0, Math.floor(s));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

// fmtSeconds formats a duration in seconds for a figure: "0.42 s", "12 s".
export function fmtSeconds(s) {
  if (s == null || Number.isNaN(s)) return '—';
  if (s === 0) return '0 s';
  if (s < 10) return `${twoFmt.format(s)} s`;
  return `${intFmt.format(s)} s`;
}

// meterBand names the band of the quota meter: under 90%, 90–100%, full.
export function meterBand(used, quota) {
  if (!(quota > 0)) return 'full';
  const f = used / quota;
  if (f >= 0.9995) return 'full';
  if (f >= 0.9) return 'near';
  return 'under';
}

export const BAND_TEXT = { under: 'under 90%', near: '90–100%', full: 'full' };

// niceStep returns a round step near span/count.
function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];

// TimeChart draws series of values over time on a canvas: lines, filled
// areas, markers at the bottom edge (429s) and shaded bands (pauses). The
// time axis shows the last `span` seconds. Series can change while it runs
// (instances come and go). It keeps only the points it can show.
export class TimeChart {
  constructor(canvas, opts) {
    this.canvas = canvas;
    this.span = opts.span || 300;
    // grow: show from 0 to the latest point (at least minSpan) until the
    // data covers span.
    this.grow = !!opts.grow;
    this.minSpan = opts.minSpan || 60;
    this.unit = opts.unit || '';
    this.minMax = opts.minMax || 10;
    this.series = [];
    this.points = [];
    this.legend = opts.legend || null;
    this.markerLabel = opts.markerLabel || '';
    this.bandLabel = opts.bandLabel || '';
    this.setSeries(opts.series || []);
    this.pending = false;
    if (typeof ResizeObserver !== 'undefined') {
      new ResizeObserver(() => this.draw()).observe(canvas);
    }
  }

  // setSeries sets the series: [{key, label, color, width, dash, fill}].
  setSeries(series) {
    const same = series.length === this.series.length &&
      series.every((s, i) => s.key === this.series[i].key && s.label === this.series[i].label);
    this.series = series;
    if (!same) this.renderLegend();
  }

  renderLegend() {
    if (!this.legend) return;
    const items = [];
    for (const s of this.series) {
      const li = document.createElement('li');
      const sw = document.createElement('span');
      sw.className = 'swatch' + (s.dash ? ' dashed' : '') + (s.fill ? ' area' : '');
      sw.style.setProperty('--c', s.color);
      sw.setAttribute('aria-hidden', 'true');
      li.append(sw, document.createTextNode(s.label));
      items.push(li);
    }
    if (this.markerLabel) {
      const li = document.createElement('li');
      const sw = document.createElement('span');
      sw.className = 'swatch tick';
      sw.style.setProperty('--c', THROTTLE_COLOR);
      sw.setAttribute('aria-hidden', 'true');
      li.append(sw, document.createTextNode(this.markerLabel));
      items.push(li);
    }
    if (this.bandLabel) {
      const li = document.createElement('li');
      const sw = document.createElement('span');
      sw.className = 'swatch band';
      sw.setAttribute('aria-hidden', 'true');
      li.append(sw, document.createTextNode(this.bandLabel));
      items.push(li);
    }
    this.legend.replaceChildren(...items);
  }

  clear() {
    this.points = [];
    this.draw();
  }

  // add appends a point at time t (seconds): values by series key (null
  // for a gap), marks (a count drawn as a marker) and band (shaded).
  add(t, values, marks = 0, band = false) {
    const last = this.points[this.points.length - 1];
    if (last && t < last.t) this.points = [];
    this.points.push({ t, v: values, m: marks, b: band });
    const cut = t - this.span * 1.1;
    let i = 0;
    while (i < this.points.length && this.points[i].t < cut) i++;
    if (i > 0) this.points.splice(0, i);
  }

  // last returns the values of the latest point.
  last() {
    return this.points.length ? this.points[this.points.length - 1] : null;
  }

  draw() {
    const c = this.canvas;
    const w = c.clientWidth;
    const h = c.clientHeight;
    if (!w || !h) return;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const css = getComputedStyle(c);
    const ink = css.getPropertyValue('--ink').trim() || '#222';
    const grid = css.getPropertyValue('--grid').trim() || '#ddd';
    const font = '12px system-ui, sans-serif';
    const pad = { l: 52, r: 10, t: 10, b: 24 };
    const pw = w - pad.l - pad.r;
    const ph = h - pad.t - pad.b;
    const pts = this.points;
    const latest = pts.length ? pts[pts.length - 1].t : 0;
    const span = this.grow ? Math.min(this.span, Math.max(this.minSpan, Math.ceil(latest / 30) * 30)) : this.span;
    const tMax = Math.max(latest, span);
    const tMin = tMax - span;
    let yMax = this.minMax;
    for (const p of pts) {
      if (p.t < tMin) continue;
      for (const s of this.series) {
        const v = p.v[s.key];
        if (v != null && v > yMax) yMax = v;
      }
    }
    const yStep = niceStep(yMax * 1.08, 4);
    yMax = Math.ceil((yMax * 1.08) / yStep) * yStep;
    const X = (t) => pad.l + ((t - tMin) / span) * pw;
    const Y = (v) => pad.t + ph - (v / yMax) * ph;

    // Bands (pauses).
    g.fillStyle = 'rgba(120, 120, 120, 0.16)';
    for (let i = 0; i < pts.length; i++) {
      if (!pts[i].b || pts[i].t < tMin) continue;
      const x0 = X(i > 0 ? Math.max(pts[i - 1].t, tMin) : pts[i].t);
      const x1 = X(pts[i].t);
      g.fillRect(x0, pad.t, Math.max(1, x1 - x0), ph);
    }

    // Grid and axes.
    g.font = font;
    g.lineWidth = 1;
    g.strokeStyle = grid;
    g.fillStyle = ink;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (let v = 0; v <= yMax + 1e-9; v += yStep) {
      const y = Math.round(Y(v)) + 0.5;
      g.beginPath();
      g.moveTo(pad.l, y);
      g.lineTo(pad.l + pw, y);
      g.stroke();
      g.fillText(fmtInt(v), pad.l - 6, y);
    }
    const tStep = TIME_STEPS.find((s) => span / s <= Math.max(2, pw / 70)) || 3600;
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (let t = Math.ceil(tMin / tStep) * tStep; t <= tMax; t += tStep) {
      if (t < 0) continue;
      const x = Math.round(X(t)) + 0.5;
      g.beginPath();
      g.moveTo(x, pad.t);
      g.lineTo(x, pad.t + ph);
      g.stroke();
      g.textAlign = x > pad.l + pw - 16 ? 'right' : 'center';
      g.fillText(fmtClock(t), Math.min(x, pad.l + pw + pad.r - 1), pad.t + ph + 6);
    }
    g.strokeStyle = ink;
    g.beginPath();
    g.moveTo(pad.l + 0.5, pad.t);
    g.lineTo(pad.l + 0.5, pad.t + ph + 0.5);
    g.lineTo(pad.l + pw, pad.t + ph + 0.5);
    g.stroke();

    g.save();
    g.beginPath();
    g.rect(pad.l, pad.t - 2, pw, ph + 4);
    g.clip();
    // Areas first, then lines.
    for (const s of this.series.filter((s) => s.fill)) {
      g.fillStyle = s.color;
      g.globalAlpha = 0.22;
      let open = false;
      let x0 = 0;
      let xl = 0;
      g.beginPath();
      for (const p of pts) {
        const v = p.v[s.key];
        if (v == null) {
          if (open) { g.lineTo(xl, Y(0)); g.lineTo(x0, Y(0)); g.closePath(); open = false; }
          continue;
        }
        const x = X(p.t);
        if (!open) { g.moveTo(x, Y(0)); x0 = x; open = true; }
        g.lineTo(x, Y(v));
        xl = x;
      }
      if (open) { g.lineTo(xl, Y(0)); g.lineTo(x0, Y(0)); g.closePath(); }
      g.fill();
      g.globalAlpha = 1;
    }
    for (const s of this.series.filter((s) => !s.fill)) {
      g.strokeStyle = s.color;
      g.lineWidth = s.width || 1.8;
      g.setLineDash(s.dash ? [6, 4] : []);
      g.lineJoin = 'round';
      g.beginPath();
      let open = false;
      for (const p of pts) {
        const v = p.v[s.key];
        if (v == null) { open = false; continue; }
        const x = X(p.t);
        const y = Y(v);
        if (open) g.lineTo(x, y); else g.moveTo(x, y);
        open = true;
      }
      g.stroke();
    }
    g.setLineDash([]);
    // Markers: a red tick per point with marks, taller for more.
    g.strokeStyle = THROTTLE_COLOR;
    g.lineWidth = 2;
    for (const p of pts) {
      if (!p.m || p.t < tMin) continue;
      const x = Math.round(X(p.t)) + 0.5;
      const len = Math.min(6 + 3 * Math.sqrt(p.m), ph / 3);
      g.beginPath();
      g.moveTo(x, pad.t + ph);
      g.lineTo(x, pad.t + ph - len);
      g.stroke();
    }
    g.restore();
    if (this.unit) {
      g.fillStyle = ink;
      g.textAlign = 'left';
      g.textBaseline = 'top';
      g.fillText(this.unit, pad.l + 6, pad.t + 2);
    }
  }
}

// connect opens an event stream and calls handlers[event](data) for each
// event, and onStatus('open' | 'retrying') as the connection changes.
export function connect(url, handlers, onStatus) {
  const es = new EventSource(url);
  es.onopen = () => onStatus && onStatus('open');
  es.onerror = () => onStatus && onStatus('retrying');
  for (const [name, fn] of Object.entries(handlers)) {
    es.addEventListener(name, (e) => fn(JSON.parse(e.data)));
  }
  return es;
}

// Announcer speaks short messages through an aria-live region, at most
// one every `gap` milliseconds (later ones replace those not yet spoken).
export class Announcer {
  constructor(el, gap = 4000) {
    this.el = el;
    this.gap = gap;
    this.last = 0;
    this.queued = null;
    this.timer = 0;
  }

  say(text) {
    const now = Date.now();
    if (now - this.last >= this.gap) {
      this.last = now;
      this.el.textContent = text;
      return;
    }
    this.queued = text;
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = 0;
        const t = this.queued;
        this.queued = null;
        if (t) this.say(t);
      }, this.gap - (now - this.last));
    }
  }
}

// setText sets an element's text only when it changes.
export function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}
