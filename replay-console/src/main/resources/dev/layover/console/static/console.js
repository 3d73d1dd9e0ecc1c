/*
 * Layover replay console. Vanilla JS, no build step.
 *
 * Rule: data from the server is put on the page only as text (text nodes, textContent, value,
 * setAttribute with fixed prefixes) - never through an API that parses HTML - so that provider
 * errors and args containing markup show as what they are. A test checks this file for such APIs.
 */
'use strict';

(function () {
  const REFRESH_MS = 5000;
  const DL_STATES = ['parked', 'review', 'replayed', 'discarded'];
  const JOB_STATES = ['scheduled', 'rescheduled', 'retrying', 'running'];
  const WHYS = ['new', 'replay', 'retry', 'cooldown', 'bucket', 'breaker', 'rate_limited', 'quota', 'snooze', 'concurrency', 'batch', 'sleep', 'paused', 'running'];
  const BATCH_STATES = ['open', 'sealed', 'submitting', 'submitted', 'ended', 'expired', 'cancelled', 'failed'];

  const S = {
    session: null,
    renderId: 0,
    selected: new Set(),
    selectAllMatching: false,
    skewMs: 0,          // the database's clock minus this browser's: every "until" is compared with the database's time
    dirty: false,       // an edit on the page (edited args) that a refresh must not throw away
    openFolds: new Set(),
    lastRefresh: null,
    chartWindow: '1h-10s', // the window the charts show (CHART_WINDOWS)
    charts: new Map(),     // chart <img> elements kept across refreshes, so a new image replaces the old without a blank
    tz: readTz(),          // the one zone every time is shown in: 'utc' or 'local' (the operator's switch, kept in this browser)
  };

  function readTz() {
    try { return localStorage.getItem('layover.console.tz') === 'utc' ? 'utc' : 'local'; } catch (e) { return 'local'; }
  }
  const expiring = new WeakMap();

  // ------------------------------------------------------------------ DOM helpers (text only)

  function el(tag, attrs) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        const v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = String(v);
        else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
        else if (k === 'value') e.value = v;
        else if (k === 'checked') e.checked = !!v;
        else if (v === true) e.setAttribute(k, '');
        else e.setAttribute(k, String(v));
      }
    }
    for (let i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }

  function add(parent, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(c => add(parent, c)); return; }
    if (typeof child === 'string' || typeof child === 'number' || typeof child === 'boolean') {
      parent.appendChild(document.createTextNode(String(child)));
      return;
    }
    parent.appendChild(child);
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function main() { return document.getElementById('main'); }

  function link(href, text, attrs) {
    return el('a', Object.assign({ href: href }, attrs || {}), text);
  }

  function badge(text, kind) {
    return el('span', { class: 'badge ' + (kind || '') }, text);
  }

  function stateBadge(state, text) {
    return badge(text || state || '–', 'st-' + String(state || 'none').replace(/[^a-z_]/g, ''));
  }

  // Long text on one line; a click (or Enter) unfolds it. Stays unfolded across refreshes.
  function fold(text, key) {
    if (text === null || text === undefined || text === '') return '–';
    const e = el('span', { class: 'fold' + (S.openFolds.has(key) ? ' open' : ''), tabindex: '0', role: 'button',
      'aria-expanded': S.openFolds.has(key) ? 'true' : 'false', title: 'click to unfold', 'data-fold': key }, String(text));
    const toggle = () => {
      const open = e.classList.toggle('open');
      e.setAttribute('aria-expanded', open ? 'true' : 'false');
      if (open) S.openFolds.add(key); else S.openFolds.delete(key);
    };
    e.addEventListener('click', toggle);
    e.addEventListener('keydown', ev => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); toggle(); } });
    return e;
  }

  // A stored stack trace, folded: <details> (closed until clicked), its text in a <pre> as a text node.
  function traceFold(trace, key) {
    if (!trace) return null;
    const d = el('details', { class: 'trace', 'data-trace': key, open: S.openFolds.has(key) },
      el('summary', null, 'Stack trace'), el('pre', { class: 'trace-text' }, String(trace)));
    d.addEventListener('toggle', () => { if (d.open) S.openFolds.add(key); else S.openFolds.delete(key); });
    return d;
  }

  function keyLink(key) {
    if (!key) return '–';
    return link('#/provider-keys/' + encodeURIComponent(key), el('code', null, key), { class: 'key-link' });
  }

  function jobLink(type, id) {
    return link('#/job/' + encodeURIComponent(type) + '/' + encodeURIComponent(id), el('code', null, shortId(id)),
      { class: 'job-link', title: id });
  }

  // A generated job id (a time-ordered UUID: its start is the time, the same for jobs enqueued together) by its
  // last 8 characters; an idempotency key whole. The full id is the link's title and the job page's.
  function shortId(id) {
    return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(String(id)) ? '…' + String(id).slice(-8) : String(id);
  }

  // A worker name (host#pid by default) without its host's domain: worker-7f3c9a2e#48213; the full name as the title.
  function workerText(name) {
    if (!name) return '–';
    const s = String(name);
    const hash = s.lastIndexOf('#');
    const host = hash > 0 ? s.slice(0, hash) : s;
    const dot = host.indexOf('.');
    return el('span', { class: 'worker', title: s }, dot > 0 && !/^\d+\.\d+\.\d+\.\d+$/.test(host) ? host.slice(0, dot) + (hash > 0 ? s.slice(hash) : '') : s);
  }

  // How long ago, for heartbeats: whole seconds, then minutes.
  function ago(ms) {
    if (ms == null) return '–';
    if (ms < 1000) return 'just now';
    if (ms < 120000) return Math.round(ms / 1000) + ' s ago';
    if (ms < 7200000) return Math.round(ms / 60000) + ' min ago';
    return (ms / 3600000).toFixed(1) + ' h ago';
  }

  // Why a job waits, in words (the "why" of the jobs API, read from layover.jobs' columns).
  const WHY_TEXT = {
    new: 'enqueued, waiting for its run time',
    replay: 'replayed from a dead letter',
    retry: 'an attempt failed: runs again after its backoff',
    cooldown: 'its key cools down after a 429: no call before it ends',
    bucket: 'waiting for a permit of its key\'s rate limit',
    breaker: 'its key\'s breaker is not closed',
    rate_limited: 'the provider answered 429: runs again after the wait it asked for',
    quota: 'its key\'s quota is spent until the reset',
    snooze: 'its handler snoozed it',
    concurrency: 'no free slot of its key\'s concurrency limit',
    batch: 'in a provider batch',
    sleep: 'a durable sleep of its handler (ctx.sleep): resumes at its run time',
    paused: 'held by a pause',
    running: 'running on a worker',
  };

  // The whys whose reschedule detail says more than the summary's "held by" (a cooldown's or breaker's says the same).
  const DETAIL_WHYS = new Set(['rate_limited', 'quota', 'snooze', 'bucket', 'concurrency', 'paused', 'batch']);

  // An open breaker's plan, in words: what the recovery sweep replays once it closes, and when the next trial is.
  function outageBanner(o) {
    const list = m => Object.keys(m).sort().map(k => k + ' ' + num(m[k])).join(', ');
    const open = o.openUntil === 'infinity' ? 'forced open until a person closes it'
      : [o.effectiveState === 'open' ? 'open until ' : 'open period ended ', timeCell(o.openUntil)];
    return el('div', { class: 'notice warn outage', role: 'status', 'data-outage': o.providerKey },
      el('strong', null, 'Outage: '), keyLink(o.providerKey), ' — breaker ', open,
      o.reason ? [' (', el('span', { class: 'small' }, o.reason), ')'] : null, '.',
      el('div', null, o.sweepReplaysTotal
        ? ['The recovery sweep will replay ', el('strong', null, num(o.sweepReplaysTotal) + ' parked job' + (o.sweepReplaysTotal === 1 ? '' : 's')),
          ' (' + list(o.sweepReplays) + ') by itself once the breaker closes, in growing batches: replaying them by hand now sends them into the open breaker.']
        : (o.sweepScheduled ? 'Nothing parked for the recovery sweep to replay.'
          : 'No recovery sweep is scheduled (RecoverySweep.plugin()): its parked jobs wait for a person.'),
      o.waitsForAPersonTotal ? [' ', num(o.waitsForAPersonTotal) + ' wait' + (o.waitsForAPersonTotal === 1 ? 's' : '') + ' for a person (' + list(o.waitsForAPerson) + ').'] : null),
      el('div', { class: 'small' }, 'Next trial: ', o.nextTrialAt ? timeCell(o.nextTrialAt) : 'none', ' — ', o.trial,
        o.trials ? ' · trials so far: ' + num(o.trials) : null));
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    return (ms / 60000).toFixed(1) + ' min';
  }

  // A time in the zone the operator chose (S.tz): 'YYYY-MM-DD HH:MM:SS'; today's as 'HH:MM:SS' when short.
  function fmtTime(iso, short) {
    if (!iso) return '–';
    if (iso === 'infinity') return 'until forced closed';
    const d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    const p = zoneParts(d);
    const time = p.h + ':' + p.mi + ':' + p.s;
    if (short) {
      const t = zoneParts(new Date(now()));
      if (t.y === p.y && t.mo === p.mo && t.d === p.d) return time;
    }
    return p.y + '-' + p.mo + '-' + p.d + ' ' + time;
  }

  function zoneParts(d) {
    const pad = n => String(n).padStart(2, '0');
    const utc = S.tz === 'utc';
    return {
      y: String(utc ? d.getUTCFullYear() : d.getFullYear()), mo: pad((utc ? d.getUTCMonth() : d.getMonth()) + 1),
      d: pad(utc ? d.getUTCDate() : d.getDate()), h: pad(utc ? d.getUTCHours() : d.getHours()),
      mi: pad(utc ? d.getUTCMinutes() : d.getMinutes()), s: pad(utc ? d.getUTCSeconds() : d.getSeconds()),
    };
  }

  // The shown zone in words: 'UTC', or the browser's zone with its offset now ('Europe/Paris, UTC+01:00').
  function zoneName() {
    if (S.tz === 'utc') return 'UTC';
    const off = -new Date().getTimezoneOffset();
    const a = Math.abs(off);
    const offset = 'UTC' + (off < 0 ? '-' : '+') + String(Math.floor(a / 60)).padStart(2, '0') + ':' + String(a % 60).padStart(2, '0');
    let name = '';
    try { name = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { name = ''; }
    return name && name !== 'UTC' ? name + ', ' + offset : offset;
  }

  // The zone id the server draws charts in.
  function zoneId() {
    if (S.tz === 'utc') return 'UTC';
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; } catch (e) { return 'UTC'; }
  }

  // A date filter: the ISO instant kept in the address, shown in (and read from) the input in the shown zone.
  function toInput(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    if (isNaN(d.getTime())) return '';
    const p = zoneParts(d);
    return p.y + '-' + p.mo + '-' + p.d + 'T' + p.h + ':' + p.mi + ':' + p.s;
  }

  function fromInput(v) {
    if (!v) return '';
    if (/(Z|[+-]\d\d:\d\d)$/.test(v)) return new Date(v).toISOString();
    const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?/.exec(v);
    if (!m) return v; // the server says what is wrong with it
    const d = S.tz === 'utc' ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0)))
      : new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
    return d.toISOString();
  }

  function now() { return Date.now() + S.skewMs; }

  function serverTime(at) {
    const t = at ? new Date(at).getTime() : NaN;
    if (!isNaN(t)) S.skewMs = t - Date.now();
  }

  function relTime(iso) {
    if (!iso || iso === 'infinity' || iso === '-infinity') return '';
    const ms = new Date(iso).getTime() - now();
    if (isNaN(ms)) return '';
    const a = Math.abs(ms);
    let s;
    if (a < 1000) return 'now';
    if (a < 60000) s = Math.round(a / 1000) + ' s';
    else if (a < 3600000) s = Math.round(a / 60000) + ' min';
    else if (a < 86400000) s = (a / 3600000).toFixed(1) + ' h';
    else s = (a / 86400000).toFixed(1) + ' d';
    return ms > 0 ? 'in ' + s : s + ' ago';
  }

  // A time with its distance from now, which ticks every second.
  function timeCell(iso) {
    const r = relTime(iso);
    return el('span', { class: 'time', title: iso ? fmtTime(iso) + ' ' + zoneName() + ' (' + iso + ')' : '' }, fmtTime(iso, true),
      r ? el('small', { class: 'rel', 'data-rel': iso }, ' (' + r + ')') : null);
  }

  function isPast(iso) {
    if (!iso || iso === 'infinity') return false;
    if (iso === '-infinity') return true;
    const t = new Date(iso).getTime();
    return !isNaN(t) && t <= now();
  }

  // Something true until a moment ("cooling down until 10:02"), that reads as over once the moment passes.
  function until(iso, live, ended) {
    if (isPast(iso)) return el('span', { class: 'until ended' }, ended());
    const span = el('span', { class: 'until', 'data-expires': iso }, live());
    expiring.set(span, ended);
    return span;
  }

  function tick() {
    document.querySelectorAll('[data-rel]').forEach(e => {
      const r = relTime(e.getAttribute('data-rel'));
      const text = r ? ' (' + r + ')' : '';
      if (e.textContent !== text) e.textContent = text;
    });
    document.querySelectorAll('[data-expires]').forEach(e => {
      if (!isPast(e.getAttribute('data-expires'))) return;
      const ended = expiring.get(e);
      e.removeAttribute('data-expires');
      e.classList.add('ended');
      clear(e);
      if (ended) add(e, ended());
    });
  }

  function cooldownText(untilIso, reason) {
    return until(untilIso,
      () => ['cooling down until ', timeCell(untilIso), reason ? el('div', { class: 'muted small' }, reason) : null],
      () => [badge('ended', 'st-closed'), ' cooldown ended ', timeCell(untilIso)]);
  }

  // A breaker as it is now: "open" whose open period has passed is half-open due (its next call is the trial).
  function breakerText(state, effective, openUntil) {
    if (effective === 'half_open_due' || (state === 'open' && isPast(openUntil))) {
      return [stateBadge('half_open_due', 'half-open due'), el('div', { class: 'small muted' }, 'open period ended ', timeCell(openUntil), '; the next call is its trial')];
    }
    if (state !== 'open') return stateBadge(state);
    return until(openUntil,
      () => [stateBadge('open'), el('div', { class: 'small muted' }, openUntil === 'infinity' ? 'until forced closed' : ['until ', timeCell(openUntil)])],
      () => [stateBadge('half_open_due', 'half-open due'), el('div', { class: 'small muted' }, 'open period ended ', timeCell(openUntil), '; the next call is its trial')]);
  }

  // "Database time 11:55:30 (UTC)": the clock every "until" is compared with, in the shown zone, named.
  function dbTime(at) {
    return el('span', { class: 'muted', id: 'updated' }, 'Database time ' + fmtTime(at, true) + ' (' + zoneName() + ')');
  }

  function num(n) {
    return (n === null || n === undefined) ? '–' : Number(n).toLocaleString('en-US');
  }

  // A table in a box that scrolls sideways on a narrow screen; `empty` says what would fill it.
  function table(headers, rows, attrs, empty) {
    const t = el('table', Object.assign({ class: 'grid' }, attrs || {}),
      el('thead', null, el('tr', null, headers.map(h => el('th', h === '' ? { class: 'actions-cell' } : null, h)))),
      el('tbody', null, rows.length ? rows : el('tr', null, el('td', { colspan: headers.length, class: 'empty' }, empty || 'Nothing here.'))));
    return el('div', { class: 'table-wrap' }, t);
  }

  function emptyState(what, how, links) {
    return el('div', { class: 'empty-state' }, el('strong', null, what), el('div', null, how),
      links ? el('div', { class: 'small' }, links) : null);
  }

  function flash(message, kind) {
    const f = document.getElementById('flash');
    clear(f);
    if (!message) return;
    f.appendChild(el('div', { class: 'flash ' + (kind || 'ok') }, message,
      el('button', { class: 'link', type: 'button', 'aria-label': 'Dismiss', onclick: () => clear(f) }, '×')));
  }

  // ------------------------------------------------------------------ API

  function operator() {
    const v = document.getElementById('operator').value.trim();
    return v || null;
  }

  async function api(method, path, body) {
    const headers = { 'Accept': 'application/json' };
    const s = S.session;
    if (s && s.csrfToken) headers[s.tokenHeader || 'X-Layover-Token'] = s.csrfToken;
    const op = operator();
    if (op) headers[(s && s.operatorHeader) || 'X-Layover-Operator'] = op;
    const init = { method: method, headers: headers, credentials: 'same-origin', cache: 'no-store', referrerPolicy: 'same-origin' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch('api' + path, init);
    } catch (e) {
      const err = new Error('The console did not answer (' + e.message + ').');
      err.status = 0;
      throw err;
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (res.ok && data && typeof data.at === 'string') serverTime(data.at);
    if (!res.ok) {
      const err = new Error((data && data.error) || ('HTTP ' + res.status));
      err.status = res.status;
      err.field = data && data.field;
      throw err;
    }
    return data;
  }

  function errorBox(e) {
    return el('div', { class: 'flash error' }, (e.status ? e.status + ': ' : '') + e.message);
  }

  // ------------------------------------------------------------------ modal

  function modal(title, body, confirmText, onConfirm, danger) {
    const back = document.getElementById('modal-backdrop');
    const box = document.getElementById('modal');
    clear(box);
    const err = el('div', { class: 'field-error', id: 'modal-error' });
    const ok = el('button', { type: 'button', class: danger ? 'danger' : 'primary', id: 'modal-confirm' }, confirmText);
    const cancel = el('button', { type: 'button', id: 'modal-cancel' }, 'Cancel');
    const close = () => { back.hidden = true; clear(box); document.removeEventListener('keydown', onKey); };
    const onKey = e => { if (e.key === 'Escape') close(); };
    ok.addEventListener('click', async () => {
      ok.disabled = true;
      cancel.disabled = true;
      clear(err);
      try {
        await onConfirm();
        close();
      } catch (e) {
        err.textContent = (e.status ? e.status + ': ' : '') + e.message;
        ok.disabled = false;
        cancel.disabled = false;
      }
    });
    cancel.addEventListener('click', close);
    document.addEventListener('keydown', onKey);
    add(box, [el('h2', { id: 'modal-title' }, title), body, err, el('div', { class: 'actions' }, cancel, ok)]);
    back.hidden = false;
    ok.focus();
  }

  // ------------------------------------------------------------------ routing

  function route() {
    const h = location.hash.replace(/^#/, '') || '/overview';
    const q = h.indexOf('?');
    return { path: q < 0 ? h : h.slice(0, q), params: new URLSearchParams(q < 0 ? '' : h.slice(q + 1)) };
  }

  function go(path, params) {
    const qs = params ? params.toString() : '';
    location.hash = '#' + path + (qs ? '?' + qs : '');
  }

  // Every page refreshes every few seconds while the tab is visible, unless the operator is busy
  // on it (a dialog, typing in a field, edited args), so nothing they are doing is thrown away.
  function busy() {
    if (!document.getElementById('modal-backdrop').hidden) return true;
    if (S.dirty) return true;
    const a = document.activeElement;
    return !!(a && main().contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName));
  }

  function refresh() {
    if (document.visibilityState !== 'visible' || busy() || S.refreshing) return;
    S.refreshing = true;
    render(true).finally(() => { S.refreshing = false; });
  }

  function liveText() {
    const l = document.getElementById('live');
    if (!l) return;
    const paused = document.visibilityState !== 'visible';
    l.textContent = paused ? 'refresh paused (tab hidden)' : (S.lastRefresh ? 'updated ' + fmtTime(new Date(S.lastRefresh).toISOString(), true) + ' · every ' + (REFRESH_MS / 1000) + ' s' : '');
  }

  async function render(soft) {
    const id = ++S.renderId;
    if (!soft) S.dirty = false;
    const r = route();
    const page = r.path.split('/')[1] || 'overview';
    document.querySelectorAll('#nav a').forEach(a => a.classList.toggle('active', a.getAttribute('data-page') === page));
    const m = /^\/dead-letters\/(\d+)$/.exec(r.path);
    const job = /^\/job\/([^/]+)\/(.+)$/.exec(r.path);
    const key = /^\/provider-keys\/(.+)$/.exec(r.path);
    const batch = /^\/batches\/([^/]+)$/.exec(r.path);
    const group = /^\/groups\/(.+)$/.exec(r.path);
    const scroll = window.scrollY;
    try {
      if (r.path === '/overview' || r.path === '/') await pageOverview(id);
      else if (m) await pageDeadLetter(id, m[1], r.params);
      else if (r.path === '/dead-letters') await pageDeadLetters(id, r.params);
      else if (r.path === '/jobs') await pageJobs(id, r.params);
      else if (r.path === '/history') await pageHistory(id, r.params);
      else if (r.path === '/schedules') await pageSchedules(id);
      else if (job) await pageJob(id, decodeURIComponent(job[1]), decodeURIComponent(job[2]));
      else if (key) await pageProviderKey(id, decodeURIComponent(key[1]));
      else if (r.path === '/batches') await pageBatches(id, r.params);
      else if (batch) await pageBatch(id, decodeURIComponent(batch[1]), r.params);
      else if (r.path === '/groups') await pageGroups(id, r.params);
      else if (group) await pageGroup(id, decodeURIComponent(group[1]));
      else if (r.path === '/breakers') await pageBreakers(id);
      else if (r.path === '/workers') await pageWorkers(id);
      else if (r.path === '/audit') await pageAudit(id, r.params);
      else show(id, el('h1', null, 'Not found'), el('p', null, 'No such page.'));
      if (id === S.renderId) {
        S.lastRefresh = Date.now();
        main().setAttribute('data-rendered', location.hash); // which address the page now shows (tests wait for it)
      }
    } catch (e) {
      if (id !== S.renderId) return;
      if (soft) flash('Refresh failed: ' + e.message, 'error');
      else show(id, el('h1', null, 'Something went wrong'), errorBox(e));
    }
    if (soft && id === S.renderId) window.scrollTo(0, scroll);
    liveText();
  }

  function show(id) {
    if (id !== S.renderId) return false;
    const m = main();
    clear(m);
    for (let i = 1; i < arguments.length; i++) add(m, arguments[i]);
    return true;
  }

  // ------------------------------------------------------------------ overview

  async function pageOverview(id) {
    const o = await api('GET', '/overview');
    if (id !== S.renderId) return;
    const js = o.jobs.byState;
    const jobsCard = el('section', { class: 'card' }, el('h2', null, 'Jobs in the queue'),
      el('dl', { class: 'counts' },
        JOB_STATES.map(s => [el('dt', null, s), el('dd', null, link('#/jobs?state=' + encodeURIComponent(s), num(js[s] || 0)))]),
        el('dt', { class: 'total' }, 'total'), el('dd', { class: 'total' }, num(o.jobs.total)),
        el('dt', null, 'due now'), el('dd', null, num(o.jobs.dueNow))));
    const f = o.finishedLastHour || {};
    const finishedCard = el('section', { class: 'card', id: 'finished' }, el('h2', null, 'Finished in the last hour'),
      el('dl', { class: 'counts' },
        ['completed', 'parked', 'cancelled'].map(x => [el('dt', null, x), el('dd', null, link('#/history?outcome=' + x, num(f[x] || 0)))]),
        el('dt', { class: 'total' }, 'last finished'), el('dd', { class: 'total' }, f.lastFinishedAt ? timeCell(f.lastFinishedAt) : '–')));
    const ds = o.deadLetters.byState;
    const deadCard = el('section', { class: 'card' }, el('h2', null, 'Dead letters'),
      el('dl', { class: 'counts' },
        DL_STATES.map(s => [el('dt', null, s), el('dd', null, link('#/dead-letters?state=' + encodeURIComponent(s), num(ds[s] || 0)))])));
    const failures = Object.keys(o.deadLetters.parkedByFailureType);
    const parkedCard = el('section', { class: 'card' }, el('h2', null, 'Parked by failure type'),
      failures.length === 0 ? el('p', { class: 'muted' }, 'Nothing parked: every job that failed for good would be listed here by why.') :
        el('dl', { class: 'counts' }, failures.sort().map(x => [el('dt', null, x),
          el('dd', null, link('#/dead-letters?state=parked&failureType=' + encodeURIComponent(x), num(o.deadLetters.parkedByFailureType[x])))])));
    const keys = o.providerKeys.map(k => el('tr', { 'data-key': k.providerKey },
      el('td', null, keyLink(k.providerKey)),
      el('td', null, breakerText(k.breakerState, k.breakerEffectiveState, k.breakerOpenUntil)),
      el('td', null, k.cooldownUntil ? cooldownText(k.cooldownUntil, k.cooldownReason) : '–'),
      el('td', null, bucketText(k)),
      el('td', { class: 'num' }, link('#/jobs?providerKey=' + encodeURIComponent(k.providerKey), num(k.jobs))),
      el('td', { class: 'num' }, link('#/dead-letters?state=parked&providerKey=' + encodeURIComponent(k.providerKey), num(k.parked)))));
    show(id,
      el('div', { class: 'page-head' }, el('h1', null, 'Overview'),
        dbTime(o.at)),
      (o.outages || []).map(outageBanner),
      el('div', { class: 'cards' }, jobsCard, finishedCard, deadCard, parkedCard),
      chartsSection(null),
      el('h2', null, 'Provider keys'),
      table(['Provider key', 'Breaker', 'Cooldown', 'Bucket', 'Jobs', 'Parked'], keys, { id: 'provider-keys' },
        emptyState('No provider key has state yet.',
          'A key appears once a worker runs a job type that names one (JobType.builder(...).providerKey(...)), a bucket is configured for it, or a job of it is parked.',
          ['See docs/provider-state.md and docs/admission-and-control.md.'])));
  }

  // ------------------------------------------------------------------ charts (server-drawn SVG images)

  const CHART_WINDOWS = [
    { id: '1h-10s', label: 'Last hour, per 10 s', q: 'resolution=10s&minutes=60' },
    { id: '1h', label: 'Last hour, per minute', q: 'resolution=1m&minutes=60' },
    { id: '24h', label: 'Last 24 hours', q: 'resolution=1m&minutes=1440' },
    { id: '7d', label: 'Last 7 days', q: 'resolution=1h&minutes=10080' },
  ];
  const CHART_KINDS = [['throughput', 'Completed'], ['limits', '429s and reschedules'], ['failures', 'Retries, parks and replays'], ['depth', 'Queue depth']];
  const CHART_REFRESH_MS = 10000; // the engine writes the time series every 10 s

  function chartImage(kind, alt, query) {
    const base = 'api/time-series/' + kind + '.svg?' + query + '&tz=' + encodeURIComponent(zoneId());
    let c = S.charts.get(base);
    if (!c) {
      c = { img: el('img', { class: 'chart-img', alt: alt, width: '640', height: '200', 'data-chart': kind }), at: 0 };
      S.charts.set(base, c);
    }
    if (Date.now() - c.at >= CHART_REFRESH_MS) {
      c.at = Date.now();
      c.img.setAttribute('src', base + '&v=' + c.at); // a new address: the image is read again
    }
    return c.img;
  }

  // The overview's and a provider key's charts: what got through, over time (layover.time_series).
  function chartsSection(providerKey, calls) {
    const w = CHART_WINDOWS.find(x => x.id === S.chartWindow) || CHART_WINDOWS[0];
    const query = w.q + (providerKey ? '&providerKey=' + encodeURIComponent(providerKey) : '');
    const buttons = CHART_WINDOWS.map(x => el('button', { type: 'button', class: 'small-btn' + (x.id === w.id ? ' active' : ''),
      'aria-pressed': x.id === w.id ? 'true' : 'false', 'data-window': x.id,
      onclick: () => { S.chartWindow = x.id; render(true); } }, x.label));
    return el('section', { class: 'card', id: 'charts' },
      el('div', { class: 'page-head' }, el('h2', null, 'Over time'), el('div', { class: 'actions left', id: 'chart-windows' }, buttons)),
      el('div', { class: 'charts' }, CHART_KINDS.concat(calls ? [['calls', 'Provider calls']] : [])
        .map(k => el('figure', { class: 'chart' }, chartImage(k[0], k[1] + (providerKey ? ' of ' + providerKey : ''), query)))),
      el('p', { class: 'muted small' }, 'Counted by the workers and written every 10 s (times in ' + zoneName() + '); the same numbers in SQL: layover.time_series (docs/observability.md). Empty charts: no worker with Layover.Builder.timeSeries on has counted anything in this window.'));
  }

  function bucketText(k) {
    if (k.requestsPerMinute == null && k.tokensPerMinute == null) return el('span', { class: 'muted' }, 'no limit');
    const limits = [];
    if (k.requestsPerMinute != null) {
      limits.push(num(k.requestsPerMinute) + ' req/min' + (k.paceLearnedUntil ? ' (learned from a 429)' : ''));
    }
    if (k.tokensPerMinute != null) limits.push(num(k.tokensPerMinute) + ' tok/min');
    const used = k.bucketInUseMs || 0;
    const burst = k.burstMs || 0;
    const pct = burst > 0 ? Math.min(100, Math.round(used * 100 / burst)) : (used > 0 ? 100 : 0);
    const fill = el('span', { class: 'fill' + (pct >= 100 ? ' full' : '') });
    fill.style.width = pct + '%'; // CSSOM, allowed by the CSP (inline style attributes are not)
    return el('div', { class: 'bucket' },
      el('div', { class: 'meter', title: (used / 1000).toFixed(1) + ' s of the ' + (burst / 1000).toFixed(1) + ' s burst in use' }, fill),
      el('small', null, limits.join(', ') + ' · ' + (used > 0 ? 'full again in ' + (used / 1000).toFixed(1) + ' s' : 'full')));
  }

  // ------------------------------------------------------------------ dead letters list

  const FILTER_KEYS = ['jobType', 'providerKey', 'failureType', 'state', 'parkedFrom', 'parkedUntil', 'text'];

  function apiFilterParams(params) {
    const q = new URLSearchParams();
    for (const k of FILTER_KEYS) {
      for (const v of params.getAll(k)) {
        if (!v) continue;
        if (k === 'parkedFrom' || k === 'parkedUntil') {
          q.append(k, fromInput(v)); // a time without a zone is in the shown zone
        } else {
          q.append(k, v);
        }
      }
    }
    return q;
  }

  function apiFilterJson(params) {
    const f = {};
    const q = apiFilterParams(params);
    const plural = { jobType: 'jobTypes', providerKey: 'providerKeys', failureType: 'failureTypes', state: 'states' };
    for (const k of FILTER_KEYS) {
      const vs = q.getAll(k);
      if (!vs.length) continue;
      if (plural[k]) f[plural[k]] = vs; else f[k] = vs[0];
    }
    return f;
  }

  async function pageDeadLetters(id, params) {
    const q = apiFilterParams(params);
    const listQ = new URLSearchParams(q);
    listQ.set('limit', params.get('limit') || '50');
    if (params.get('cursor')) listQ.set('cursor', params.get('cursor'));
    const filterKey = q.toString();
    if (S.filterKey !== filterKey) {
      S.filterKey = filterKey;
      S.selected = new Set();
      S.selectAllMatching = false;
    }
    const [page, facets] = await Promise.all([api('GET', '/dead-letters?' + listQ), api('GET', '/dead-letters/facets?' + q)]);
    if (id !== S.renderId) return;

    const datalist = (idName, facet) => el('datalist', { id: idName }, facet.filter(f => f.value).map(f => el('option', { value: f.value })));
    const input = (name, label, attrs) => el('label', null, label,
      el('input', Object.assign({ name: name, id: 'f-' + name, value: params.get(name) || '' }, attrs || {})));
    const when = (name, label) => el('label', null, label + ' (' + (S.tz === 'utc' ? 'UTC' : 'local') + ')',
      el('input', { name: name, id: 'f-' + name, type: 'datetime-local', step: '1', value: toInput(params.get(name)) }));
    const stateSel = el('select', { name: 'state', id: 'f-state' }, el('option', { value: '' }, 'any'),
      DL_STATES.map(s => el('option', { value: s, selected: params.get('state') === s }, s)));
    const form = el('form', { class: 'filters', id: 'filters' },
      input('jobType', 'Job type', { list: 'dl-job-types', autocomplete: 'off' }),
      input('providerKey', 'Provider key', { list: 'dl-provider-keys', autocomplete: 'off' }),
      input('failureType', 'Failure type', { list: 'dl-failure-types', autocomplete: 'off' }),
      el('label', null, 'State', stateSel),
      when('parkedFrom', 'Parked from'),
      when('parkedUntil', 'Parked until'),
      input('text', 'Text in error', { type: 'search', maxlength: '200' }),
      el('div', { class: 'filter-actions' },
        el('button', { type: 'submit', class: 'primary', id: 'apply-filter' }, 'Apply'),
        el('button', { type: 'button', onclick: () => go('/dead-letters') }, 'Clear')),
      datalist('dl-job-types', facets.byJobType), datalist('dl-provider-keys', facets.byProviderKey),
      datalist('dl-failure-types', facets.byFailureType));
    form.addEventListener('submit', e => {
      e.preventDefault();
      const p = new URLSearchParams();
      for (const k of FILTER_KEYS) {
        const v = form.elements[k].value.trim();
        if (v) p.set(k, k === 'parkedFrom' || k === 'parkedUntil' ? fromInput(v) : v);
      }
      go('/dead-letters', p);
    });

    const chips = el('div', { class: 'facets' },
      el('strong', { id: 'matching-count' }, num(facets.total) + ' matching'),
      facets.byState.map(f => el('span', { class: 'chip' }, stateBadge(f.value), ' ' + num(f.count))),
      facets.byFailureType.slice(0, 8).map(f => el('span', { class: 'chip' }, f.value + ' ' + num(f.count))));

    const rows = page.items.map(d => {
      const cb = el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'select dead letter ' + d.id, checked: S.selected.has(d.id) || S.selectAllMatching, disabled: S.selectAllMatching });
      cb.addEventListener('change', () => { if (cb.checked) S.selected.add(d.id); else S.selected.delete(d.id); updateBulk(); });
      return el('tr', { 'data-id': d.id },
        el('td', null, cb),
        el('td', null, link('#/dead-letters/' + d.id, '#' + d.id, { class: 'dl-link' })),
        el('td', null, d.jobType, d.jobTypeRegistered === false ? el('div', { class: 'muted small' }, 'not registered') : null),
        el('td', null, keyLink(d.providerKey)),
        el('td', null, d.failureType),
        el('td', null, stateBadge(d.state)),
        el('td', { class: 'error-cell' }, fold((d.errorClass ? d.errorClass + ': ' : '') + (d.errorMessage || ''), 'dl-error-' + d.id)),
        el('td', { class: 'num' }, d.attempts),
        el('td', null, timeCell(d.parkedAt)),
        el('td', { class: 'num' }, d.replayCount));
    });
    const all = el('input', { type: 'checkbox', 'aria-label': 'select all on this page', id: 'pick-page', disabled: S.selectAllMatching });
    all.addEventListener('change', () => {
      document.querySelectorAll('input.pick').forEach(cb => {
        cb.checked = all.checked;
        const tr = cb.closest('tr');
        const did = Number(tr.getAttribute('data-id'));
        if (all.checked) S.selected.add(did); else S.selected.delete(did);
      });
      updateBulk();
    });

    const bulk = el('div', { class: 'bulk', id: 'bulk' });
    function updateBulk() {
      clear(bulk);
      const ro = S.session.readOnly;
      if (S.selectAllMatching) {
        add(bulk, [el('span', { id: 'selection-text' }, 'All ' + num(facets.total) + ' dead letters matching this filter are selected.'),
          el('button', { type: 'button', id: 'bulk-replay', disabled: ro, onclick: () => confirmBulk('replay', q, null) }, 'Replay all…'),
          el('button', { type: 'button', id: 'bulk-discard', class: 'danger', disabled: ro, onclick: () => confirmBulk('discard', q, null) }, 'Discard all…'),
          el('button', { type: 'button', id: 'bulk-move-back', disabled: ro, onclick: () => confirmBulk('move_back', q, null) }, 'Move back all from review…'),
          el('button', { type: 'button', class: 'link', onclick: () => { S.selectAllMatching = false; render(); } }, 'Clear selection')]);
        return;
      }
      const n = S.selected.size;
      add(bulk, [el('span', { id: 'selection-text' }, n + ' selected'),
        el('button', { type: 'button', id: 'bulk-replay', disabled: ro || n === 0, onclick: () => confirmBulk('replay', q, [...S.selected]) }, 'Replay selected…'),
        el('button', { type: 'button', id: 'bulk-discard', class: 'danger', disabled: ro || n === 0, onclick: () => confirmBulk('discard', q, [...S.selected]) }, 'Discard selected…'),
        facets.total > 0 ? el('button', { type: 'button', class: 'link', id: 'select-all-matching', onclick: () => { S.selectAllMatching = true; S.selected = new Set(); render(); } },
          'Select all ' + num(facets.total) + ' matching this filter') : null]);
    }
    updateBulk();

    const pager = el('div', { class: 'pager' },
      params.get('cursor') ? el('button', { type: 'button', onclick: () => { const p = new URLSearchParams(params); p.delete('cursor'); go('/dead-letters', p); } }, '← First page') : null,
      page.nextCursor ? el('button', { type: 'button', id: 'next-page', onclick: () => { const p = new URLSearchParams(params); p.set('cursor', page.nextCursor); go('/dead-letters', p); } }, 'Next page →') : null);

    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Dead letters')), (page.outages || []).map(outageBanner), form, chips, bulk,
      table([all, 'Id', 'Job type', 'Provider key', 'Failure type', 'State', 'Error', 'Attempts', 'Parked', 'Replays'], rows, { id: 'dead-letters' },
        q.toString() ? emptyState('No dead letter matches this filter.', 'Clear or widen the filter above.')
          : emptyState('No dead letters.', 'A job lands here when it fails for good: attempts spent (JobPolicy.withMaxAttempts), a credential refused, a request the provider rejects, or arguments that cannot be read. Nothing has failed that way yet.',
            ['See docs/dead-letters.md.'])),
      pager);
  }

  const ACTION_WORDS = {
    replay: ['Replay', 'replay', 'replayed'],
    discard: ['Discard', 'discard', 'discarded'],
    move_back: ['Move back', 'move back to parked', 'moved back'],
  };

  async function confirmBulk(action, filterQuery, ids) {
    const w = ACTION_WORDS[action];
    let count;
    let more = false;
    let detail = null;
    try {
      if (ids) {
        count = ids.length;
      } else {
        const q = new URLSearchParams(filterQuery);
        q.set('action', action);
        const p = await api('GET', '/dead-letters/preview?' + q);
        count = p.count;
        more = p.countMore;
        if (p.matchingMore || p.countMore) {
          if (p.matching !== p.count || p.matchingMore !== p.countMore) {
            detail = num(p.matching) + (p.matchingMore ? '+' : '') + ' match the filter; those not in a state (or of a job type) this action applies to will be left as they are.';
          }
        } else if (p.matching !== p.count) {
          detail = num(p.matching) + ' match the filter; ' + num(p.matching - p.count) + ' of them are not in a state (or of a job type) this action applies to and will be left as they are.';
        }
      }
    } catch (e) {
      flash(e.message, 'error');
      return;
    }
    const note = el('input', { id: 'bulk-note', maxlength: '2000', placeholder: 'why (goes to the audit log)' });
    // a count above the preview's bound reads "10,000+": the action itself changes every match
    const shown = num(count) + (more ? '+' : '');
    const what = ids ? num(count) + ' selected dead letter' + (count === 1 ? '' : 's') : shown + ' dead letter' + (count === 1 && !more ? '' : 's') + ' matching this filter';
    modal(w[0] + ' ' + shown + ' dead letter' + (count === 1 && !more ? '' : 's') + '?',
      [el('p', { id: 'confirm-text' }, w[0] + ' ' + what + '?'), detail ? el('p', { class: 'muted' }, detail) : null,
        el('label', { class: 'block' }, 'Note', note)],
      w[0] + ' ' + shown, async () => {
        const body = ids ? { ids: ids } : { filter: apiFilterJson(new URLSearchParams(filterQuery)) };
        if (note.value.trim()) body.note = note.value.trim();
        const res = await api('POST', '/dead-letters/' + (action === 'move_back' ? 'move-back' : action), body);
        S.selected = new Set();
        S.selectAllMatching = false;
        flash(cap(w[2]) + ' ' + num(res.changed) + skippedText(res), res.skippedTotal ? 'warn' : 'ok');
        render();
      }, action === 'discard');
  }

  function skippedText(res) {
    if (!res.skippedTotal) return '.';
    const parts = Object.keys(res.skipped).map(k => num(res.skipped[k]) + ' ' + k.replace(/_/g, ' '));
    return '; skipped ' + num(res.skippedTotal) + ' (' + parts.join(', ') + ').';
  }

  function cap(s) { return s.charAt(0).toUpperCase() + s.slice(1); }

  // ------------------------------------------------------------------ one dead letter

  async function pageDeadLetter(id, dlId, params) {
    const reveal = params.get('reveal') === 'true';
    const d = await api('GET', '/dead-letters/' + dlId + (reveal ? '?reveal=true' : ''));
    if (id !== S.renderId) return;
    const ro = S.session.readOnly;

    const facts = el('dl', { class: 'facts' },
      fact('Job type', d.jobType, d.jobTypeRegistered === false ? ' (not registered in the application)' : null),
      fact('Job id', jobLink(d.jobType, d.jobId)),
      fact('Provider key', keyLink(d.providerKey)),
      fact('Failure type', d.failureType),
      fact('Attempts', num(d.attempts)),
      fact('Reschedules', num(d.reschedules)),
      fact('Parked', timeCell(d.parkedAt)),
      fact('Times parked', num(d.parkCount)),
      fact('First enqueued', timeCell(d.firstEnqueuedAt)),
      fact('State changed', timeCell(d.stateChangedAt)),
      fact('Replays', num(d.replayCount) + (d.autoReplayCount ? ' (' + d.autoReplayCount + ' automatic)' : '')),
      fact('Priority', d.priority == null ? '–' : String(d.priority)));

    const errorSec = el('section', { class: 'card' }, el('h2', null, 'Error'),
      d.errorClass ? el('div', { class: 'muted', id: 'error-class' }, d.errorClass) : null,
      el('pre', { class: 'error-text', id: 'error-message' }, d.errorMessage || '(no message)'));

    const maskNote = d.masked ? el('div', { class: 'notice', id: 'masked-note' },
      'Values that look sensitive (tokens, secrets, passwords, API keys, authorization) are masked as [masked]. ',
      d.actions.reveal ? el('button', { type: 'button', id: 'reveal', onclick: () => go('/dead-letters/' + d.id, new URLSearchParams('reveal=true')) }, 'Reveal (recorded in the audit log)') : null) :
      (d.revealed ? el('div', { class: 'notice warn', id: 'revealed-note' }, 'Sensitive values are shown. This reveal was recorded in the audit log. ',
        link('#/dead-letters/' + d.id, 'Mask them again')) : null);

    const argsArea = el('textarea', { id: 'args', rows: Math.min(24, Math.max(4, (d.argsPretty || '').split('\n').length + 1)), spellcheck: 'false', readonly: !d.actions.editArgs, 'aria-describedby': 'args-error' });
    argsArea.value = d.argsPretty || '';
    const argsError = el('div', { class: 'field-error', id: 'args-error', role: 'alert' });
    const note = el('input', { id: 'note', maxlength: '2000', placeholder: 'why (goes to the audit log)' });
    const replayBtn = el('button', { type: 'button', class: 'primary', id: 'replay', disabled: !d.actions.replay }, 'Replay');
    // Steps (docs/steps.md): a replay resumes from the job's stored steps unless from scratch
    const steps = d.steps || [];
    const scratch = el('input', { type: 'checkbox', id: 'from-scratch' });
    const scratchLabel = steps.length ? el('label', { class: 'block', for: 'from-scratch' }, scratch,
      ' From scratch: drop its ' + steps.length + ' stored step' + (steps.length === 1 ? '' : 's') + ' (every step runs again)') : null;
    const edited = () => d.actions.editArgs && argsArea.value.trim() !== (d.argsPretty || '').trim();
    argsArea.addEventListener('input', () => { S.dirty = edited(); replayBtn.textContent = edited() ? 'Replay with edited args' : 'Replay'; clear(argsError); argsArea.classList.remove('invalid'); });
    replayBtn.addEventListener('click', async () => {
      replayBtn.disabled = true;
      clear(argsError);
      argsArea.classList.remove('invalid');
      const body = {};
      if (edited()) body.args = argsArea.value;
      if (note.value.trim()) body.note = note.value.trim();
      if (scratch.checked) body.fromScratch = true;
      try {
        const res = await api('POST', '/dead-letters/' + d.id + '/replay', body);
        flash('Replayed as job ' + res.replayed.jobId + (res.replayed.argsEdited ? ' with edited args' : '')
          + (scratch.checked ? ', from scratch' : '') + '.', 'ok');
        render();
      } catch (e) {
        if (e.field === 'args') {
          argsError.textContent = e.message;
          argsArea.classList.add('invalid');
        } else {
          flash((e.status ? e.status + ': ' : '') + e.message, 'error');
        }
        replayBtn.disabled = false;
      }
    });
    const discardBtn = el('button', { type: 'button', class: 'danger', id: 'discard', disabled: !d.actions.discard, onclick: () =>
      modal('Discard dead letter #' + d.id + '?', el('p', null, 'It will not run again; retention deletes it later.'), 'Discard', async () => {
        await api('POST', '/dead-letters/' + d.id + '/discard', note.value.trim() ? { note: note.value.trim() } : {});
        flash('Discarded dead letter #' + d.id + '.', 'ok');
        render();
      }, true) }, 'Discard…');
    const moveBackBtn = d.state === 'review' ? el('button', { type: 'button', id: 'move-back', disabled: !d.actions.moveBack, onclick: async () => {
      try {
        await api('POST', '/dead-letters/' + d.id + '/move-back', note.value.trim() ? { note: note.value.trim() } : {});
        flash('Moved dead letter #' + d.id + ' back to parked.', 'ok');
        render();
      } catch (e) { flash((e.status ? e.status + ': ' : '') + e.message, 'error'); }
    } }, 'Move back to parked') : null;

    const validation = d.argsValidation.available ? null : el('div', { class: 'notice', id: 'no-validation' }, d.argsValidation.message);
    const argsSec = el('section', { class: 'card' }, el('h2', null, 'Args'),
      d.argsNotJson != null ? el('div', { class: 'notice warn' }, 'The stored args are not JSON: ', el('code', null, d.argsNotJson)) : null,
      validation,
      el('label', { for: 'args', class: 'sr-only' }, 'Args (JSON)'),
      argsArea, argsError,
      el('label', { class: 'block' }, 'Note', note),
      ro ? null : scratchLabel,
      ro ? el('p', { class: 'muted' }, 'This console is read-only.') : el('div', { class: 'actions left' }, replayBtn, discardBtn, moveBackBtn));

    let liveText;
    if (d.liveJob) {
      liveText = el('p', { id: 'live-job' }, 'Job ', el('code', null, d.jobId), ' is ', stateBadge(d.liveJob.state), ', runs at ', timeCell(d.liveJob.runAt),
        ' · attempts ' + d.liveJob.attempts + ', reschedules ' + d.liveJob.reschedules);
    } else if (d.state === 'replayed') {
      liveText = el('p', { id: 'live-job' }, stateBadge('done'), ' The replayed job ran and finished: it is no longer queued.');
    } else {
      liveText = el('p', { id: 'live-job', class: 'muted' }, 'No live job with this id.');
    }

    const attempts = d.errors.map((e, n) => el('tr', null, el('td', { class: 'num' }, e.attempt == null ? '–' : e.attempt), el('td', null, timeCell(e.at)),
      el('td', null, e.kind || '–'), el('td', null, e.errorClass || '–'),
      el('td', null, el('div', { class: 'error-text' }, e.message || ''), traceFold(e.stackTrace, 'dl-trace-' + d.id + '-' + n),
        e.extra && Object.keys(e.extra).length ? el('pre', { class: 'small muted' }, JSON.stringify(e.extra, null, 2)) : null)));
    const replays = d.replays.map(r => el('tr', null, el('td', null, timeCell(r.at)), el('td', null, r.by || '–'), el('td', null, r.kind),
      el('td', null, el('code', null, r.jobId || '–')), el('td', null, r.argsEdited ? 'yes' : 'no')));
    const history = d.history.map(auditRow);

    show(id,
      el('p', null, link('#/dead-letters', '← Dead letters')),
      el('div', { class: 'page-head' }, el('h1', null, 'Dead letter #' + d.id), stateBadge(d.state)),
      maskNote, facts, errorSec, argsSec,
      el('section', { class: 'card' }, el('h2', null, 'Replayed job'), liveText),
      el('section', { class: 'card' }, el('h2', null, 'Attempts'), table(['#', 'At', 'Kind', 'Error class', 'Message'], attempts, { id: 'attempts' }, 'No attempt errors were stored with it.')),
      stepsCard(steps, d.stoppedAt, 'dl-stopped-' + d.id, 'No finished steps are stored: a replay runs the job from its start.'),
      el('section', { class: 'card' }, el('h2', null, 'Provider trail'), trailTable(d.providerTrail)),
      el('section', { class: 'card' }, el('h2', null, 'Replay history'), table(['At', 'By', 'Kind', 'Job id', 'Args edited'], replays, { id: 'replays' }, 'Not replayed yet: Replay above makes a fresh job from it.')),
      el('section', { class: 'card' }, el('h2', null, 'Audit'), table(['Id', 'At', 'Who', 'Action', 'What', 'Count', 'Note', 'Details'], history, null, 'No operator has acted on it yet.')));

  }

  // The fallback trail: for each attempt, which endpoint answered or why the chain moved on. Text only.
  function waitText(ms) {
    if (ms == null) return '';
    return ms >= 1000 ? ' (retry in ' + (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + ' s)' : ' (retry in ' + ms + ' ms)';
  }

  function trailTable(trail) {
    const rows = (trail || []).map(s => el('tr', null,
      el('td', { class: 'num' }, s.attempt == null ? '–' : s.attempt),
      el('td', null, timeCell(s.at)),
      el('td', null, el('code', null, s.key || '–')),
      el('td', null, badge(s.result || '–', s.result === 'answered' ? 'ok' : 'trail')),
      el('td', null, el('div', { class: 'error-text small' }, (s.detail || '') + waitText(s.waitMs)))));
    return rows.length ? table(['Attempt', 'At', 'Endpoint', 'Result', 'Detail'], rows, { id: 'trail' })
      : el('p', { class: 'muted', id: 'trail' }, 'No fallback chain was used by this job.');
  }

  function trailLines(trail, key) {
    if (!trail || !trail.length) return '–';
    const line = t => (t.attempt == null ? '' : '#' + t.attempt + ' ') + (t.key || '–') + ' ' + (t.result || '') + waitText(t.waitMs);
    const last = trail[trail.length - 1];
    return el('span', { class: 'trail small' }, trail.length === 1 ? line(last)
      : fold(line(last) + '  ·  earlier: ' + trail.slice(0, -1).reverse().map(line).join('  ·  '), key));
  }

  function fact(label, value, extra) {
    return el('div', { class: 'fact' }, el('dt', null, label), el('dd', null, value, extra || null));
  }

  // ------------------------------------------------------------------ jobs

  async function pageJobs(id, params) {
    const q = new URLSearchParams();
    for (const k of ['jobType', 'providerKey', 'state', 'why', 'cursor']) {
      const v = params.get(k);
      if (v) q.set(k, v);
    }
    q.set('limit', '50');
    const page = await api('GET', '/jobs?' + q);
    const pz = await api('GET', '/pauses');
    if (id !== S.renderId) return;
    const ro = S.session.readOnly;
    const input = (name, label) => el('label', null, label, el('input', { name: name, value: params.get(name) || '', autocomplete: 'off' }));
    const sel = (name, label, values, anyText) => el('label', null, label, el('select', { name: name }, el('option', { value: '' }, anyText),
      values.map(v => el('option', { value: v, selected: params.get(name) === v }, v))));
    const form = el('form', { class: 'filters' }, input('jobType', 'Job type'), input('providerKey', 'Provider key'),
      sel('state', 'State', JOB_STATES, 'waiting (not running)'), sel('why', 'Why', WHYS, 'any'),
      el('div', { class: 'filter-actions' }, el('button', { type: 'submit', class: 'primary' }, 'Apply'),
        el('button', { type: 'button', onclick: () => go('/jobs') }, 'Clear')));
    form.addEventListener('submit', e => {
      e.preventDefault();
      const p = new URLSearchParams();
      for (const k of ['jobType', 'providerKey', 'state', 'why']) {
        const v = form.elements[k].value.trim();
        if (v) p.set(k, v);
      }
      go('/jobs', p);
    });
    // one or two lines a row: long texts folded, the trail as its newest line; the key's state is in the summary above
    const rows = page.items.map(j => el('tr', { 'data-job': j.id },
      el('td', null, jobLink(j.jobType, j.id), el('div', { class: 'small muted' }, j.jobType),
        j.deadLetterId ? el('div', { class: 'small' }, link('#/dead-letters/' + j.deadLetterId, 'replay of #' + j.deadLetterId)) : null),
      el('td', null, stateBadge(j.state), ' ', badge(j.why, 'why')),
      el('td', { class: 'nowrap' }, timeCell(j.runAt), j.due && j.state !== 'running' ? el('div', { class: 'small muted' }, 'due, waiting for a worker') : null),
      el('td', { class: 'num' }, num(j.attempts) + ' / ' + num(j.reschedules)),
      el('td', null, j.providerKey ? keyLink(j.providerKey) : '–'),
      el('td', { class: 'error-cell' }, j.lastErrorMessage ? fold((j.lastErrorClass ? j.lastErrorClass + ': ' : '') + j.lastErrorMessage, 'err-' + j.jobType + '/' + j.id)
        : (j.rescheduleDetail && j.why !== 'cooldown' && j.why !== 'breaker' ? fold(j.rescheduleDetail, 'why-' + j.jobType + '/' + j.id) : '–')),
      el('td', { class: 'trail-cell' }, trailLines(j.providerTrail, 'trail-' + j.jobType + '/' + j.id)),
      el('td', { class: 'actions-cell' }, ro ? '–' : el('button', { type: 'button', class: 'danger small-btn', 'data-cancel': j.id,
        onclick: () => cancelJob(j) }, j.state === 'running' ? 'Ask to stop…' : 'Cancel…'))));
    const filtered = ['jobType', 'providerKey', 'state', 'why'].some(k => params.get(k));
    const pager = el('div', { class: 'pager' },
      params.get('cursor') ? el('button', { type: 'button', onclick: () => { const p = new URLSearchParams(params); p.delete('cursor'); go('/jobs', p); } }, '← First page') : null,
      page.nextCursor ? el('button', { type: 'button', onclick: () => { const p = new URLSearchParams(params); p.set('cursor', page.nextCursor); go('/jobs', p); } }, 'Next page →') : null);
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Jobs waiting'),
      el('span', { class: 'muted' }, num(page.total) + (filtered ? ' matching the filter' : ' in the queue') + ', grouped by why they wait; the list below, oldest run time first.')),
      jobsSummary(page, params),
      pausesPanel(pz, ro),
      form, table(['Job', 'State · why', 'Run at', 'Att. / resch.', 'Provider key', 'Last error or detail', 'Trail (newest)', ''], rows, { id: 'jobs' },
        filtered ? emptyState('No job matches this filter.', 'Clear or widen the filter above.')
          : emptyState('No job is waiting.', 'Jobs show here while they wait: enqueued to run later (EnqueueOptions.after), rescheduled by a cooldown, bucket or breaker, retrying after a failed attempt, or held by a pause. Finished jobs are on the History page.',
            [link('#/history', 'History'), ' · docs/admission-and-control.md'])), pager);
  }

  // The jobs page's lead: the filter's jobs by why they wait and key, how many, when they run, until when the key
  // holds them. A grid of groups (not a table): on a narrow screen each group stacks, nothing scrolls out of view.
  function jobsSummary(page, params) {
    const groups = (page.summary || []).map(g => {
      const p = new URLSearchParams(params);
      p.delete('cursor');
      p.set('why', g.why);
      if (g.providerKey) p.set('providerKey', g.providerKey);
      const holds = [];
      if (g.cooldownUntil) holds.push(['cools down until ', timeCell(g.cooldownUntil)]);
      if (g.breakerState) {
        holds.push(['breaker ' + g.breakerState.replace(/_/g, ' '), g.breakerOpenUntil === 'infinity' ? ' until forced closed'
          : (g.breakerOpenUntil ? [' until ', timeCell(g.breakerOpenUntil)] : '')]);
      }
      const first = g.firstRunAt;
      const last = g.lastRunAt;
      return el('div', { class: 'why-group', 'data-why': g.why, 'data-key': g.providerKey || '' },
        el('div', { class: 'wg-count' }, link('#/jobs?' + p, num(g.n)), g.due ? el('div', { class: 'small muted' }, num(g.due) + ' due') : null),
        el('div', { class: 'wg-why' }, badge(g.why, 'why'), el('div', { class: 'small muted' }, WHY_TEXT[g.why] || '')),
        el('div', { class: 'wg-key' }, g.providerKey ? keyLink(g.providerKey) : el('span', { class: 'muted' }, 'no key')),
        el('div', { class: 'wg-when' }, el('span', { class: 'small muted' }, g.why === 'running' ? 'running ' : 'run at '),
          g.why === 'running' ? 'now' : (first === last ? timeCell(first) : [timeCell(first), el('div', { class: 'small muted' }, 'last ', timeCell(last))])),
        el('div', { class: 'wg-held' }, holds.length ? holds.map(h => el('div', null, h)) : null,
          g.someDetail && DETAIL_WHYS.has(g.why) ? el('div', { class: 'small' }, fold(g.someDetail, 'sum-' + g.why + '/' + g.providerKey)) : null));
    });
    return el('section', { class: 'card', id: 'jobs-summary' }, el('h2', null, 'Why they wait'),
      groups.length ? el('div', { class: 'why-groups', id: 'jobs-summary-groups' }, groups) : el('p', { class: 'muted' }, 'No job is waiting.'),
      page.summaryMore ? el('p', { class: 'small muted' }, 'The 30 largest groups; narrow the filter for the rest.') : null);
  }

  function cancelJob(j) {
    const reason = el('input', { id: 'cancel-reason', maxlength: '500', placeholder: 'why (recorded with the cancel)' });
    const running = j.state === 'running';
    modal((running ? 'Ask job ' : 'Cancel job ') + j.id + '?', [el('p', null, running
      ? 'The job is running: its handler is asked to stop (JobContext.isCancelled()). If it does not finish anyway, it is cancelled.'
      : 'The job leaves the queue now. It is kept as a dead letter (failure type cancelled): replay it to undo.'),
    el('label', { class: 'block' }, 'Reason', reason)],
    running ? 'Ask to stop' : 'Cancel job', async () => {
      const body = {};
      if (reason.value.trim()) body.reason = reason.value.trim();
      const res = await api('POST', '/jobs/' + encodeURIComponent(j.jobType) + '/' + encodeURIComponent(j.id) + '/cancel', body);
      flash(res.status === 'cancelled' ? 'Job ' + j.id + ' cancelled (dead letter #' + res.deadLetterId + ').'
        : 'Job ' + j.id + ' is running: it was asked to stop.', 'ok');
      render();
    }, true);
  }

  function pausesPanel(pz, ro) {
    const rows = pz.active.map(p => el('tr', { 'data-pause': p.scope + ':' + p.target },
      el('td', null, p.scope === 'job_type' ? 'job type' : 'key'),
      el('td', null, el('code', null, p.target)),
      el('td', null, timeCell(p.pausedAt), el('div', { class: 'small muted' }, p.pausedBy || '')),
      el('td', null, el('div', { class: 'error-text small' }, p.reason || '–')),
      el('td', { class: 'num' }, num(p.heldJobs)),
      el('td', { class: 'actions-cell' }, ro ? '–' : el('button', { type: 'button', class: 'small-btn', onclick: () => resumePause(p) }, 'Resume…'))));
    const scope = el('select', { id: 'pause-scope' }, el('option', { value: 'job-type' }, 'job type'), el('option', { value: 'key' }, 'provider or limit key'));
    const target = el('input', { id: 'pause-target', maxlength: '200', placeholder: 'e.g. translate, or openai:gpt-4o' });
    const f = ro ? null : el('form', { class: 'inline-form', id: 'pause-form' }, el('label', null, 'Pause a ', scope), ' ', target,
      el('button', { type: 'submit' }, 'Pause…'));
    if (f) f.addEventListener('submit', e => { e.preventDefault(); if (target.value.trim()) pause(scope.value, target.value.trim()); });
    return el('section', { class: 'card', id: 'pauses' }, el('h2', null, 'Paused'),
      rows.length ? table(['What', 'Name', 'Since', 'Reason', 'Held when paused', ''], rows, { id: 'pauses-table' })
        : el('p', { class: 'muted' }, 'Nothing is paused.'), f);
  }

  function pause(scope, target) {
    const reason = el('input', { id: 'pause-reason', maxlength: '500', placeholder: 'why (recorded with the pause)' });
    modal('Pause ' + (scope === 'job-type' ? 'job type ' : 'key ') + target + '?', [el('p', null,
      'Nothing of it starts until it is resumed. Waiting jobs stay in the queue (run time kept); running jobs finish; nothing is parked or charged an attempt.'),
    el('label', { class: 'block' }, 'Reason', reason)],
    'Pause', async () => {
      const body = {};
      if (reason.value.trim()) body.reason = reason.value.trim();
      const res = await api('POST', '/pauses/' + scope + '/' + encodeURIComponent(target) + '/pause', body);
      flash(res.changed ? 'Paused ' + target + ' (' + res.heldJobs + ' waiting jobs held).' : target + ' was already paused.', 'ok');
      render();
    }, true);
  }

  function resumePause(p) {
    const scope = p.scope === 'job_type' ? 'job-type' : 'key';
    modal('Resume ' + p.target + '?', [el('p', null, 'Its held jobs get their run time back (those no other pause holds).')],
    'Resume', async () => {
      const res = await api('POST', '/pauses/' + scope + '/' + encodeURIComponent(p.target) + '/resume', {});
      flash('Resumed ' + p.target + ' (' + (res.releasedJobs || 0) + ' jobs released).', 'ok');
      render();
    });
  }

  // ------------------------------------------------------------------ schedules (recurring jobs, layover.schedules_view)

  async function pageSchedules(id) {
    const res = await api('GET', '/schedules');
    if (id !== S.renderId) return;
    const ro = S.session.readOnly;
    const rows = res.items.map(s => el('tr', { 'data-schedule': s.tenant + '/' + s.name },
      el('td', null, el('code', null, s.name), s.tenant ? el('div', { class: 'small muted' }, 'tenant ' + s.tenant) : null,
        el('div', { class: 'small muted' }, s.source === 'code' ? 'from code' : 'at run time')),
      el('td', null, s.jobType),
      el('td', null, el('code', null, s.timing), el('div', { class: 'small muted' }, 'missed: ' + s.missed + ' · overlap: ' + s.overlap)),
      el('td', { class: 'nowrap' }, s.removed ? badge('removed from code', 'st-discarded') : s.paused ? badge('paused', 'st-open')
        : [timeCell(s.nextAt), s.heldByOverlap ? el('div', { class: 'small muted' }, 'held: the previous occurrence is still queued') : null]),
      el('td', { class: 'nowrap' }, s.lastAt ? [timeCell(s.lastAt), el('div', { class: 'small' }, jobLink(s.jobType, s.lastJobId))] : '–'),
      el('td', null, s.lastOutcome || '–', s.lastJobState ? el('div', { class: 'small muted' }, 'job ' + s.lastJobState) : null),
      el('td', { class: 'actions-cell' }, ro || s.removed ? '–' : [
        el('button', { type: 'button', class: 'small-btn', 'data-action': 'trigger', onclick: () => scheduleAction(s, 'trigger') }, 'Run now…'), ' ',
        el('button', { type: 'button', class: 'small-btn', 'data-action': s.paused ? 'resume' : 'pause',
          onclick: () => scheduleAction(s, s.paused ? 'resume' : 'pause') }, s.paused ? 'Resume…' : 'Pause…')])));
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Schedules'),
      el('span', { class: 'muted' }, num(res.items.length) + ' recurring jobs; each occurrence is an ordinary job (docs/recurring.md).')),
      table(['Schedule', 'Job type', 'Timing', 'Next', 'Last occurrence', 'Last outcome', ''], rows, { id: 'schedules' },
        emptyState('No schedule.', 'Register one with Layover.Builder#schedule, or create one with Layover#schedules().',
          ['See docs/recurring.md.'])));
  }

  function scheduleAction(s, action) {
    const reason = el('input', { id: 'schedule-reason', maxlength: '500', placeholder: 'why (recorded in the audit log)' });
    const what = s.tenant ? s.tenant + '/' + s.name : s.name;
    const text = action === 'trigger' ? 'Enqueue an occurrence now, outside the timing (its next occurrence stays).'
      : action === 'pause' ? 'No occurrence is enqueued until it is resumed; occurrences already enqueued run.'
        : 'It resumes at its first occurrence after now; occurrences during the pause are not run.';
    modal((action === 'trigger' ? 'Run ' : action === 'pause' ? 'Pause ' : 'Resume ') + what + '?',
      [el('p', null, text), el('label', { class: 'block' }, 'Reason', reason)],
      action === 'trigger' ? 'Run now' : action === 'pause' ? 'Pause' : 'Resume', async () => {
        const body = { tenant: s.tenant, name: s.name };
        if (reason.value.trim()) body.reason = reason.value.trim();
        const res = await api('POST', '/schedules/' + action, body);
        flash(action === 'trigger' ? 'Enqueued ' + res.jobId + '.' : (res.changed ? (action === 'pause' ? 'Paused ' : 'Resumed ') + what + '.' : what + ' was already ' + (action === 'pause' ? 'paused.' : 'running.')), 'ok');
        render();
      }, action === 'pause');
  }

  // ------------------------------------------------------------------ history

  const HISTORY_KEYS = ['q', 'jobType', 'outcome', 'providerKey', 'from', 'until'];
  const OUTCOMES = ['completed', 'parked', 'cancelled'];

  function outcomeBadge(o) {
    return badge(o, o === 'completed' ? 'st-done' : o === 'parked' ? 'st-parked' : 'st-discarded');
  }

  async function pageHistory(id, params) {
    const q = new URLSearchParams();
    for (const k of HISTORY_KEYS) {
      const v = params.get(k);
      if (!v) continue;
      if (k === 'from' || k === 'until') {
        q.set(k, fromInput(v)); // a time without a zone is in the shown zone
      } else {
        q.set(k, v);
      }
    }
    const filterQ = q.toString();
    q.set('limit', '50');
    if (params.get('cursor')) q.set('cursor', params.get('cursor'));
    const page = await api('GET', '/history?' + q);
    if (id !== S.renderId) return;
    const input = (name, label, attrs) => el('label', null, label,
      el('input', Object.assign({ name: name, id: 'h-' + name, value: params.get(name) || '', autocomplete: 'off' }, attrs || {})));
    const form = el('form', { class: 'filters', id: 'history-filters' },
      input('q', 'Job id or idempotency key', { type: 'search', maxlength: '200', placeholder: 'e.g. order-17' }),
      input('jobType', 'Job type'),
      el('label', null, 'Outcome', el('select', { name: 'outcome', id: 'h-outcome' }, el('option', { value: '' }, 'any'),
        OUTCOMES.map(o => el('option', { value: o, selected: params.get('outcome') === o }, o)))),
      input('providerKey', 'Provider key'),
      input('from', 'Finished from (' + (S.tz === 'utc' ? 'UTC' : 'local') + ')', { type: 'datetime-local', step: '1', value: toInput(params.get('from')) }),
      input('until', 'Finished until (' + (S.tz === 'utc' ? 'UTC' : 'local') + ')', { type: 'datetime-local', step: '1', value: toInput(params.get('until')) }),
      el('div', { class: 'filter-actions' }, el('button', { type: 'submit', class: 'primary', id: 'history-apply' }, 'Search'),
        el('button', { type: 'button', onclick: () => go('/history') }, 'Clear')));
    form.addEventListener('submit', e => {
      e.preventDefault();
      const p = new URLSearchParams();
      for (const k of HISTORY_KEYS) {
        const v = form.elements[k].value.trim();
        if (v) p.set(k, k === 'from' || k === 'until' ? fromInput(v) : v);
      }
      go('/history', p);
    });
    const rows = page.items.map(h => el('tr', { 'data-job': h.jobType + '/' + h.jobId },
      el('td', { class: 'nowrap' }, timeCell(h.finishedAt)),
      el('td', null, jobLink(h.jobType, h.jobId), el('div', { class: 'small muted' }, h.jobType)),
      el('td', null, outcomeBadge(h.outcome), h.failureType ? el('div', { class: 'small muted' }, h.failureType) : null),
      el('td', { class: 'num' }, duration(h.durationMs)),
      el('td', { class: 'num' }, num(h.attempts) + ' / ' + num(h.reschedules)),
      el('td', null, keyLink(h.providerKey)),
      el('td', null, h.answeredBy ? el('code', null, h.answeredBy) : (h.trailLength ? el('span', { class: 'muted' }, 'no endpoint answered') : '–')),
      el('td', { class: 'error-cell' }, h.detail ? fold(h.detail, 'hd-' + h.jobType + '/' + h.jobId + '@' + h.finishedAt) : (h.deadLetterId ? link('#/dead-letters/' + h.deadLetterId, 'dead letter #' + h.deadLetterId) : '–')),
      el('td', { class: 'small muted' }, workerText(h.worker))));
    const pager = el('div', { class: 'pager' },
      params.get('cursor') ? el('button', { type: 'button', onclick: () => { const p = new URLSearchParams(params); p.delete('cursor'); go('/history', p); } }, '← Newest') : null,
      page.nextCursor ? el('button', { type: 'button', id: 'history-next', onclick: () => { const p = new URLSearchParams(params); p.set('cursor', page.nextCursor); go('/history', p); } }, 'Older →') : null);
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'History'),
      el('span', { class: 'muted' }, 'Finished jobs, newest first: completed, parked or cancelled. Took: the last run\'s handler time; attempts / reschedules.')),
      form,
      table(['Finished', 'Job', 'Outcome', 'Took', 'Att. / resch.', 'Provider key', 'Answered by', 'Detail', 'Worker'], rows, { id: 'history' },
        filterQ ? emptyState('No finished job matches.', 'Nothing with this id, type, outcome, key or time is recorded. A job id is matched exactly; history is kept 7 days by default.')
          : emptyState('No finished job is recorded yet.', 'Each job that completes, is parked or is cancelled writes a row to layover.job_history, kept 7 days by default. Nothing has finished since, or history is off.',
            ['Settings: Layover.Builder.history(true) (the default) and historyRetention(Duration); see docs/observability.md.'])),
      pager);
  }

  // ------------------------------------------------------------------ one job

  // Steps (docs/steps.md): a job's stored steps (the view layover.steps, without results), and the step
  // its run stopped at with its error (the API's stoppedAt)
  function stepsCard(steps, stoppedAt, foldId, emptyText) {
    const rows = steps.map(st => el('tr', { 'data-step': st.step }, el('td', null, el('code', null, st.step)), el('td', null, st.kind),
      el('td', null, st.providerKey ? keyLink(st.providerKey) : '–'), el('td', null, st.outcome), el('td', { class: 'num' }, st.attempt == null ? '–' : st.attempt),
      el('td', { class: 'nowrap' }, timeCell(st.finishedAt)), el('td', { class: 'num' }, st.durationMs == null ? '–' : Math.round(st.durationMs) + ' ms'),
      el('td', { class: 'num' }, st.inputTokens == null ? '–' : num(st.inputTokens) + ' / ' + num(st.outputTokens || 0))));
    const stopped = stoppedAt ? el('div', { id: 'stopped-at', class: 'stopped-at' }, 'Stopped at step ', el('code', null, stoppedAt.step), ': ',
      el('span', { class: 'error-text' }, fold(stoppedAt.error || '', foldId))) : null;
    return el('section', { class: 'card', id: 'steps-card' }, el('h2', null, 'Steps'), stopped,
      table(['Step', 'Kind', 'Provider key', 'Outcome', 'Attempt', 'Finished', 'Took', 'Tokens in / out'], rows, { id: 'steps' }, emptyText));
  }

  async function pageJob(id, jobType, jobId) {
    const j = await api('GET', '/job-runs/' + encodeURIComponent(jobType) + '/' + encodeURIComponent(jobId));
    if (id !== S.renderId) return;
    const ro = S.session.readOnly;
    let queued;
    if (j.queued) {
      const w = j.queued;
      queued = el('p', { id: 'job-queued' }, 'In the queue: ', stateBadge(w.state), ' ', badge(w.why, 'why'), ' runs at ', timeCell(w.runAt),
        ' · attempts ' + w.attempts + ', reschedules ' + w.reschedules,
        w.rescheduleDetail ? el('div', { class: 'small' }, fold(w.rescheduleDetail, 'jq-' + jobType + '/' + jobId)) : null,
        w.lastErrorMessage ? el('div', { class: 'small' }, 'last error: ', fold((w.lastErrorClass ? w.lastErrorClass + ': ' : '') + w.lastErrorMessage, 'jqe-' + jobType + '/' + jobId)) : null,
        traceFold(w.lastStackTrace, 'jq-trace-' + jobType + '/' + jobId),
        w.batchId != null ? el('div', { class: 'small', id: 'job-batch' }, 'In ', batchLink(w.batchId), ' (line ', batchItemBadge(w.batchItemState), ')') : null,
        ro ? null : el('div', { class: 'actions left' }, el('button', { type: 'button', class: 'danger small-btn', onclick: () => cancelJob({ jobType: jobType, id: jobId, state: w.state }) },
          w.state === 'running' ? 'Ask to stop…' : 'Cancel…')));
    } else {
      queued = el('p', { id: 'job-queued', class: 'muted' }, 'Not in the queue now.');
    }
    const runs = j.runs.map((r, n) => el('tr', { 'data-run': n },
      el('td', { class: 'nowrap' }, timeCell(r.finishedAt)),
      el('td', null, outcomeBadge(r.outcome), r.failureType ? el('div', { class: 'small muted' }, r.failureType) : null),
      el('td', { class: 'nowrap' }, r.startedAt ? timeCell(r.startedAt) : '–'),
      el('td', { class: 'num' }, duration(r.durationMs)),
      el('td', { class: 'num' }, num(r.attempts) + ' / ' + num(r.reschedules)),
      el('td', null, keyLink(r.providerKey)),
      el('td', null, r.answeredBy ? el('code', null, r.answeredBy) : (r.providerTrail.length ? el('span', { class: 'muted' }, 'none') : '–')),
      el('td', { class: 'error-cell' }, r.detail ? fold(r.detail, 'jr-' + n + r.finishedAt) : (r.deadLetterId ? link('#/dead-letters/' + r.deadLetterId, (r.replayKind ? r.replayKind + ' replay of ' : '') + 'dead letter #' + r.deadLetterId) : '–')),
      el('td', { class: 'small muted' }, workerText(r.worker))));
    const trails = j.runs.filter(r => r.providerTrail.length).map(r => el('section', { class: 'card' },
      el('h2', null, 'Trail of the run that finished ', timeCell(r.finishedAt)), trailTable(r.providerTrail)));
    const dls = j.deadLetters.map(d => el('tr', null,
      el('td', null, link('#/dead-letters/' + d.id, '#' + d.id)), el('td', null, stateBadge(d.state)), el('td', null, d.failureType),
      el('td', { class: 'error-cell' }, fold((d.errorClass ? d.errorClass + ': ' : '') + (d.errorMessage || ''), 'jd-' + d.id), traceFold(d.lastStackTrace, 'jd-trace-' + d.id)),
      el('td', { class: 'nowrap' }, timeCell(d.parkedAt)), el('td', { class: 'num' }, num(d.replayCount))));
    const jbs = (j.batches || []).map(b => el('tr', { 'data-batch': b.batchId },
      el('td', null, batchLink(b.batchId)), el('td', null, batchStateBadge(b.batchState)), el('td', null, b.provider || '–'),
      el('td', { class: 'num' }, b.itemId), el('td', null, batchItemBadge(b.state)), el('td', null, resultText(b.resultKind, b.resultStatus)),
      el('td', { class: 'nowrap' }, timeCell(b.gatheredAt)), el('td', { class: 'nowrap' }, b.answeredAt ? timeCell(b.answeredAt) : '–')));
    show(id,
      el('p', null, link('#/history?q=' + encodeURIComponent(jobId), '← History of ' + jobId)),
      el('div', { class: 'page-head' }, el('h1', null, 'Job ', el('code', null, jobId)), el('span', { class: 'muted' }, 'type ' + jobType)),
      el('section', { class: 'card' }, el('h2', null, 'Now'), queued),
      el('section', { class: 'card' }, el('h2', null, 'Runs'),
        table(['Finished', 'Outcome', 'Started', 'Took', 'Att. / resch.', 'Provider key', 'Answered by', 'Detail', 'Worker'], runs, { id: 'runs' },
          emptyState('No finished run is recorded for this job.', j.queued ? 'It has not finished yet.' : 'It never ran, finished more than the history retention ago (7 days by default), or history is off (Layover.Builder.history).'))),
      // only for a job with stored steps or stopped at one: a done job's steps are deleted with it
      (j.steps && j.steps.length) || j.stoppedAt ? stepsCard(j.steps || [], j.stoppedAt, 'job-stopped-' + jobType + '/' + jobId,
        'No finished steps are stored: it stopped at its first.') : null,
      trails,
      (j.groups || []).length ? el('section', { class: 'card', id: 'job-groups' }, el('h2', null, 'Group'),
        j.groups.map(g => el('p', { 'data-group': g.groupId }, g.role === 'callback' ? 'The callback of group ' : 'A member of group ',
          groupLink(g.groupId), ' · ', groupStateBadge(g.state)))) : null,
      (j.dependencies || []).length ? el('section', { class: 'card', id: 'job-dependencies-card' }, el('h2', null, 'It runs after'),
        table(['Job', 'Type', 'Edge', 'Ended'], edgeRows(j.dependencies), { id: 'job-dependencies' })) : null,
      (j.dependents || []).length ? el('section', { class: 'card', id: 'job-dependents-card' }, el('h2', null, 'Jobs that run after it'),
        table(['Job', 'Type', 'Edge', 'Ended'], edgeRows(j.dependents), { id: 'job-dependents' })) : null,
      jbs.length ? el('section', { class: 'card', id: 'job-batches-card' }, el('h2', null, 'Batches'),
        table(['Batch', 'Batch state', 'Provider', 'Item', 'Line', 'Result', 'Gathered', 'Answered'], jbs, { id: 'job-batches' })) : null,
      el('section', { class: 'card' }, el('h2', null, 'Dead letters'),
        table(['Id', 'State', 'Failure type', 'Error', 'Parked', 'Replays'], dls, { id: 'job-dead-letters' }, 'It was never parked.')));
  }

  // ------------------------------------------------------------------ one provider key

  async function pageProviderKey(id, key) {
    const [k, fair] = await Promise.all([api('GET', '/provider-keys/' + encodeURIComponent(key)),
      api('GET', '/fairness?providerKey=' + encodeURIComponent(key))]);
    if (id !== S.renderId) return;
    const ro = S.session.readOnly;
    const b = k.breaker;
    const breakerCard = el('section', { class: 'card', id: 'key-breaker' }, el('h2', null, 'Breaker'),
      b ? [el('div', null, breakerText(b.state, b.effectiveState, b.openUntil)),
        el('dl', { class: 'counts' },
          el('dt', null, 'failures / calls (window)'), el('dd', null, num(b.failures) + ' / ' + num(b.calls)),
          el('dt', null, 'openings since last close'), el('dd', null, num(b.openCount)),
          el('dt', null, 'last closed'), el('dd', null, timeCell(b.closedAt)),
          el('dt', null, 'trial by'), el('dd', null, workerText(b.trialClaimedBy))),
        b.reason ? el('div', { class: 'small' }, fold(b.reason, 'kb-reason')) : null,
        b.lastFailure ? el('div', { class: 'small muted' }, fold('last failure: ' + b.lastFailure, 'kb-last')) : null]
        : el('p', { class: 'muted' }, 'No breaker yet: it is made the first time a worker calls this key.'),
      ro ? null : el('div', { class: 'actions left' },
        el('button', { type: 'button', class: 'danger small-btn', id: 'key-force-open', disabled: b && b.state === 'open', onclick: () => forceOpen(key) }, 'Force open…'),
        el('button', { type: 'button', class: 'small-btn', id: 'key-force-close', disabled: !b || b.state === 'closed', onclick: () => forceClose(key) }, 'Force close…')));
    const c = k.cooldown;
    const cooldownCard = el('section', { class: 'card', id: 'key-cooldown' }, el('h2', null, 'Cooldown'),
      c ? [el('div', null, c.active ? cooldownText(c.until, c.reason) : [badge('ended', 'st-closed'), ' the last cooldown (' + c.reason + ') ended ', timeCell(c.until)]),
        el('dl', { class: 'counts' },
          el('dt', null, 'strikes in a row'), el('dd', null, num(c.strikes)),
          el('dt', null, 'since'), el('dd', null, timeCell(c.startedAt)),
          el('dt', null, 'set by'), el('dd', null, workerText(c.updatedBy))),
        c.detail ? el('div', { class: 'small' }, fold(c.detail, 'kc-detail')) : null]
        : el('p', { class: 'muted' }, 'Never cooled down: a 429 or a spent quota would make every worker wait here.'));
    const bk = k.bucket;
    const bucketCard = el('section', { class: 'card', id: 'key-bucket' }, el('h2', null, bk && bk.learned ? 'Learned pace' : 'Bucket'),
      bk ? [bucketText({ requestsPerMinute: bk.inForce ? bk.requestsPerMinute : null, tokensPerMinute: bk.tokensPerMinute, burstMs: bk.burstMs,
        bucketInUseMs: bk.inUseMs, paceLearnedUntil: bk.learned && bk.inForce ? bk.learnedUntil : null }),
        el('dl', { class: 'counts' },
          bk.learned ? [el('dt', null, bk.inForce ? 'in force until' : 'lapsed at'), el('dd', null, timeCell(bk.learnedUntil))]
            : [el('dt', null, 'configured'), el('dd', null, timeCell(bk.configuredAt))],
          el('dt', null, 'burst'), el('dd', null, duration(bk.burstMs)),
          el('dt', null, 'full again at'), el('dd', null, bk.fullAt ? timeCell(bk.fullAt) : 'full now'))]
        : el('p', { class: 'muted' }, 'No rate limit: configure one with Layover.Builder bucket(key, ...), or one is learned from a 429 that states the limit.'),
      overrideNote(k.limitOverride));
    const con = k.concurrency;
    const pause = k.pause;
    const extraCard = el('section', { class: 'card', id: 'key-limits' }, el('h2', null, 'Concurrency and pause'),
      el('dl', { class: 'counts' },
        el('dt', null, 'in flight / limit'), el('dd', null, con ? num(con.inFlight) + ' / ' + num(con.maxInFlight) : 'no limit'),
        el('dt', null, 'paused'), el('dd', null, pause ? ['since ', timeCell(pause.pausedAt), ' by ' + pause.pausedBy] : 'no')),
      pause && pause.reason ? el('div', { class: 'small' }, fold(pause.reason, 'kp')) : null);
    const f = k.finishedLastHour;
    const finishedCard = el('section', { class: 'card', id: 'key-finished' }, el('h2', null, 'Finished in the last hour'),
      el('dl', { class: 'counts' }, OUTCOMES.map(o => [el('dt', null, o),
        el('dd', null, link('#/history?providerKey=' + encodeURIComponent(key) + '&outcome=' + o, num(f[o] || 0)))]),
        f.avgCompletedDurationMs != null ? [el('dt', null, 'average time (completed)'), el('dd', null, duration(f.avgCompletedDurationMs))] : null));

    const whys = el('div', { class: 'facets', id: 'key-whys' }, el('strong', null, num(k.jobs.total) + ' in the queue'),
      k.jobs.byWhy.map(w => el('span', { class: 'chip' }, link('#/jobs?providerKey=' + encodeURIComponent(key) + '&why=' + encodeURIComponent(w.why), w.why), ' ' + num(w.n),
        w.why !== 'running' && w.nextRunAt ? el('span', { class: 'muted' }, ' · next ', timeCell(w.nextRunAt)) : null)));
    const jobs = k.jobs.items.map(j => el('tr', null,
      el('td', null, jobLink(j.jobType, j.id)), el('td', null, j.jobType), el('td', null, stateBadge(j.state)),
      el('td', { class: 'nowrap' }, timeCell(j.runAt)), el('td', null, badge(j.why, 'why'), j.rescheduleDetail ? [' ', fold(j.rescheduleDetail, 'kj-' + j.jobType + '/' + j.id)] : null)));
    const dls = k.deadLetters.recent.map(d => el('tr', null,
      el('td', null, link('#/dead-letters/' + d.id, '#' + d.id)), el('td', null, d.jobType), el('td', null, d.failureType), el('td', null, stateBadge(d.state)),
      el('td', { class: 'error-cell' }, fold((d.errorClass ? d.errorClass + ': ' : '') + (d.errorMessage || ''), 'kd-' + d.id)),
      el('td', { class: 'nowrap' }, timeCell(d.parkedAt))));
    let poolSec = null;
    if (k.pool) {
      const rows = k.pool.members.map(m => el('tr', { 'data-key': m.providerKey, class: m.providerKey === key ? 'current' : null },
        el('td', null, keyLink(m.providerKey)),
        el('td', null, breakerText(m.breakerState, m.breakerEffectiveState, m.breakerOpenUntil)),
        el('td', null, m.cooldownUntil ? cooldownText(m.cooldownUntil, m.cooldownReason) : '–'),
        el('td', null, m.requestsPerMinute != null ? num(m.requestsPerMinute) + ' req/min' : 'no limit')));
      poolSec = el('section', { class: 'card', id: 'key-pool' }, el('h2', null, 'API key pool ', el('code', null, k.pool.name)),
        el('p', { class: 'muted small' }, k.pool.memberOf ? 'This key is one of the pool\'s keys; each has its own breaker and cooldown.'
          : 'Keys named ' + k.pool.name + '#… (an ApiKeyPool) that may serve this provider; each has its own breaker and cooldown.'),
        table(['Key', 'Breaker', 'Cooldown', 'Pace'], rows, { id: 'pool-members' }));
    }
    show(id,
      el('p', null, link('#/overview', '← Overview')),
      el('div', { class: 'page-head' }, el('h1', null, 'Provider key ', el('code', null, key)),
        dbTime(k.at)),
      k.outage ? outageBanner(k.outage) : null,
      el('div', { class: 'cards' }, breakerCard, cooldownCard, bucketCard, extraCard, finishedCard),
      endpointsSection(k),
      interactiveSection(k),
      limitSection(key, k.limitOverride, ro),
      chartsSection(key, (k.endpoints && k.endpoints.length) || k.asEndpoint),
      el('section', { class: 'card' }, el('h2', null, 'Jobs waiting on it and why'), whys,
        table(['Job', 'Type', 'State', 'Run at', 'Why'], jobs, { id: 'key-jobs' },
          emptyState('No job of this key is in the queue.', 'Jobs show here while they wait for this key: new, rescheduled by its cooldown, bucket or breaker, or retrying.')),
        k.jobs.total > jobs.length ? el('p', null, link('#/jobs?providerKey=' + encodeURIComponent(key), 'All ' + num(k.jobs.total) + ' on the jobs page →')) : null),
      fairShareSection(key, fair, ro),
      el('section', { class: 'card' }, el('h2', null, 'Recent dead letters'),
        el('div', { class: 'facets' }, el('strong', null, num(k.deadLetters.total) + ' in all'),
          k.deadLetters.byState.map(x => el('span', { class: 'chip' }, stateBadge(x.value), ' ' + num(x.count)))),
        table(['Id', 'Job type', 'Failure type', 'State', 'Error', 'Parked'], dls, { id: 'key-dead-letters' },
          'None: jobs of this key that fail for good would be listed here.'),
        k.deadLetters.total ? el('p', null, link('#/dead-letters?providerKey=' + encodeURIComponent(key), 'All on the dead letters page →')) : null),
      poolSec);
  }

  // A fallback chain seen from its model key (the endpoints it called, each one's calls, 429s and errors) or
  // from one of its endpoints (its calls by result, and the keys whose chains called it): the last hour.
  function endpointsSection(k) {
    const share = (n, all) => all ? Math.round(n * 100 / all) + ' %' : '–';
    if (k.endpoints && k.endpoints.length) {
      const all = k.endpoints.reduce((a, e) => a + e.calls, 0);
      const rows = k.endpoints.map(e => el('tr', { 'data-endpoint': e.providerKey },
        el('td', null, keyLink(e.providerKey)),
        el('td', { class: 'num' }, num(e.calls), el('div', { class: 'small muted' }, share(e.calls, all) + ' of the calls')),
        el('td', { class: 'num' }, num(e.answered)),
        el('td', { class: 'num' }, num(e.rateLimited)),
        el('td', { class: 'num' }, num(e.errors), e.errors ? el('div', { class: 'small muted' }, Object.keys(e.byResult)
          .filter(r => r !== 'answered' && r !== 'rate_limited').map(r => r + ' ' + num(e.byResult[r])).join(', ')) : null)));
      return el('section', { class: 'card', id: 'key-endpoints' }, el('h2', null, 'Fallback endpoints (last hour)'),
        el('p', { class: 'muted small' }, 'The endpoints this key\'s fallback chains called, busiest first: calls made through each for this key; answered, 429s and errors of all the endpoint\'s calls.'),
        table(['Endpoint', 'Calls', 'Answered', '429s', 'Errors'], rows, { id: 'key-endpoints-table' }));
    }
    const e = k.asEndpoint;
    if (!e) return null;
    return el('section', { class: 'card', id: 'key-as-endpoint' }, el('h2', null, 'As a fallback endpoint (last hour)'),
      el('dl', { class: 'counts' },
        el('dt', null, 'calls'), el('dd', null, num(e.made)),
        el('dt', null, 'answered'), el('dd', null, num(e.answered)),
        el('dt', null, '429s'), el('dd', null, num(e.rateLimited)),
        el('dt', null, 'errors'), el('dd', null, num(e.errors))),
      e.usedBy.length ? el('p', { class: 'small' }, 'Called by the chains of ', e.usedBy.map((u, i) => [i ? ', ' : '', keyLink(u.providerKey), ' (' + num(u.calls) + ')'])) : null);
  }

  // The key's interactive calls (made outside jobs, InteractiveCalls) beside its jobs: the last hour.
  function interactiveSection(k) {
    const i = k.interactive;
    if (!i) return null;
    const by = o => Object.keys(o).map(r => r + ' ' + num(o[r])).join(', ');
    return el('section', { class: 'card', id: 'key-interactive' }, el('h2', null, 'Interactive calls (last hour)'),
      el('p', { class: 'muted small' }, 'Calls made outside jobs through InteractiveCalls: admitted by this key\'s cooldown, breaker and bucket, first (jobs leave them a share while they arrive).'),
      el('dl', { class: 'counts' },
        el('dt', null, 'admitted'), el('dd', null, num(i.admitted)),
        el('dt', null, 'mean wait'), el('dd', null, i.meanWaitMs == null ? '–' : num(Math.round(i.meanWaitMs)) + ' ms'),
        el('dt', null, 'not admitted'), el('dd', null, num(i.notAdmitted), i.notAdmitted ? el('div', { class: 'small muted' }, by(i.notAdmittedBy)) : null),
        el('dt', null, 'answered'), el('dd', null, num(i.answered)),
        el('dt', null, '429s'), el('dd', null, num(i.rateLimited)),
        el('dt', null, 'failed'), el('dd', null, num(i.failed), i.failed ? el('div', { class: 'small muted' }, by(i.byOutcome)) : null),
        el('dt', null, 'tokens in / out'), el('dd', null, num(i.inputTokens || 0) + ' / ' + num(i.outputTokens || 0))));
  }

  // ------------------------------------------------------------------ workers (layover.workers)

  async function pageWorkers(id) {
    const res = await api('GET', '/workers');
    if (id !== S.renderId) return;
    const rows = res.items.map(w => el('tr', { 'data-worker': w.workerName },
      el('td', null, !w.hasRow ? [badge('no row', 'st-discarded'), el('div', { class: 'small muted' }, 'a worker of a version without layover.workers')]
        : (w.alive ? badge('alive', 'st-closed') : badge('stale', 'st-open'))),
      el('td', { class: 'num' }, ago(w.heartbeatAgeMs)),
      el('td', null, el('code', null, workerText(w.workerName)), w.host ? el('div', { class: 'small muted' }, w.host) : null),
      el('td', { class: 'num' }, w.threads == null ? '–' : num(w.threads)),
      el('td', { class: 'num' }, w.runningJobs ? link('#/jobs?state=running', num(w.runningJobs)) : '0'),
      el('td', null, w.startedAt ? [timeCell(w.startedAt), el('div', { class: 'small muted' }, 'up ' + ago(w.upMs).replace(' ago', ''))] : '–'),
      el('td', null, w.version || '–'),
      el('td', { class: 'num' }, num(w.limitsApplied))));
    const alive = res.items.filter(w => w.alive).length;
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Workers'),
      el('span', { class: 'muted' }, num(alive) + ' alive · each writes its row every 5 s; stale after ' + Math.round(res.staleAfterMs / 1000) + ' s without a heartbeat (a row an hour stale is deleted).'), dbTime(res.at)),
      table(['State', 'Heartbeat', 'Worker', 'Threads', 'Running jobs', 'Started', 'Version', 'Operator limits applied'], rows, { id: 'workers' },
        emptyState('No worker is running.', 'A Layover instance writes its row in layover.workers when it starts and deletes it when it stops.',
          ['See docs/console-api.md (GET /api/workers).'])));
  }

  // ------------------------------------------------------------------ limits at run time (an operator's override of a key's limits)

  const LIMIT_DIMS = [
    ['requestsPerMinute', 'requests / min', 'req/min'],
    ['tokensPerMinute', 'tokens / min', 'tokens/min'],
    ['inputTokensPerMinute', 'input tokens / min', 'input tokens/min'],
    ['outputTokensPerMinute', 'output tokens / min', 'output tokens/min'],
    ['maxInFlight', 'in flight at most', 'in flight'],
  ];

  // "600 req/min · 4 in flight": the dimensions an override sets (the others stay as configured).
  function limitText(o) {
    return LIMIT_DIMS.filter(d => o[d[0]] !== null && o[d[0]] !== undefined).map(d => num(o[d[0]]) + ' ' + d[2]).join(' · ');
  }

  function limitSection(key, o, ro) {
    const shown = o ? [
      el('div', { id: 'limit-override' }, badge('operator', 'st-parked'), ' ', el('strong', null, limitText(o)),
        el('span', { class: 'muted' }, ' in place of the configured limits')),
      el('dl', { class: 'counts' },
        LIMIT_DIMS.map(d => [el('dt', null, d[1]), el('dd', { 'data-dim': d[0] }, o[d[0]] === null ? 'as configured' : num(o[d[0]]))]),
        el('dt', null, 'set'), el('dd', null, timeCell(o.setAt), o.setBy ? el('span', { class: 'muted' }, ' by ', workerText(o.setBy)) : null),
        o.bucket ? [el('dt', null, 'bucket row now'), el('dd', null, limitText(o.bucket) || '–')] : null,
        o.concurrency ? [el('dt', null, 'in flight / limit now'), el('dd', null, num(o.concurrency.inFlight) + ' / ' + num(o.concurrency.maxInFlight))] : null),
      o.reason ? el('div', { class: 'small' }, fold(o.reason, 'lo-reason')) : null,
      limitWorkers(o),
      ro ? null : el('div', { class: 'actions left' },
        el('button', { type: 'button', class: 'small-btn', id: 'key-limit-revert', onclick: () => revertLimit(key, o) }, 'Revert…'))]
      : el('p', { class: 'muted', id: 'limit-none' }, 'No operator\'s limit: the limits configured in the workers apply (Layover.Builder bucket, concurrencyLimit).');
    let form = null;
    if (!ro) {
      const inputs = LIMIT_DIMS.map(d => el('input', { id: 'limit-' + d[0], type: 'number', min: d[0] === 'maxInFlight' ? '1' : '0.000001',
        max: d[0] === 'maxInFlight' ? '100000' : '1000000000000', step: d[0] === 'maxInFlight' ? '1' : 'any', placeholder: 'as configured' }));
      const reason = el('input', { id: 'limit-reason', maxlength: '500', placeholder: 'why (goes to the audit log)' });
      const err = el('div', { class: 'field-error', id: 'limit-error' });
      form = el('form', { class: 'inline-form', id: 'limit-form', novalidate: true },
        LIMIT_DIMS.map((d, i) => el('label', null, d[1] + ' ', inputs[i])),
        el('label', null, 'Reason ', reason),
        el('button', { type: 'submit', class: 'primary', id: 'limit-set' }, 'Set limit…'), err);
      form.addEventListener('submit', e => {
        e.preventDefault();
        clear(err);
        const body = { key: key };
        LIMIT_DIMS.forEach((d, i) => { if (inputs[i].value.trim() !== '') body[d[0]] = Number(inputs[i].value); });
        if (LIMIT_DIMS.every(d => body[d[0]] === undefined)) {
          err.textContent = 'Enter at least one limit.';
          return;
        }
        if (reason.value.trim()) body.reason = reason.value.trim();
        modal('Set the limits of ' + key + '?', [el('p', null, el('strong', null, limitText(body)),
          ' in every worker within about a second, in place of the configured ones, until reverted.'),
        el('p', { class: 'small muted' }, o ? 'It replaces the operator\'s limits in force (' + limitText(o) + '): a limit left empty is as configured again.'
          : 'A limit left empty stays as configured.')],
        'Set limits', async () => {
          const res = await api('POST', '/limits', body);
          flash('Limits of ' + res.key + ' set: ' + limitText(res.after) + (res.before ? ' (was ' + limitText(res.before) + ').' : '.'), 'ok');
          inputs.forEach(x => x.blur()); reason.blur();
          render();
        });
      });
    }
    return el('section', { class: 'card', id: 'key-limit-override' }, el('h2', null, 'Limits at run time'),
      el('p', { class: 'muted small' }, 'An operator\'s limits for this key (a provider key or a limit key such as tenant:42) replace the configured bucket and concurrency dimensions they set in every worker within about a second, until reverted. Audited; the table layover.limit_overrides.'),
      shown, form ? [el('h3', null, 'Set limit at run time'), form] : null);
  }

  // On the bucket card: an operator's limit in force over the rate shown, and how many workers apply it.
  function overrideNote(o) {
    if (!o || (o.requestsPerMinute == null && o.tokensPerMinute == null && o.inputTokensPerMinute == null && o.outputTokensPerMinute == null)) return null;
    const ws = o.workers || [];
    const applying = ws.filter(w => w.appliedAt).length;
    return el('div', { class: 'small override-note', id: 'bucket-override' }, badge('operator', 'st-parked'), ' ', limitText(o), ' in force',
      ws.length ? ', applied by ' + applying + ' of ' + ws.length + ' worker' + (ws.length === 1 ? '' : 's') : '',
      el('div', { class: 'muted' }, 'The rate above is the bucket row as a worker last wrote it; which worker applies the limit, and since when: Limits at run time, below.'));
  }

  // Which worker applies the override, and since when (layover.workers); a worker that has not yet, by its heartbeat's age.
  function limitWorkers(o) {
    const ws = o.workers || [];
    const rows = ws.map(w => {
      const after = w.appliedAt && o.setAt ? new Date(w.appliedAt).getTime() - new Date(o.setAt).getTime() : null;
      return el('tr', { 'data-worker': w.workerName },
        el('td', null, el('code', null, workerText(w.workerName))),
        el('td', null, w.appliedAt ? [badge('applied', 'st-closed'), ' ', timeCell(w.appliedAt),
          after != null && after >= 0 ? el('div', { class: 'small muted' }, duration(after) + ' after it was set') : null]
          : [badge('not yet', 'st-half_open'), el('div', { class: 'small muted' }, 'applies an earlier limit, or none')]),
        el('td', { class: 'num' }, ago(w.heartbeatAgeMs)));
    });
    return el('div', { id: 'limit-workers' }, el('h3', null, 'Applied by the workers'),
      rows.length ? table(['Worker', 'Applied', 'Last heartbeat'], rows, { id: 'limit-workers-table' })
        : el('p', { class: 'muted small' }, 'No worker has written its row in layover.workers (workers of this version write it every 5 s): whether the fleet applies this limit is unknown here.'));
  }

  function revertLimit(key, o) {
    const reason = el('input', { id: 'limit-revert-reason', maxlength: '500', placeholder: 'why (goes to the audit log)' });
    modal('Revert the limits of ' + key + '?', [el('p', null, 'The operator\'s limits (' + limitText(o) + ') go; the limits configured in the workers apply again within about a second.'),
      el('label', { class: 'block' }, 'Reason', reason)],
    'Revert', async () => {
      const body = { key: key };
      if (reason.value.trim()) body.reason = reason.value.trim();
      const res = await api('POST', '/limits/revert', body);
      flash('Limits of ' + res.key + ' reverted: the configured ones apply again (was ' + limitText(res.removed) + ').', 'ok');
      render();
    });
  }

  // ------------------------------------------------------------------ fair share (a provider key's fairness keys)

  function pct(share) {
    return (share === null || share === undefined) ? '–' : (share * 100).toFixed(share >= 0.1 ? 1 : 2) + ' %';
  }

  function weightText(w) {
    return (w === null || w === undefined) ? '–' : Number(w).toLocaleString('en-US', { maximumFractionDigits: 6 });
  }

  // Shown when the key has fairness keys with jobs, or has had a fair queue (layover.fair_lines).
  function fairShareSection(key, f, ro) {
    if (!f || (!f.flows && !f.fairQueue)) return null;
    const rows = f.items.map(r => el('tr', { 'data-fairness-key': r.fairnessKey },
      el('td', null, el('code', null, r.fairnessKey)),
      el('td', { class: 'num' }, num(r.waiting), r.untagged ? el('div', { class: 'small muted' }, '+' + num(r.untagged) + ' due again, ahead of the fair queue') : null),
      el('td', { class: 'num' }, num(r.running)),
      el('td', { class: 'num fair-weight' }, weightText(r.weight)),
      el('td', { class: 'num fair-share' }, pct(r.share)),
      el('td', { class: 'num fair-lag' }, r.lag == null ? '–' : r.lag.toFixed(1))));
    const weights = f.weights.map(w => el('tr', { 'data-pattern': w.pattern },
      el('td', null, el('code', null, w.pattern)),
      el('td', { class: 'num' }, weightText(w.weight)),
      el('td', null, w.origin === 'operator' ? badge('operator', 'st-parked') : badge('config', 'st-scheduled'),
        w.origin === 'operator' && w.configuredWeight != null ? el('div', { class: 'small muted' }, 'configured: ' + weightText(w.configuredWeight)) : null),
      el('td', null, timeCell(w.configuredAt), el('div', { class: 'small muted' }, w.configuredBy || '')),
      el('td', { class: 'error-cell' }, w.reason ? fold(w.reason, 'fw-' + w.pattern) : '–'),
      el('td', { class: 'actions-cell' }, ro || w.origin !== 'operator' ? '–'
        : el('button', { type: 'button', class: 'small-btn fair-revert', onclick: () => revertWeight(w.pattern, w.configuredWeight) }, 'Revert…'))));
    let form = null;
    if (!ro) {
      const pattern = el('input', { id: 'fair-pattern', maxlength: '200', list: 'fair-keys', autocomplete: 'off', placeholder: 'tenant:42 or tenant:premium-*', required: true });
      const weight = el('input', { id: 'fair-weight', type: 'number', min: '0.000001', max: '1000000', step: 'any', placeholder: 'e.g. 2', required: true });
      const reason = el('input', { id: 'fair-reason', maxlength: '500', placeholder: 'why (goes to the audit log)' });
      const err = el('div', { class: 'field-error', id: 'fair-error' });
      form = el('form', { class: 'inline-form', id: 'fair-form', novalidate: true },
        el('label', null, 'Fairness key or pattern ', pattern),
        el('datalist', { id: 'fair-keys' }, f.items.map(r => el('option', { value: r.fairnessKey }))),
        el('label', null, 'Weight ', weight),
        el('label', null, 'Reason ', reason),
        el('button', { type: 'submit', class: 'primary', id: 'fair-set' }, 'Set weight'), err);
      form.addEventListener('submit', async e => {
        e.preventDefault();
        clear(err);
        const body = { pattern: pattern.value.trim(), weight: weight.value === '' ? null : Number(weight.value) };
        if (reason.value.trim()) body.reason = reason.value.trim();
        try {
          const res = await api('POST', '/fairness/weights', body);
          flash('Weight of ' + res.pattern + ' set to ' + weightText(res.after) + (res.before === null ? ' (it had no weight of its own).' : ' (was ' + weightText(res.before) + ').'), 'ok');
          pattern.blur(); weight.blur(); reason.blur();
          render();
        } catch (x) {
          err.textContent = (x.status ? x.status + ': ' : '') + x.message;
        }
      });
    }
    return el('section', { class: 'card', id: 'key-fair-share' }, el('h2', null, 'Fair share'),
      el('div', { class: 'facets' }, el('strong', null, num(f.flows) + ' fairness key' + (f.flows === 1 ? '' : 's')),
        el('span', { class: 'chip' }, 'waiting ' + num(f.waiting)),
        el('span', { class: 'chip' }, 'running ' + num(f.running)),
        f.fairQueue && f.fairQueue.lastPickAt ? el('span', { class: 'muted' }, ' · last pick ', timeCell(f.fairQueue.lastPickAt)) : null),
      el('p', { class: 'muted small' }, 'The pick admits the key\'s jobs to its fairness keys with waiting jobs in proportion to their weights (share: while all of them wait; lag: how far ahead of the key\'s virtual clock the last of its waiting jobs is). A new weight applies to jobs queued from then on. The same rows: the view layover.fairness.'),
      table(['Fairness key', 'Waiting', 'Running', 'Weight', 'Share', 'Lag'], rows, { id: 'fair-keys-table' },
        'No job of this key with a fairness key is waiting now.'),
      f.more ? el('p', { class: 'small muted', id: 'fair-more' }, 'The ' + num(f.items.length) + ' with the most waiting of ' + num(f.flows) + '.') : null,
      el('h3', null, 'Weights'),
      el('p', { class: 'muted small' }, 'Weights apply to every provider key\'s fairness keys they match; the longest matching pattern wins, an operator\'s before a configured one; none: 1.'),
      table(['Pattern', 'Weight', 'Set by', 'Since', 'Reason', ''], weights, { id: 'fair-weights' },
        'No weight set: every fairness key weighs 1. Configure them with Layover.Builder fairnessWeight(...), or set one below.'),
      f.weightsMore ? el('p', { class: 'small muted' }, 'Only the first ' + num(f.weights.length) + ' weights are listed.') : null,
      form);
  }

  function revertWeight(pattern, configured) {
    const reason = el('input', { id: 'fair-revert-reason', maxlength: '500', placeholder: 'why (goes to the audit log)' });
    modal('Revert the weight of ' + pattern + '?', [el('p', null, configured != null
      ? 'The configured weight (' + weightText(configured) + ') applies again to jobs queued from now on.'
      : 'No weight is configured for it: it weighs 1 again (or what a matching pattern says) for jobs queued from now on.'),
    el('label', { class: 'block' }, 'Reason', reason)],
    'Revert', async () => {
      const body = { pattern: pattern };
      if (reason.value.trim()) body.reason = reason.value.trim();
      const res = await api('POST', '/fairness/weights/revert', body);
      flash('Weight of ' + res.pattern + ' reverted: ' + weightText(res.now) + ' now (was ' + weightText(res.removed) + ').', 'ok');
      render();
    });
  }

  // ------------------------------------------------------------------ breakers

  async function pageBreakers(id) {
    const res = await api('GET', '/breakers');
    if (id !== S.renderId) return;
    const ro = S.session.readOnly;
    const rows = res.items.map(b => el('tr', { 'data-key': b.providerKey },
      el('td', null, keyLink(b.providerKey)),
      el('td', null, breakerText(b.state, b.effectiveState, b.openUntil), b.previousState ? el('div', { class: 'small muted' }, 'was ' + b.previousState) : null),
      el('td', { class: 'num' }, num(b.failures) + ' / ' + num(b.calls)),
      el('td', { class: 'num' }, num(b.openCount)),
      el('td', null, timeCell(b.closedAt)),
      el('td', null, workerText(b.trialClaimedBy)),
      el('td', { class: 'error-cell' }, el('div', { class: 'error-text small' }, b.reason || '–'), b.lastFailure ? fold('last failure: ' + b.lastFailure, 'bf-' + b.providerKey) : null),
      el('td', null, timeCell(b.changedAt), el('div', { class: 'small muted' }, workerText(b.changedBy))),
      el('td', { class: 'actions-cell' }, ro ? '–' : [
        el('button', { type: 'button', class: 'danger small-btn', disabled: b.state === 'open', onclick: () => forceOpen(b.providerKey) }, 'Force open…'),
        el('button', { type: 'button', class: 'small-btn', disabled: b.state === 'closed', onclick: () => forceClose(b.providerKey) }, 'Force close…')])));
    const keyInput = el('input', { id: 'open-key', placeholder: 'provider key, e.g. openai:gpt-4o-mini', maxlength: '200' });
    const other = ro ? null : el('form', { class: 'inline-form' }, el('label', null, 'Open another key ', keyInput),
      el('button', { type: 'submit' }, 'Force open…'));
    if (other) other.addEventListener('submit', e => { e.preventDefault(); if (keyInput.value.trim()) forceOpen(keyInput.value.trim()); });
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Breakers'),
      el('span', { class: 'muted' }, 'Counters are failures / calls in the current window. Closing a breaker lets the recovery sweep replay its parked jobs.')),
      table(['Provider key', 'State', 'Failures / calls', 'Openings', 'Last closed', 'Trial by', 'Reason', 'Changed', ''], rows, { id: 'breakers' },
        emptyState('No breaker yet.', 'A provider key gets its breaker the first time a worker calls it; force one open below to stop calls to a key now.',
          ['Breaker settings: JobType.builder(...).breaker(...); see docs/provider-state.md.'])),
      other);
  }

  function forceOpen(key) {
    const hold = el('input', { id: 'hold-minutes', type: 'number', min: '1', step: '1', placeholder: 'until forced closed' });
    const reason = el('input', { id: 'breaker-reason', maxlength: '500', placeholder: 'why (goes to the audit log)' });
    modal('Force open ' + key + '?', [el('p', null, 'Jobs of this key picked while it is open are parked (breaker_open) without calling the provider.'),
      el('label', { class: 'block' }, 'Hold open for (minutes)', hold), el('label', { class: 'block' }, 'Reason', reason)],
    'Force open', async () => {
      const body = {};
      if (hold.value) body.holdForSeconds = Math.round(Number(hold.value) * 60);
      if (reason.value.trim()) body.reason = reason.value.trim();
      const res = await api('POST', '/breakers/' + encodeURIComponent(key) + '/force-open', body);
      flash(res.changed ? 'Breaker ' + key + ' forced open.' : 'Breaker ' + key + ' was already open.', 'ok');
      render();
    }, true);
  }

  function forceClose(key) {
    const reason = el('input', { id: 'breaker-reason', maxlength: '500', placeholder: 'why (goes to the audit log)' });
    modal('Force close ' + key + '?', [el('p', null, 'Calls to this key pass again; the recovery sweep replays its parked jobs.'),
      el('label', { class: 'block' }, 'Reason', reason)],
    'Force close', async () => {
      const body = {};
      if (reason.value.trim()) body.reason = reason.value.trim();
      const res = await api('POST', '/breakers/' + encodeURIComponent(key) + '/force-close', body);
      flash(res.changed ? 'Breaker ' + key + ' forced closed.' : 'Breaker ' + key + ' was already closed.', 'ok');
      render();
    });
  }

  // ------------------------------------------------------------------ batches (docs/batches.md)

  function batchLink(batchId) {
    return link('#/batches/' + encodeURIComponent(batchId), 'batch #' + batchId, { class: 'batch-link' });
  }

  function batchStateBadge(state) {
    return badge(state || '–', 'bt-' + String(state || 'none').replace(/[^a-z_]/g, ''));
  }

  // an item: gathered (waiting for its line), result (a line is stored), returned (back to the queue)
  function batchItemBadge(state) {
    return badge(state || '–', 'bi-' + String(state || 'none').replace(/[^a-z_]/g, ''));
  }

  function resultText(kind, status) {
    if (!kind) return '–';
    return [badge(kind, kind === 'succeeded' ? 'ok' : 'trail'), status ? ' ' + status : ''];
  }

  function ageText(ms) {
    if (ms == null) return '–';
    if (ms < 3600000) return duration(ms);
    if (ms < 86400000) return (ms / 3600000).toFixed(1) + ' h';
    return (ms / 86400000).toFixed(1) + ' d';
  }

  async function pageBatches(id, params) {
    const q = new URLSearchParams();
    for (const k of ['state', 'providerKey', 'cursor']) {
      const v = params.get(k);
      if (v) q.set(k, v);
    }
    q.set('limit', '50');
    const page = await api('GET', '/batches?' + q);
    if (id !== S.renderId) return;
    const form = el('form', { class: 'filters', id: 'batch-filters' },
      el('label', null, 'State', el('select', { name: 'state', id: 'bf-state' }, el('option', { value: '' }, 'any'),
        BATCH_STATES.map(v => el('option', { value: v, selected: params.get('state') === v }, v)))),
      el('label', null, 'Provider key', el('input', { name: 'providerKey', id: 'bf-key', value: params.get('providerKey') || '', autocomplete: 'off', maxlength: '200' })),
      el('div', { class: 'filter-actions' }, el('button', { type: 'submit', class: 'primary', id: 'bf-apply' }, 'Apply'),
        el('button', { type: 'button', onclick: () => go('/batches') }, 'Clear')));
    form.addEventListener('submit', e => {
      e.preventDefault();
      const p = new URLSearchParams();
      for (const k of ['state', 'providerKey']) {
        const v = form.elements[k].value.trim();
        if (v) p.set(k, v);
      }
      go('/batches', p);
    });
    const inFlight = el('div', { class: 'facets', id: 'batches-in-flight' },
      el('strong', null, page.inFlight.length ? 'In flight:' : 'Nothing in flight.'),
      page.inFlight.map(f => el('span', { class: 'chip' }, el('code', null, f.providerKey), ' ', batchStateBadge(f.state),
        ' ' + num(f.batches) + (f.batches === 1 ? ' batch, ' : ' batches, ') + num(f.lines) + ' lines, ' + num(f.pending) + ' pending')));
    const rows = page.items.map(b => el('tr', { 'data-batch': b.id },
      el('td', null, link('#/batches/' + b.id, '#' + b.id, { class: 'batch-link' })),
      el('td', null, batchStateBadge(b.state), b.lastError ? el('div', { class: 'small' }, fold(b.lastError, 'be-' + b.id)) : null),
      el('td', null, keyLink(b.providerKey)),
      el('td', null, b.provider),
      el('td', { class: 'num' }, num(b.lines)),
      el('td', { class: 'num b-succeeded' }, num(b.succeeded)),
      el('td', { class: 'num b-errored' }, num(b.errored)),
      el('td', { class: 'num b-returned' }, num(b.returned)),
      el('td', { class: 'num b-pending' }, num(b.pending)),
      el('td', { class: 'nowrap', title: 'since ' + (b.createdAt || '') }, ageText(b.ageMs)),
      el('td', { class: 'num b-saved' }, num(b.savedTokens)),
      el('td', { class: 'nowrap' }, timeCell(b.createdAt))));
    const filtered = params.get('state') || params.get('providerKey');
    const pager = el('div', { class: 'pager' },
      params.get('cursor') ? el('button', { type: 'button', onclick: () => { const p = new URLSearchParams(params); p.delete('cursor'); go('/batches', p); } }, '← Newest') : null,
      page.nextCursor ? el('button', { type: 'button', id: 'batches-next', onclick: () => { const p = new URLSearchParams(params); p.set('cursor', page.nextCursor); go('/batches', p); } }, 'Older →') : null);
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Batches'),
      el('span', { class: 'muted' }, 'Newest first. Deferrable jobs gathered into providers\' batches (half price). Saved tokens: the tokens their lines reported times the discount, an estimate.')),
      form, inFlight,
      table(['Batch', 'State', 'Provider key', 'Provider', 'Lines', 'Succeeded', 'Errored', 'Returned', 'Pending', 'Age', 'Saved tokens', 'Created'], rows, { id: 'batches' },
        filtered ? emptyState('No batch matches this filter.', 'Clear or widen the filter above.')
          : emptyState('No batch yet.', 'A job type with JobType.builder(...).batchable(...) and a provider key with Layover.Builder.batching(...) send deferrable jobs (a deadline at least 1 h 15 min away) by batch.',
            ['See docs/batches.md.'])),
      pager);
  }

  async function pageBatch(id, batchId, params) {
    const q = new URLSearchParams();
    q.set('limit', '100');
    if (params.get('cursor')) q.set('cursor', params.get('cursor'));
    const res = await api('GET', '/batches/' + encodeURIComponent(batchId) + '?' + q);
    if (id !== S.renderId) return;
    const b = res.batch;
    const facts = el('dl', { class: 'facts', id: 'batch-facts' },
      fact('State', batchStateBadge(b.state)),
      fact('Provider key', keyLink(b.providerKey)),
      fact('Provider', b.provider, b.providerBatchId ? el('div', { class: 'small' }, el('code', null, b.providerBatchId)) : null),
      fact('Reference', el('code', null, b.ref)),
      fact('Lines', num(b.lines), el('div', { class: 'small muted' }, num(b.bytes) + ' bytes')),
      fact('Succeeded / errored', num(b.succeeded) + ' / ' + num(b.errored)),
      fact('Returned / pending', num(b.returned) + ' / ' + num(b.pending)),
      fact('Tokens', num(b.inputTokens) + ' in, ' + num(b.outputTokens) + ' out'),
      fact('Saved tokens', el('span', { id: 'batch-saved' }, num(b.savedTokens)), el('div', { class: 'small muted' }, 'discount ' + b.discount)),
      fact('Age', ageText(b.ageMs)),
      fact('Earliest deadline', b.earliestDeadline ? timeCell(b.earliestDeadline) : '–'),
      fact('Created', timeCell(b.createdAt)),
      fact('Sealed', b.sealedAt ? timeCell(b.sealedAt) : '–'),
      fact('Submitted', b.submittedAt ? timeCell(b.submittedAt) : '–', b.submitAttempts > 1 ? el('div', { class: 'small muted' }, b.submitAttempts + ' attempts') : null),
      fact('Finished', b.finishedAt ? timeCell(b.finishedAt) : '–'),
      b.cancelAskedAt ? fact('Cancel asked', timeCell(b.cancelAskedAt)) : null,
      fact('Last error', b.lastError ? el('span', { id: 'batch-error' }, fold(b.lastError, 'bd-' + b.id)) : '–'));
    const rows = res.items.map(i => el('tr', { 'data-item': i.id },
      el('td', { class: 'num' }, i.id),
      el('td', null, jobLink(i.jobType, i.jobId), i.queued ? el('div', { class: 'small muted' }, 'in the queue') : null),
      el('td', null, i.jobType),
      el('td', null, batchItemBadge(i.state)),
      el('td', null, resultText(i.resultKind, i.resultStatus)),
      el('td', { class: 'num' }, i.inputTokens == null ? '–' : num(i.inputTokens) + ' / ' + num(i.outputTokens)),
      el('td', { class: 'nowrap' }, timeCell(i.gatheredAt)),
      el('td', { class: 'nowrap' }, i.answeredAt ? timeCell(i.answeredAt) : '–'),
      el('td', { class: 'error-cell' }, i.error ? fold(i.error, 'bl-' + i.id) : '–')));
    const pager = el('div', { class: 'pager' },
      params.get('cursor') ? el('button', { type: 'button', onclick: () => go('/batches/' + b.id) }, '← First lines') : null,
      res.nextCursor ? el('button', { type: 'button', id: 'lines-next', onclick: () => go('/batches/' + b.id, new URLSearchParams('cursor=' + res.nextCursor)) }, 'Next lines →') : null);
    show(id,
      el('p', null, link('#/batches', '← Batches')),
      el('div', { class: 'page-head' }, el('h1', null, 'Batch #' + b.id), el('span', { class: 'muted' }, b.provider + ' · ' + b.providerKey)),
      el('section', { class: 'card' }, facts),
      el('section', { class: 'card' }, el('h2', null, 'Lines'),
        table(['Item', 'Job', 'Type', 'Line', 'Result', 'Tokens in / out', 'Gathered', 'Answered', 'Error'], rows, { id: 'batch-lines' }, 'No line on this page.'),
        pager));
  }

  // ------------------------------------------------------------------ groups (docs/composition.md)

  function groupLink(groupId) {
    return link('#/groups/' + encodeURIComponent(groupId), el('code', null, shortId(groupId)), { class: 'group-link', title: groupId });
  }

  // a member: pending, parked, done, discarded; a callback: waiting, queued, parked, finished, skipped
  function groupStateBadge(state) {
    return badge(state || '–', 'gs-' + String(state || 'none').replace(/[^a-z_]/g, ''));
  }

  async function pageGroups(id, params) {
    const q = new URLSearchParams();
    const state = params.get('state');
    if (state) q.set('state', state);
    q.set('limit', '100');
    const page = await api('GET', '/groups?' + q);
    if (id !== S.renderId) return;
    const filters = el('div', { class: 'facets', id: 'group-filters' }, el('strong', null, 'Show:'),
      [['', 'all'], ['open', 'open'], ['settled', 'settled']].map(([v, t]) => (state || '') === v
        ? el('span', { class: 'chip active' }, t)
        : el('span', { class: 'chip' }, link('#/groups' + (v ? '?state=' + v : ''), t, { 'data-state': v || 'all' }))));
    const rows = page.items.map(g => el('tr', { 'data-group': g.groupId },
      el('td', null, groupLink(g.groupId)),
      el('td', null, g.callbackType, el('div', { class: 'small muted' }, g.policy)),
      el('td', { class: 'num g-size' }, num(g.size)),
      el('td', { class: 'num g-pending' }, num(g.pending)),
      el('td', { class: 'num g-parked' }, num(g.parked)),
      el('td', { class: 'num g-done' }, num(g.done)),
      el('td', { class: 'num g-discarded' }, num(g.discarded)),
      el('td', { class: 'g-callback' }, groupStateBadge(g.callbackState), g.sealedAt ? null : el('div', { class: 'small muted' }, 'not sealed')),
      el('td', { class: 'nowrap' }, timeCell(g.createdAt)),
      el('td', { class: 'nowrap' }, g.settledAt ? timeCell(g.settledAt) : '–')));
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Groups'),
      el('span', { class: 'muted' }, 'Newest first. A group\'s callback runs once every member has finished; a parked member holds it open (open: the callback waits).')),
      filters,
      table(['Group', 'Callback · policy', 'Size', 'Pending', 'Parked', 'Done', 'Discarded', 'Callback', 'Created', 'Settled'], rows, { id: 'groups' },
        state ? emptyState('No ' + state + ' group.', 'Show all groups above.')
          : emptyState('No group yet.', 'layover.enqueueGroup(GroupOptions.callback(type, args), memberType, members) makes one.', ['See docs/composition.md.'])),
      page.items.length >= page.limit ? el('p', { class: 'muted small' }, 'The newest ' + page.limit + ' shown.') : null);
  }

  async function pageGroup(id, groupId) {
    const res = await api('GET', '/groups/' + encodeURIComponent(groupId) + '?limit=500');
    if (id !== S.renderId) return;
    const g = res.group;
    const facts = el('dl', { class: 'facts', id: 'group-facts' },
      fact('Callback', el('span', { id: 'group-callback' }, jobLink(g.callbackType, g.groupId), ' ', groupStateBadge(g.callbackState)),
        el('div', { class: 'small muted' }, 'type ' + g.callbackType)),
      fact('Policy', g.policy === 'on_success' ? 'on success (a discarded member skips the callback)' : 'on complete'),
      fact('Members', el('span', { id: 'group-counts' }, num(g.size) + ' · ' + num(g.pending) + ' pending · ' + num(g.parked) + ' parked · '
        + num(g.done) + ' done · ' + num(g.discarded) + ' discarded')),
      fact('Created', timeCell(g.createdAt)),
      fact('Sealed', g.sealedAt ? timeCell(g.sealedAt) : 'not yet: members may be added'),
      fact('Settled', g.settledAt ? timeCell(g.settledAt) : '–'),
      fact('Parent group', res.parent ? el('span', { id: 'group-parent' }, groupLink(res.parent.groupId), ' (its callback is ', groupStateBadge(res.parent.state), ' there)') : '–'),
      fact('Child groups', res.children.length ? el('span', { id: 'group-children' }, res.children.map((c, n) => [n ? ', ' : '', groupLink(c.groupId), ' ', groupStateBadge(c.state)])) : '–'));
    const rows = res.members.map(m => el('tr', { 'data-member': m.jobId },
      el('td', null, jobLink(m.jobType, m.jobId)),
      el('td', null, m.jobType),
      el('td', null, groupStateBadge(m.state)),
      el('td', { class: 'error-cell' }, m.result != null ? fold(m.result, 'gm-' + m.jobType + '/' + m.jobId) : '–'),
      el('td', { class: 'nowrap' }, timeCell(m.addedAt)),
      el('td', { class: 'nowrap' }, m.finishedAt ? timeCell(m.finishedAt) : '–')));
    show(id,
      el('p', null, link('#/groups', '← Groups')),
      el('div', { class: 'page-head' }, el('h1', null, 'Group ', el('code', null, g.groupId)), el('span', { class: 'muted' }, 'callback ' + g.callbackType)),
      el('section', { class: 'card' }, facts),
      el('section', { class: 'card' }, el('h2', null, 'Members'),
        table(['Job', 'Type', 'State', 'Result', 'Added', 'Finished'], rows, { id: 'group-members' }, 'No member.'),
        res.members.length < g.size ? el('p', { class: 'muted small' }, 'The first ' + res.members.length + ' of ' + num(g.size) + ', open ones first.') : null));
  }

  // a dependency edge: waiting (with where the job it waits for is: live, parked, missing), completed, failed
  function edgeBadge(e) {
    if (e.state !== 'waiting') return groupStateBadge(e.state);
    return [groupStateBadge('waiting'), ' ', el('span', { class: 'small muted' }, e.afterState === 'parked' ? 'on a parked job' : e.afterState === 'missing' ? 'on a job gone' : 'on a live job')];
  }

  function edgeRows(edges) {
    return edges.map(e => el('tr', { 'data-edge': e.jobType + '/' + e.jobId },
      el('td', null, jobLink(e.jobType, e.jobId)), el('td', null, e.jobType), el('td', null, edgeBadge(e)),
      el('td', { class: 'nowrap' }, e.endedAt ? timeCell(e.endedAt) : '–')));
  }

  // ------------------------------------------------------------------ audit

  function auditRow(a) {
    let what = a.subject || '';
    if (a.ids && a.ids.length) {
      what = el('span', null, a.ids.slice(0, 10).map((i, n) => [n ? ', ' : '', link('#/dead-letters/' + i, '#' + i)]), a.ids.length > 10 ? ' …' : '');
    } else if (a.filter) {
      what = 'filter ' + JSON.stringify(a.filter);
    }
    return el('tr', null, el('td', { class: 'num' }, a.id), el('td', null, timeCell(a.at)), el('td', null, a.actor),
      el('td', null, badge(a.action, 'action')), el('td', null, what), el('td', { class: 'num' }, num(a.count)),
      el('td', null, a.note || ''), el('td', null, a.details && Object.keys(a.details).length ? fold(JSON.stringify(a.details), 'audit-' + a.id) : ''));
  }

  async function pageAudit(id, params) {
    const q = new URLSearchParams();
    q.set('limit', '50');
    if (params.get('before')) q.set('before', params.get('before'));
    const res = await api('GET', '/audit?' + q);
    if (id !== S.renderId) return;
    const pager = el('div', { class: 'pager' },
      params.get('before') ? el('button', { type: 'button', onclick: () => go('/audit') }, '← Newest') : null,
      res.nextBefore ? el('button', { type: 'button', onclick: () => go('/audit', new URLSearchParams('before=' + res.nextBefore)) }, 'Older →') : null);
    show(id, el('div', { class: 'page-head' }, el('h1', null, 'Audit log'), el('span', { class: 'muted' }, 'Newest first.')),
      table(['Id', 'At', 'Who', 'Action', 'What', 'Count', 'Note', 'Details'], res.items.map(auditRow), { id: 'audit' },
        emptyState('No action recorded yet.', 'Every replay, discard, move back, reveal, forced breaker change, cancel, pause and resume made here or through the dead-letter API is written to layover.audit_log, with who and why.')), pager);
  }

  // ------------------------------------------------------------------ start

  async function start() {
    const op = document.getElementById('operator');
    try {
      S.session = await api('GET', '/session');
    } catch (e) {
      show(S.renderId, el('h1', null, 'Layover replay console'),
        e.status === 401 ? el('p', null, 'This console needs its access token. Open the link with ?token=… that the console printed at start.') : errorBox(e));
      return;
    }
    op.placeholder = S.session.defaultOperator;
    try { op.value = localStorage.getItem('layover.operator') || ''; } catch (e) { /* storage off */ }
    if (S.session.auth === 'external') op.placeholder = 'you';
    op.addEventListener('change', () => {
      const v = op.value.trim();
      if (/[^\x20-\x7e\xa0-\xff]/.test(v)) {
        flash('The operator name must use Latin-1 characters (it travels in an HTTP header).', 'error');
        op.value = '';
        return;
      }
      try { localStorage.setItem('layover.operator', v); } catch (e) { /* storage off */ }
    });
    if (S.session.user) {
      op.value = S.session.user;
      op.disabled = true;
      op.title = 'signed in to the application';
    }
    const menu = document.getElementById('menu-toggle');
    menu.addEventListener('click', () => {
      const open = document.querySelector('.top').classList.toggle('nav-open');
      menu.setAttribute('aria-expanded', open ? 'true' : 'false');
    });
    document.getElementById('nav').addEventListener('click', () => {
      document.querySelector('.top').classList.remove('nav-open');
      menu.setAttribute('aria-expanded', 'false');
    });
    const mode = document.getElementById('mode');
    if (S.session.readOnly) { mode.textContent = 'read-only'; mode.hidden = false; }
    const tz = document.getElementById('tz');
    const tzText = () => {
      tz.textContent = 'Times: ' + (S.tz === 'utc' ? 'UTC' : 'local');
      tz.title = 'Every time on these pages is in ' + zoneName() + '. Click for ' + (S.tz === 'utc' ? 'local time' : 'UTC') + '.';
      tz.setAttribute('data-tz', S.tz);
    };
    tzText();
    tz.addEventListener('click', () => {
      S.tz = S.tz === 'utc' ? 'local' : 'utc';
      try { localStorage.setItem('layover.console.tz', S.tz); } catch (e) { /* storage off */ }
      S.charts = new Map(); // charts are drawn in the zone too
      tzText();
      render();
    });
    window.addEventListener('hashchange', () => { flash(null); render(); });
    document.addEventListener('visibilitychange', () => { liveText(); if (document.visibilityState === 'visible') refresh(); });
    setInterval(refresh, REFRESH_MS);
    setInterval(tick, 1000);
    render();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
}());
