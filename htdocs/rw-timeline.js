/* rw-timeline.js - draws rw-trace.json (bin/dirlock-demo --trace, format in
 * docs/rw-trace.md) for rw-timeline.html: per experiment an SVG with one
 * lane per process, its waits and holds as bars on a common time axis,
 * and a sentence on what the victim went through and why.  Trace text is
 * put on the page with textContent only.  When drawn, <body> gets
 * data-done="1" and data-lanes (the number of lanes drawn); on an error,
 * data-error. */
(function () {
  'use strict';

  var SVG_NS = 'http://www.w3.org/2000/svg';
  var FORMAT = 'dirlock-demo trace 1';
  /* The drawing's own units (scaled to the column): lane labels end at
   * LABEL_W, the plot spans PLOT_X..PLOT_X+PLOT_W, the victim's note may
   * run into the margin on the right. */
  var LABEL_W = 66, PLOT_X = 74, PLOT_W = 520, NOTE_W = 112, W = PLOT_X + PLOT_W + NOTE_W;
  var LANE_H = 22, LANE_GAP = 8, TOP = 8;

  var LOCK_TITLE = {
    fair: 'fair policy', writer: 'writer policy', reader: 'reader policy',
    simple: 'simple policy', flock: "the kernel's flock(2)", none: 'no lock'
  };
  var WHY = {
    'read-attack': {
      fair: 'After a read phase a waiting writer goes first: readers that come after it wait.',
      writer: 'A waiting writer holds off new readers.',
      reader: 'Readers never wait for a waiting writer, so two overlapping readers keep it out for as long ' +
        'as they keep coming.',
      simple: 'One holder at a time, readers too: the writer gets the next turn.',
      flock: "flock(2)'s shared locks let a new reader in while a writer waits, as the reader policy does.",
      none: 'No lock: nobody waits, and nothing is protected.'
    },
    'write-attack': {
      fair: 'After a write phase the readers that waited go first.',
      writer: 'Waiting writers go before readers, so two alternating writers keep the reader out.',
      reader: 'Readers are preferred: the reader waits only for the writer that holds the lock.',
      simple: 'One holder at a time: the reader gets a turn between the writers.',
      flock: 'flock(2) keeps no queue: who gets the lock next is up to the scheduler, so this wait varies ' +
        'from run to run.',
      none: 'No lock: nobody waits, and nothing is protected.'
    }
  };

  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVG_NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function ms(v) { return Math.round(v).toLocaleString('en-US') + ' ms'; }

  function isSpan(s) {
    return Array.isArray(s) && s.length === 3 && typeof s[0] === 'number' &&
      (s[1] === null || typeof s[1] === 'number') && typeof s[2] === 'number';
  }

  function check(trace) {
    if (!trace || trace.format !== FORMAT) throw new Error('not a "' + FORMAT + '" file');
    if (!Array.isArray(trace.experiments)) throw new Error('no experiments');
    trace.experiments.forEach(function (x) {
      if (!Array.isArray(x.processes)) throw new Error('an experiment without processes');
      x.processes.forEach(function (p) {
        if (!Array.isArray(p.spans) || !p.spans.every(isSpan)) throw new Error('a malformed lane');
      });
    });
  }

  /* The victim's first request: [asked, got, released]. */
  function victimOf(x) {
    var v = x.processes.filter(function (p) { return p.role === 'victim'; })[0];
    return v && v.spans.length ? { proc: v, span: v.spans[0] } : null;
  }

  function verdict(x, seconds) {
    var v = victimOf(x);
    if (!v) return { text: 'The victim left no record.', lockout: false };
    var who = v.proc.mode === 'write' ? 'The writer' : 'The reader';
    if (v.span[1] === null) {
      return { text: who + ' never got the lock: it gave up after ' + ms(v.span[2] - v.span[0]) + '.', lockout: true };
    }
    var wait = v.span[1] - v.span[0];
    /* As tests/rw-attack.t judges it: most of the rest of the attack. */
    if (wait >= 0.8 * (seconds - 1) * 1000) {
      return { text: who + ' was locked out: it waited ' + ms(wait) + ', until the attack ended.', lockout: true };
    }
    return { text: who + ' got in after ' + ms(wait) + '.', lockout: false };
  }

  function draw(x, seconds, tEnd) {
    var n = x.processes.length;
    var plotH = n * (LANE_H + LANE_GAP);
    var H = TOP + plotH + 26;
    var scale = PLOT_W / tEnd;
    var X = function (t) { return PLOT_X + Math.max(0, Math.min(tEnd, t)) * scale; };
    var svg = svgEl('svg', { 'class': 'tl', viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    /* time axis, a tick a second */
    var axisY = TOP + plotH;
    svg.appendChild(svgEl('line', { x1: PLOT_X, x2: PLOT_X + PLOT_W, y1: axisY, y2: axisY, 'class': 'tl-axis' }));
    for (var s = 0; s * 1000 <= tEnd; s++) {
      var tx = X(s * 1000);
      svg.appendChild(svgEl('line', { x1: tx, x2: tx, y1: TOP, y2: axisY + 4, 'class': 'tl-axis' }));
      svg.appendChild(svgEl('text', { x: tx, y: axisY + 18, 'text-anchor': 'middle', 'class': 'tl-tick' }, s + ' s'));
    }
    x.processes.forEach(function (p, i) {
      var y = TOP + i * (LANE_H + LANE_GAP);
      var g = svgEl('g', {
        'class': 'lane', 'data-experiment': x.scenario + '/' + x.lock,
        'data-proc': p.name, 'data-role': p.role, 'data-spans': p.spans.length
      });
      g.appendChild(svgEl('text', {
        x: LABEL_W, y: y + 15, 'text-anchor': 'end', 'class': p.role === 'victim' ? 'tl-victim' : ''
      }, p.name));
      g.appendChild(svgEl('rect', { x: PLOT_X, y: y, width: PLOT_W, height: LANE_H, 'class': 'tl-lane-bg' }));
      p.spans.forEach(function (sp) {
        var got = sp[1] === null ? sp[2] : sp[1];
        var ww = X(got) - X(sp[0]);
        if (ww > 0) {
          g.appendChild(svgEl('rect', {
            x: X(sp[0]), y: y + 3, width: ww.toFixed(2), height: LANE_H - 6, 'class': 'span span-wait'
          }));
        }
        if (sp[1] !== null) {
          var hw = Math.max(2, X(sp[2]) - X(sp[1])); /* a 10 ms hold stays visible */
          g.appendChild(svgEl('rect', {
            x: X(sp[1]), y: y, width: hw.toFixed(2), height: LANE_H,
            'class': 'span span-hold-' + (p.mode === 'write' ? 'write' : 'read')
          }));
        }
      });
      if (p.role === 'victim' && p.spans.length) {
        var v = p.spans[0];
        var wait = (v[1] === null ? v[2] : v[1]) - v[0];
        var label = (v[1] === null ? 'gave up after ' : 'waited ') + ms(wait);
        var after = X(v[2]) + 6;
        var anchor = after + NOTE_W - 8 > W ? 'end' : 'start';
        g.appendChild(svgEl('text', {
          x: anchor === 'end' ? X(v[0]) - 6 : after, y: y + 15, 'text-anchor': anchor, 'class': 'tl-note'
        }, label));
      }
      svg.appendChild(g);
    });
    return svg;
  }

  function render(trace) {
    var seconds = typeof trace.seconds === 'number' ? trace.seconds : 5;
    var tEnd = 1000;
    trace.experiments.forEach(function (x) {
      x.processes.forEach(function (p) {
        p.spans.forEach(function (sp) { tEnd = Math.max(tEnd, sp[2]); });
      });
    });
    tEnd = Math.ceil(tEnd / 1000) * 1000;
    var lanes = 0;
    trace.experiments.forEach(function (x) {
      var where = document.getElementById(x.scenario);
      if (!where) return;
      var sec = el('section', { 'class': 'tl-experiment', 'data-experiment': x.scenario + '/' + x.lock });
      var v = verdict(x, seconds);
      sec.classList.add(v.lockout ? 'tl-lockout' : 'tl-prompt');
      sec.appendChild(el('h3', {}, LOCK_TITLE[x.lock] || String(x.lock)));
      var svg = draw(x, seconds, tEnd);
      svg.setAttribute('aria-label', (LOCK_TITLE[x.lock] || x.lock) + ': ' + v.text);
      sec.appendChild(svg);
      var why = (WHY[x.scenario] || {})[x.lock] || '';
      sec.appendChild(el('p', {}, v.text + (why ? ' ' + why : '') +
        (x.dropped > 0 ? ' (' + x.dropped + ' lock requests were not recorded.)' : '')));
      where.appendChild(sec);
      lanes += x.processes.length;
    });
    var when = typeof trace.recorded === 'string' ? trace.recorded : 'at an unknown time';
    document.getElementById('source').textContent = 'Recorded ' + when + ' on a ' + trace.cpus +
      '-CPU machine, ' + seconds + ' s per experiment; ' + trace.experiments.length + ' experiments, ' +
      lanes + ' lanes.';
    document.body.setAttribute('data-lanes', String(lanes));
    document.body.setAttribute('data-done', '1');
  }

  async function start() {
    try {
      var r = await fetch('rw-trace.json', { cache: 'no-store' });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      var trace = await r.json();
      check(trace);
      render(trace);
    } catch (e) {
      document.getElementById('source').textContent = 'Could not draw rw-trace.json: ' + e.message +
        ' (make demo-rw writes it).';
      document.body.setAttribute('data-error', '1');
    }
  }

  document.addEventListener('DOMContentLoaded', start);
})();
