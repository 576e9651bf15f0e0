/* race.js - the lost-update experiment run from the browser (race.html).
 *
 * For each board at /board/<name>/ that answers, one after another:
 *   1. GET api/info (lock mode, store, delay_ms, max_messages);
 *   2. GET the board page with the browser's cookie and take the CSRF
 *      token from its form (the board sets the cookie on that answer);
 *   3. CLIENTS simulated clients run at once, each sending POSTS posts
 *      one after another (urlencoded name, subject, body, token to
 *      <board>/post), every body unique to this run; the board's 303 is
 *      "acknowledged", any other answer "rejected" with its status;
 *   4. read the whole board back through api/messages, paging forward
 *      (since=0&limit=1000, then since=<highest no seen> until a page is
 *      empty), and count an acknowledged post as stored when its body is
 *      there; lost = acknowledged - stored;
 *   5. draw the board's bars and one sentence on what happened and why.
 * Everything that comes from a board is put on the page as text
 * (textContent, attribute values), never parsed as HTML into the page.
 *
 * ?auto=1 runs it on load ( &clients=N&posts=K optional); at the end the
 * table #results holds one row per board and <body> gets data-done="1"
 * (data-run names the run: every body starts with "race <run> "). */
(function () {
  'use strict';

  var BOARDS = ['none', 'wrong', 'mkdir', 'rw', 'flock', 'sqlite'];
  var LIMITS = { clients: [1, 32, 8], posts: [1, 50, 10] };
  var KINDS = ['acknowledged', 'stored', 'lost', 'rejected'];
  var SVG_NS = 'http://www.w3.org/2000/svg';

  /* Why a board keeps or loses posts (as in README.md). */
  var WHY = {
    none: 'No lock: two requests read the same log, each adds its message and writes, ' +
      'and the later write replaces the earlier one, so a post answered "303 stored" is gone.',
    wrong: 'The lock is taken only around the write: both requests still read the same old log ' +
      'before either writes, so the second write still throws the first message away. ' +
      'The lock must cover the read as well as the write.',
    mkdir: "The library's exclusive lock covers the whole read-modify-write: every request reads " +
      'the log the previous one wrote (the lock holder stores every queued post in one rewrite).',
    rw: 'Posts take the intent lock (readers keep reading), read and write the new file, and upgrade ' +
      'to exclusive just for the rename; page views take the shared lock.',
    flock: "The kernel's flock(2) around the same read-modify-write: correct too, but without owner " +
      'records or stale breaking, and not across NFS clients.',
    sqlite: "SQLite's own locking (BEGIN IMMEDIATE in WAL mode) covers the read of the highest number " +
      'and the insert.'
  };
  var UNLOCKED = { none: true, wrong: true };

  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVG_NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function clamp(v, lim) {
    var n = parseInt(v, 10);
    if (!isFinite(n)) return lim[2];
    return Math.min(lim[1], Math.max(lim[0], n));
  }

  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many); }

  function runId() {
    var b = new Uint8Array(6);
    crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join('');
  }

  async function getJSON(url) {
    var r = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
    if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
    return r.json();
  }

  /* A board is up when its API answers; api/info may be missing on an
   * older board (the delay is then unknown). */
  async function probe(name) {
    var base = '/board/' + name + '/';
    var info = null;
    try {
      info = await getJSON(base + 'api/info');
    } catch (e) {
      info = null;
    }
    if (!info) {
      try {
        await getJSON(base + 'api/messages?since=0&limit=1');
      } catch (e) {
        return null;
      }
      info = {};
    }
    return {
      name: name,
      base: base,
      mode: typeof info.mode === 'string' ? info.mode : null,
      store: typeof info.store === 'string' ? info.store : null,
      delay: typeof info.delay_ms === 'number' ? info.delay_ms : null,
      maxMessages: typeof info.max_messages === 'number' ? info.max_messages : null
    };
  }

  async function csrfToken(board) {
    var r = await fetch(board.base, { credentials: 'same-origin', cache: 'no-store' });
    if (!r.ok) throw new Error('the board page answered HTTP ' + r.status);
    var doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    var input = doc.querySelector('input[name="token"]');
    if (!input || !input.value) throw new Error('the board page has no form token');
    return input.value;
  }

  function formBody(fields) {
    return Object.keys(fields).map(function (k) {
      return encodeURIComponent(k) + '=' + encodeURIComponent(fields[k]);
    }).join('&');
  }

  /* One post: 'ack' (303), or the status it was refused with. */
  async function postOne(board, token, body, client) {
    try {
      var r = await fetch(board.base + 'post', {
        method: 'POST',
        credentials: 'same-origin',
        cache: 'no-store',
        redirect: 'manual', /* the 303 itself, not the page it points to */
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: formBody({ name: 'race client ' + client, subject: 'race', body: body, token: token })
      });
      /* A fetch that does not follow redirects sees a redirect as an
       * "opaqueredirect" without its status; the only redirect post
       * answers is its 303 to the list. */
      if (r.type === 'opaqueredirect' || r.status === 303) return 'ack';
      return String(r.status);
    } catch (e) {
      return 'network error';
    }
  }

  /* Every message body of the board, paging forward through the API. */
  async function readBack(board) {
    var bodies = new Set();
    var since = 0;
    for (var pages = 0; pages < 10000; pages++) {
      var j = await getJSON(board.base + 'api/messages?since=' + since + '&limit=1000');
      var msgs = j && Array.isArray(j.messages) ? j.messages : null;
      if (!msgs) throw new Error('api/messages did not return a list of messages');
      if (msgs.length === 0) return bodies;
      var top = since;
      msgs.forEach(function (m) {
        if (typeof m.body === 'string') bodies.add(m.body);
        if (typeof m.no === 'number' && m.no > top) top = m.no;
      });
      if (top <= since) throw new Error('api/messages did not move forward past ' + since);
      since = top;
    }
    throw new Error('api/messages never came to an end');
  }

  /* ---- drawing --------------------------------------------------------- */

  /* The chart is drawn in CSS pixels: its viewBox is as wide as the
   * chart is on the page (layout(), again when the window changes), so
   * its text is 14 px on a phone as on a desktop, and the bars take what
   * the labels and the numbers leave. */
  var BAR_X = 118, VALUE_W = 44, ROW_H = 26, TOP = 6, HEIGHT = TOP * 2 + ROW_H * KINDS.length;

  function card(board) {
    var sec = el('section', { 'class': 'race-board', 'data-board': board.name });
    var h = el('h3');
    h.appendChild(el('a', { href: board.base }, board.name));
    var meta = [];
    if (board.mode !== null) meta.push(board.store === 'sqlite' ? 'SQLite store' : 'lock mode ' + board.mode);
    meta.push(board.delay === null ? 'delay unknown' : 'delay ' + board.delay + ' ms');
    h.appendChild(el('span', { 'class': 'race-meta' }, meta.join(', ')));
    sec.appendChild(h);
    var svg = svgEl('svg', {
      'class': 'race-bars', viewBox: '0 0 640 ' + HEIGHT,
      role: 'img', 'aria-label': board.name + ': waiting'
    });
    board.barW = 640 - BAR_X - VALUE_W;
    board.sent = 0;
    KINDS.forEach(function (kind, i) {
      var y = TOP + i * ROW_H;
      svg.appendChild(svgEl('text', { x: 0, y: y + 17, 'class': 'race-label' }, kind));
      svg.appendChild(svgEl('rect', { x: BAR_X, y: y + 3, width: board.barW, height: ROW_H - 8, 'class': 'bar-track' }));
      svg.appendChild(svgEl('rect', {
        x: BAR_X, y: y + 3, width: 0, height: ROW_H - 8,
        'class': 'bar bar-' + kind, 'data-kind': kind, 'data-value': 0
      }));
      svg.appendChild(svgEl('text', { x: BAR_X + 8, y: y + 17, 'class': 'race-value', 'data-kind': kind }, ''));
    });
    sec.appendChild(svg);
    sec.appendChild(el('p', { 'class': 'race-why' }, 'Waiting for its turn.'));
    board.card = sec;
    return sec;
  }

  /* Set one bar: width out of `sent`, number beside it. */
  function setBar(board, kind, value, sent) {
    var rect = board.card.querySelector('rect.bar[data-kind="' + kind + '"]');
    var text = board.card.querySelector('text.race-value[data-kind="' + kind + '"]');
    board.sent = sent;
    var w = sent > 0 ? (board.barW * value) / sent : 0;
    rect.setAttribute('width', w.toFixed(2));
    rect.setAttribute('data-value', String(value));
    text.setAttribute('x', String(BAR_X + w + 8));
    text.textContent = value === null ? '' : String(value);
  }

  /* Fit a board's chart to the width it has on the page (its card is in
   * the document): one viewBox unit per CSS pixel. */
  function layout(board) {
    var svg = board.card.querySelector('svg');
    var width = Math.round(svg.getBoundingClientRect().width);
    if (!(width > 0)) return;
    width = Math.max(width, BAR_X + VALUE_W + 60);
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + HEIGHT);
    board.barW = width - BAR_X - VALUE_W;
    board.card.querySelectorAll('rect.bar-track').forEach(function (t) { t.setAttribute('width', board.barW); });
    KINDS.forEach(function (kind) {
      var rect = board.card.querySelector('rect.bar[data-kind="' + kind + '"]');
      var text = board.card.querySelector('text.race-value[data-kind="' + kind + '"]');
      var value = Number(rect.getAttribute('data-value')) || 0;
      var w = board.sent > 0 ? (board.barW * value) / board.sent : 0;
      rect.setAttribute('width', w.toFixed(2));
      text.setAttribute('x', String(BAR_X + w + 8));
    });
  }

  function show(list, board) {
    list.appendChild(card(board));
    layout(board);
  }

  function say(board, text) { board.card.querySelector('.race-why').textContent = text; }

  function sentence(board, r) {
    var parts = [];
    var name = board.name;
    var why = WHY[name] || (board.mode && WHY[board.mode]) || '';
    if (r.lost > 0) {
      parts.push('Lost ' + r.lost + ' of ' + r.ack + ' acknowledged posts.');
      parts.push(UNLOCKED[name] || UNLOCKED[board.mode] ? why :
        'A board with this lock should lose none: this is a fault worth reporting.');
    } else if (UNLOCKED[name] || UNLOCKED[board.mode]) {
      parts.push('Nothing lost this time, though nothing stops it: this board loses posts only when two ' +
        'requests overlap inside its read-modify-write window' +
        (board.delay === 0 ? ', and without the demonstration delay that window is very short.' : '.'));
      parts.push(why);
    } else {
      parts.push('All ' + r.ack + ' acknowledged posts are stored: nothing lost.');
      parts.push(why);
    }
    if (r.rejectedCount > 0) {
      var codes = Object.keys(r.rejected).map(function (k) { return r.rejected[k] + ' \u00d7 ' + k; });
      parts.push(plural(r.rejectedCount, 'post was', 'posts were') + ' refused (' + codes.join(', ') +
        '): refused, not lost.');
    }
    return parts.join(' ');
  }

  function tableRow(board, r) {
    var tr = el('tr', { 'data-board': board.name });
    tr.appendChild(el('th', { scope: 'row' }, board.name));
    [['sent', r.sent], ['acknowledged', r.ack], ['rejected', r.rejectedCount],
      ['stored', r.stored], ['lost', r.lost]].forEach(function (c) {
      tr.appendChild(el('td', { 'data-field': c[0] }, c[1]));
    });
    $('results').tBodies[0].appendChild(tr);
  }

  /* ---- one board ------------------------------------------------------- */

  async function race(board, clients, posts, run, status) {
    var sent = clients * posts;
    var r = { sent: sent, ack: 0, stored: 0, lost: 0, rejected: {}, rejectedCount: 0 };
    if (board.maxMessages !== null && sent > board.maxMessages) {
      say(board, 'Skipped: this board keeps only its last ' + board.maxMessages +
        ' messages, fewer than the ' + sent + ' posts of the run.');
      return null;
    }
    say(board, 'Posting\u2026');
    var token = await csrfToken(board);
    var acked = [];
    var answered = 0;
    var t0 = performance.now();
    async function client(c) {
      for (var k = 1; k <= posts; k++) {
        var body = 'race ' + run + ' ' + board.name + ' client ' + c + ' post ' + k;
        var res = await postOne(board, token, body, c);
        answered++;
        if (res === 'ack') {
          acked.push(body);
          r.ack++;
          setBar(board, 'acknowledged', r.ack, sent);
        } else {
          r.rejected[res] = (r.rejected[res] || 0) + 1;
          r.rejectedCount++;
          setBar(board, 'rejected', r.rejectedCount, sent);
        }
        status(board.name + ': ' + answered + ' of ' + sent + ' posts answered');
      }
    }
    var all = [];
    for (var c = 1; c <= clients; c++) all.push(client(c));
    await Promise.all(all);
    var seconds = (performance.now() - t0) / 1000;
    status(board.name + ': reading the board back');
    var bodies = await readBack(board);
    r.stored = acked.filter(function (b) { return bodies.has(b); }).length;
    r.lost = r.ack - r.stored;
    KINDS.forEach(function (kind) {
      setBar(board, kind, kind === 'acknowledged' ? r.ack : kind === 'stored' ? r.stored :
        kind === 'lost' ? r.lost : r.rejectedCount, sent);
    });
    board.card.querySelector('svg').setAttribute('aria-label', board.name + ': ' + r.ack + ' acknowledged, ' +
      r.stored + ' stored, ' + r.lost + ' lost, ' + r.rejectedCount + ' rejected of ' + sent + ' sent');
    board.card.classList.add(r.lost > 0 ? 'race-lost' : 'race-kept');
    say(board, sentence(board, r) + ' (' + sent + ' posts in ' + seconds.toFixed(1) + ' s.)');
    board.card.setAttribute('data-done', '1');
    return r;
  }

  /* ---- the page -------------------------------------------------------- */

  var boards = [];

  function describeDelay() {
    var p = $('delay');
    if (boards.length === 0) {
      p.textContent = 'No board answers at /board/<name>/api/messages: start them with "make demo" ' +
        '(or "make start").';
      return;
    }
    var delays = {};
    boards.forEach(function (b) { delays[b.delay === null ? 'unknown' : b.delay] = true; });
    var keys = Object.keys(delays);
    var names = boards.map(function (b) { return b.name; }).join(', ');
    var text = 'Boards up: ' + names + '. ';
    if (keys.length === 1 && keys[0] !== 'unknown' && Number(keys[0]) > 0) {
      text += 'They run with a ' + keys[0] + ' ms demonstration delay inside the read-modify-write window, ' +
        'so overlapping posts to none and wrong lose each other easily.';
    } else if (keys.length === 1 && keys[0] === '0') {
      text += 'They run without the demonstration delay (delay_ms 0): none and wrong still lose posts ' +
        'whenever requests overlap, but the window is short and a run may lose few or none. ' +
        '"make demo" (or "make start DELAY_MS=20") widens it.';
    } else {
      text += 'Their demonstration delays differ or are unknown; each board shows its own.';
    }
    p.textContent = text;
  }

  async function runAll(clients, posts) {
    var button = $('run');
    button.disabled = true;
    document.body.removeAttribute('data-done');
    var run = runId();
    document.body.setAttribute('data-run', run);
    var status = function (t) { $('status').textContent = t; };
    var tbody = $('results').tBodies[0];
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    var list = $('boards');
    while (list.firstChild) list.removeChild(list.firstChild);
    boards.forEach(function (b) { show(list, b); });
    var failures = 0;
    for (var i = 0; i < boards.length; i++) {
      var b = boards[i];
      try {
        var r = await race(b, clients, posts, run, status);
        if (r) tableRow(b, r);
      } catch (e) {
        failures++;
        say(b, 'The run could not finish: ' + e.message);
      }
    }
    status('Done: ' + clients + ' clients \u00d7 ' + posts + ' posts to each of ' +
      plural(boards.length, 'board', 'boards') + (failures ? ', ' + failures + ' could not finish' : '') + '.');
    button.disabled = false;
    document.body.setAttribute('data-done', '1');
  }

  async function start() {
    var q = new URLSearchParams(location.search);
    var clients = $('clients'), posts = $('posts');
    if (q.has('clients')) clients.value = clamp(q.get('clients'), LIMITS.clients);
    if (q.has('posts')) posts.value = clamp(q.get('posts'), LIMITS.posts);
    var found = await Promise.all(BOARDS.map(probe));
    boards = found.filter(function (b) { return b !== null; });
    describeDelay();
    var list = $('boards');
    boards.forEach(function (b) { show(list, b); });
    var pending = null;
    window.addEventListener('resize', function () {
      if (pending) cancelAnimationFrame(pending);
      pending = requestAnimationFrame(function () { boards.forEach(layout); });
    });
    $('race-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      clients.value = clamp(clients.value, LIMITS.clients);
      posts.value = clamp(posts.value, LIMITS.posts);
      runAll(Number(clients.value), Number(posts.value));
    });
    if (boards.length === 0) {
      document.body.setAttribute('data-done', '1');
      return;
    }
    $('run').disabled = false;
    if (q.get('auto') === '1') runAll(Number(clients.value), Number(posts.value));
  }

  document.addEventListener('DOMContentLoaded', start);
})();
