/**
 * The dashboard's one script, served from the dashboard itself (CSP `script-src 'self'`, and
 * Trusted Types with no policy, so no HTML string can ever reach the DOM). Every page works
 * without it; with it:
 * - live: a page whose <main> names a JSON endpoint (`data-live`) polls it every `data-poll` ms
 *   with If-None-Match, redraws the named slots and table bodies with DOM calls and textContent
 *   only (and marks: a state word as data-state and text, e.g. a workflow graph's boxes), and
 *   stops while the tab is hidden;
 * - times (and the charts' time axes) in UTC or the browser's zone, and the light/dark theme,
 *   switched without a reload
 *   (the same preference cookies the no-JS forms set);
 * - a dialog before a destructive POST (`data-confirm`, or `data-confirm-from`: the question
 *   fetched as JSON, for a bulk action's count), which the server otherwise asks on a page;
 * - keys: / search, j or n next page, k or p previous, ? help.
 * Plain ES2020 in a string: no build step, nothing fetched from anywhere else.
 */
export const CLIENT_JS = String.raw`(() => {
'use strict';
const doc = document, root = doc.documentElement, body = doc.body;
const base = body.dataset.base || '';
const csrfMeta = doc.querySelector('meta[name="csrf-token"]');
const csrf = csrfMeta ? csrfMeta.getAttribute('content') || '' : '';

// --- times ---------------------------------------------------------------------------------
const zoned = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });
function localText(d) {
  const p = {};
  for (const x of zoned.formatToParts(d)) p[x.type] = x.value;
  return p.year + '-' + p.month + '-' + p.day + ' ' + p.hour + ':' + p.minute + ':' + p.second + ' ' + p.timeZoneName;
}
const utcText = (d) => d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
function relText(d) {
  const s = Math.round((d.getTime() - Date.now()) / 1000), a = Math.abs(s);
  const t = a < 60 ? a + ' s' : a < 3600 ? Math.round(a / 60) + ' min' : a < 172800 ? Math.round(a / 3600) + ' h' : Math.round(a / 86400) + ' d';
  return a < 1 ? 'now' : s < 0 ? t + ' ago' : 'in ' + t;
}
// a chart's time axis: HH:MM (MM-DD HH:MM over a day or more), the zone named on the last tick
const axisZoned = new Intl.DateTimeFormat('en-US', { month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });
function axisText(d, withDay, withZone, local) {
  if (!local) {
    const s = d.toISOString();
    return (withDay ? s.slice(5, 16).replace('T', ' ') : s.slice(11, 16)) + (withZone ? ' UTC' : '');
  }
  const p = {};
  for (const x of axisZoned.formatToParts(d)) p[x.type] = x.value;
  return (withDay ? p.month + '-' + p.day + ' ' : '') + p.hour + ':' + p.minute + (withZone ? ' ' + p.timeZoneName : '');
}
function paintTimes(scope) {
  const local = root.dataset.tz === 'local';
  for (const el of scope.querySelectorAll('time[datetime]')) {
    const d = new Date(el.getAttribute('datetime'));
    if (isNaN(d.getTime())) continue;
    const abs = local ? localText(d) : utcText(d);
    if (el.hasAttribute('data-rel')) { el.textContent = relText(d); el.title = abs; }
    else { el.textContent = abs; el.title = relText(d); }
  }
  for (const el of scope.querySelectorAll('svg text[data-at]')) {
    const d = new Date(el.getAttribute('data-at'));
    if (!isNaN(d.getTime())) el.textContent = axisText(d, el.hasAttribute('data-day'), el.hasAttribute('data-zone'), local);
  }
}

// --- preferences -----------------------------------------------------------------------------
const CHOICES = { theme: ['auto', 'light', 'dark'], tz: ['utc', 'local'] };
const LABELS = { theme: 'Theme', tz: 'Times' };
function setPref(btn) {
  const name = btn.name, value = btn.value, list = CHOICES[name];
  if (!list || list.indexOf(value) < 0) return;
  const secure = location.protocol === 'https:' ? '; secure' : '';
  doc.cookie = 'leasehold_' + name + '=' + value + '; path=' + (base || '/') + '; max-age=31536000; samesite=strict' + secure;
  root.dataset[name] = value;
  btn.value = list[(list.indexOf(value) + 1) % list.length];
  btn.textContent = LABELS[name] + ': ' + (value === 'utc' ? 'UTC' : value);
  paintTimes(doc);
}

// --- confirmations and dialogs -------------------------------------------------------------
function el(tag, text, cls) {
  const e = doc.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
function modal(build) {
  const dlg = el('dialog');
  build(dlg);
  dlg.addEventListener('close', () => dlg.remove());
  body.appendChild(dlg);
  dlg.showModal();
  return dlg;
}
function confirmThen(form, question, label) {
  modal((dlg) => {
    dlg.className = 'confirm';
    dlg.appendChild(el('p', question));
    const row = el('div', undefined, 'actions');
    const yes = el('button', label || 'Confirm', 'danger'), no = el('button', 'Back');
    yes.type = no.type = 'button';
    yes.addEventListener('click', () => {
      const flag = el('input');
      flag.type = 'hidden'; flag.name = 'confirmed'; flag.value = '1';
      form.appendChild(flag);
      dlg.close();
      form.submit();
    });
    no.addEventListener('click', () => dlg.close());
    row.append(yes, no);
    dlg.appendChild(row);
    setTimeout(() => no.focus(), 0);
  });
}
doc.addEventListener('submit', (e) => {
  const form = e.target, btn = e.submitter;
  if (!(form instanceof HTMLFormElement)) return;
  if (form.hasAttribute('data-prefs') && btn && btn.name) { e.preventDefault(); setPref(btn); return; }
  const from = form.getAttribute('data-confirm-from');
  if (from && safeHref(from) && !form.querySelector('input[name="confirmed"]')) {
    // the question needs a count from the server; without one the server's own page asks
    e.preventDefault();
    fetch(from, { headers: { Accept: 'application/json' }, cache: 'no-store', credentials: 'same-origin', redirect: 'error' })
      .then((r) => (r.ok ? r.json() : null))
      .then((a) => { if (a && typeof a.question === 'string') confirmThen(form, a.question, a.label); else form.submit(); })
      .catch(() => form.submit());
    return;
  }
  const q = form.getAttribute('data-confirm');
  if (q && !form.querySelector('input[name="confirmed"]')) { e.preventDefault(); confirmThen(form, q, btn ? btn.textContent : ''); }
});
const KEYS = [['/', 'search'], ['j or n', 'next page'], ['k or p', 'previous page'], ['?', 'these shortcuts'], ['Esc', 'close, or leave a field']];
function help() {
  modal((dlg) => {
    dlg.className = 'help';
    dlg.appendChild(el('h2', 'Keyboard shortcuts'));
    const dl = el('dl');
    for (const [k, what] of KEYS) { const dt = el('dt'); dt.appendChild(el('kbd', k)); dl.append(dt, el('dd', what)); }
    const close = el('button', 'Close');
    close.type = 'button';
    close.addEventListener('click', () => dlg.close());
    dlg.append(dl, close);
  });
}
function follow(rels) {
  for (const r of rels) { const a = doc.querySelector('a[rel="' + r + '"]'); if (a) { location.href = a.href; return; } }
}
doc.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
  const t = e.target;
  if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) { if (e.key === 'Escape') t.blur(); return; }
  if (doc.querySelector('dialog[open]')) return;
  if (e.key === '/') { const s = doc.querySelector('[data-search]'); if (s) { e.preventDefault(); s.focus(); } }
  else if (e.key === 'j' || e.key === 'n') follow(['next']);
  else if (e.key === 'k' || e.key === 'p') follow(['prev', 'first']);
  else if (e.key === '?') { e.preventDefault(); help(); }
});

// --- live ------------------------------------------------------------------------------------
const safeHref = (h) => typeof h === 'string' && h.startsWith(base + '/') && !h.startsWith('//') && h.indexOf('\\') < 0;
function part(p) {
  if (p.f) return form(p.f);
  let e;
  if (p.dt) { e = el('time', p.t || ''); e.setAttribute('datetime', p.dt); if (p.r) e.setAttribute('data-rel', ''); }
  else if (p.h && safeHref(p.h)) { e = el('a', p.t || ''); e.href = p.h; if (p.rel) e.rel = p.rel; }
  else if (p.c || p.ti) e = el('span', p.t || '');
  else return doc.createTextNode(p.t || '');
  if (p.c) e.className = p.c;
  if (p.ti) e.title = p.ti;
  return e;
}
function hidden(name, value) {
  const i = el('input');
  i.type = 'hidden'; i.name = name; i.value = value;
  return i;
}
function form(f) {
  const e = el('form', undefined, 'inline');
  if (!safeHref(f.a)) return e;
  e.method = 'post'; e.action = f.a;
  if (f.k) e.setAttribute('data-confirm', f.k);
  e.appendChild(hidden('csrf', csrf));
  for (const k of Object.keys(f.v || {})) e.appendChild(hidden(k, f.v[k]));
  e.appendChild(el('button', f.l, f.c || ''));
  return e;
}
const drawn = {};
function drawTable(name, rows) {
  const key = 't:' + name, sig = JSON.stringify(rows);
  if (drawn[key] === sig) return;
  drawn[key] = sig;
  for (const t of doc.querySelectorAll('table[data-table="' + CSS.escape(name) + '"]')) {
    const tb = t.tBodies[0];
    if (!tb) continue;
    const trs = rows.map((r) => {
      const tr = el('tr');
      for (const c of r) { const td = el('td', undefined, c.c); if (c.l) td.setAttribute('data-label', c.l); if (c.s) td.colSpan = c.s; td.append(...c.p.map(part)); tr.appendChild(td); }
      return tr;
    });
    if (trs.length === 0) {
      const tr = el('tr', undefined, 'empty'), td = el('td', t.getAttribute('data-empty') || '', 'muted');
      td.colSpan = t.tHead ? t.tHead.rows[0].cells.length : 1;
      tr.appendChild(td);
      trs.push(tr);
    }
    tb.replaceChildren(...trs);
  }
}
function apply(m) {
  for (const name of Object.keys(m.slots || {})) {
    const key = 's:' + name, sig = JSON.stringify(m.slots[name]);
    if (drawn[key] === sig) continue;
    drawn[key] = sig;
    for (const e of doc.querySelectorAll('[data-slot="' + CSS.escape(name) + '"]')) e.replaceChildren(...m.slots[name].map(part));
  }
  for (const name of Object.keys(m.tables || {})) drawTable(name, m.tables[name]);
  for (const name of Object.keys(m.show || {})) for (const e of doc.querySelectorAll('[data-show="' + CSS.escape(name) + '"]')) e.hidden = !m.show[name];
  // a mark is a state word: a data attribute the stylesheet colours by, and text; never markup
  for (const name of Object.keys(m.marks || {})) {
    const v = String(m.marks[name]);
    for (const e of doc.querySelectorAll('[data-mark="' + CSS.escape(name) + '"]')) if (e.getAttribute('data-state') !== v) e.setAttribute('data-state', v);
    for (const e of doc.querySelectorAll('[data-mark-text="' + CSS.escape(name) + '"]')) if (e.textContent !== v) e.textContent = v;
  }
  paintTimes(doc);
}
const main = doc.querySelector('main[data-live]');
const every = Number(body.dataset.poll) || 0;
const light = doc.getElementById('live');
function state(s, text) {
  if (!light) return;
  light.hidden = false;
  light.setAttribute('data-state', s);
  light.textContent = text;
}
let timer = null, etag = '', stopped = false, inflight = false;
function schedule() {
  if (stopped || doc.hidden || timer !== null) return;
  timer = setTimeout(poll, every);
}
async function poll() {
  timer = null;
  if (stopped || doc.hidden || inflight) return;
  inflight = true;
  try {
    const headers = { Accept: 'application/json' };
    if (etag) headers['If-None-Match'] = etag;
    const res = await fetch(main.getAttribute('data-live'), { headers, cache: 'no-store', credentials: 'same-origin', redirect: 'error' });
    if (res.status === 401 || res.status === 403 || res.status === 404) { stopped = true; state('error', res.status === 401 ? 'signed out' : 'stopped'); return; }
    if (res.status === 200) { etag = res.headers.get('ETag') || ''; apply(await res.json()); }
    if (res.status === 200 || res.status === 304) state('live', 'live'); else state('error', 'retrying');
  } catch (err) {
    state('offline', 'offline');
  } finally {
    inflight = false;
  }
  schedule();
}
paintTimes(doc);
if (main && every > 0) {
  state('live', 'live');
  doc.addEventListener('visibilitychange', () => {
    if (doc.hidden) { if (timer !== null) clearTimeout(timer); timer = null; if (!stopped) state('paused', 'paused'); }
    else if (!stopped) { if (timer !== null) clearTimeout(timer); poll(); }
  });
  schedule();
}
})();
`;
