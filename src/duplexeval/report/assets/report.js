/* duplexeval report: the sample explorer. The page's numbers, tables and summary figures need no script; this
   draws a sample's timeline when its card is opened, plays its audio, and filters and searches the list.
   Per-sample data is one gzip'd JSON blob (#dx-data); inline audio sits in <script type="text/plain"> elements. */
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var DATA = null;

  function $(s, r) { return (r || document).querySelector(s); }
  function $$(s, r) { return Array.prototype.slice.call((r || document).querySelectorAll(s)); }
  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function loadData() {
    var node = document.getElementById('dx-data');
    if (!node) return Promise.resolve(null);
    var bin = atob(node.textContent.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    if (typeof DecompressionStream === 'undefined') return Promise.reject(new Error('this browser cannot decompress the page data'));
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(JSON.parse);
  }

  function peaks(b64) {
    var bin = atob(b64), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function audioSrc(ref) {
    if (!ref) return null;
    if (ref.charAt(0) === '#') {
      var node = document.getElementById(ref.slice(1));
      return node ? 'data:' + node.getAttribute('data-type') + ';base64,' + node.textContent.trim() : null;
    }
    return ref;
  }

  /* ------------------------------------------------------------------ timeline */
  var SPAN_FILL = { pause: '#ffe08a', interruption: '#f3c6f5' };
  var MARK_COLOR = { E: '#c2185b', S: '#d9602b', R: '#8e44ad' };

  function drawTimeline(box, item) {
    var W = Math.max(640, box.clientWidth || 900), gutter = 118, right = 10, top = 16;
    var T = item.T, x = function (t) { return gutter + (W - gutter - right) * Math.min(1, Math.max(0, t / T)); };
    var lanes = [];
    item.tracks.forEach(function (tr) {
      var words = tr.words && tr.words.length ? 18 : 0;
      lanes.push({ tr: tr, h: (tr.sys < 0 ? 46 : 54) + words });
    });
    var H = top + lanes.reduce(function (a, l) { return a + l.h; }, 0) + 26;
    var svg = el('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, class: 'tl', role: 'img' });
    svg.style.height = 'auto';
    (item.spans || []).forEach(function (s) {
      el('rect', { x: x(s[1]), y: top - 4, width: Math.max(1, x(s[2]) - x(s[1])), height: H - top - 22, fill: SPAN_FILL[s[0]] || '#e6e6e6', opacity: 0.55 }, svg);
    });
    var y = top;
    lanes.forEach(function (lane) {
      var tr = lane.tr, color = tr.color || '#7a869a';
      var lab = el('text', { x: 4, y: y + 16, class: 'lane' }, svg);
      lab.textContent = tr.label.length > 17 ? tr.label.slice(0, 16) + '\u2026' : tr.label;
      el('title', {}, lab).textContent = tr.label;
      var vadH = tr.sys < 0 ? 0 : 7, waveTop = y + vadH + 2, waveH = tr.sys < 0 ? 38 : 36, mid = waveTop + waveH / 2;
      el('line', { x1: gutter, x2: W - right, y1: mid, y2: mid, stroke: '#d5d9de' }, svg);
      if (tr.curve) {  /* a probability per 80 ms frame, with its threshold dashed and the commits as marks */
        var cv = peaks(tr.curve), pts = [];
        for (var j = 0; j < cv.length; j++) pts.push(x((j + 0.5) * 0.08).toFixed(1) + ',' + (waveTop + waveH - cv[j] / 255 * waveH).toFixed(1));
        el('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.4 }, svg);
        if (tr.level !== null && tr.level !== undefined) {
          var ly = waveTop + waveH - tr.level * waveH;
          el('line', { x1: gutter, x2: W - right, y1: ly, y2: ly, stroke: color, 'stroke-dasharray': '4 3', opacity: 0.7 }, svg);
        }
        (tr.ticks || []).forEach(function (t0) {
          var tk = el('path', { d: 'M' + x(t0) + ' ' + (y + 1) + 'l-4 -0 l4 8 l4 -8z', fill: '#2f9e44' }, svg);
          el('title', {}, tk).textContent = 'commit at ' + t0.toFixed(2) + ' s';
        });
        y += lane.h;
        return;
      }
      var p = tr.env ? peaks(tr.env) : null;
      var note = tr.note || 'no audio';
      if (p && !p.some(function (v) { return v > 0; })) { p = null; note = 'silence: no sound at all'; }
      if (p) {
        var n = p.length, up = [], down = [];
        for (var i = 0; i < n; i++) {
          var xx = (x(T * i / (n - 1 || 1))).toFixed(1), a = (p[i] / 255) * (waveH / 2);
          up.push(xx + ',' + (mid - a).toFixed(1));
          down.unshift(xx + ',' + (mid + a).toFixed(1));
        }
        el('polygon', { points: up.concat(down).join(' '), fill: color, opacity: tr.sys < 0 ? 0.55 : 0.8 }, svg);
      } else {
        var t = el('text', { x: gutter + 6, y: mid + 4, fill: '#8a8f98' }, svg);
        t.textContent = note;
      }
      (tr.vad || []).forEach(function (v) {
        var r = el('rect', { x: x(v[0]), y: y + 1, width: Math.max(1, x(v[1]) - x(v[0])), height: vadH, fill: '#2f9e44', rx: 2 }, svg);
        el('title', {}, r).textContent = 'VAD speech ' + v[0].toFixed(2) + '\u2013' + v[1].toFixed(2) + ' s';
      });
      if (tr.words && tr.words.length) {
        var wy = waveTop + waveH + 3, free = -1e9;
        tr.words.forEach(function (w) {
          var x0 = x(w[1]), x1 = w[2] === null ? x0 + 3 : Math.max(x0 + 2, x(w[2]));
          var r = el('rect', { x: x0, y: wy, width: Math.max(1, x1 - x0 - 1), height: 7, fill: '#3b6fd4', rx: 1.5 }, svg);
          el('title', {}, r).textContent = '"' + w[0] + '" ' + w[1].toFixed(2) + (w[2] === null ? '' : '\u2013' + w[2].toFixed(2)) + ' s';
          if (x0 >= free) {  /* a label only where the previous one has ended: labels never overprint */
            var tl = el('text', { x: x0, y: wy + 17, class: 'wl' }, svg);
            tl.textContent = w[0];
            free = x0 + 5.6 * w[0].length + 6;
          }
        });
      }
      y += lane.h;
    });
    (item.marks || []).forEach(function (m) {
      var c = MARK_COLOR[m[0]] || '#333';
      el('line', { x1: x(m[1]), x2: x(m[1]), y1: top - 4, y2: H - 22, stroke: c, 'stroke-width': 1.4 }, svg);
      var t = el('text', { x: x(m[1]), y: top - 6, fill: c, 'text-anchor': 'middle', 'font-weight': 700 }, svg);
      t.textContent = m[0];
    });
    var ay = H - 20, step = [0.5, 1, 2, 5, 10, 20, 30, 60].filter(function (s) { return T / s <= 12; })[0] || 60;
    el('line', { x1: gutter, x2: W - right, y1: ay, y2: ay, stroke: '#39404a' }, svg);
    for (var t = 0; t <= T + 1e-9; t += step) {
      el('line', { x1: x(t), x2: x(t), y1: ay, y2: ay + 4, stroke: '#39404a' }, svg);
      var tx = el('text', { x: x(t), y: ay + 15, 'text-anchor': 'middle', fill: '#39404a' }, svg);
      tx.textContent = (Math.round(t * 10) / 10) + (t === 0 ? ' s' : '');
    }
    var head = el('line', { x1: gutter, x2: gutter, y1: top - 4, y2: H - 22, stroke: '#111', 'stroke-width': 1.2, visibility: 'hidden' }, svg);
    box.appendChild(svg);
    return {
      svg: svg, head: head,
      at: function (t) { head.setAttribute('x1', x(t)); head.setAttribute('x2', x(t)); head.setAttribute('visibility', 'visible'); },
      time: function (evt) {
        var r = svg.getBoundingClientRect(), px = (evt.clientX - r.left) * W / r.width;
        return Math.min(T, Math.max(0, (px - gutter) / (W - gutter - right) * T));
      }
    };
  }

  /* ------------------------------------------------------------------ one card */
  function renderBody(card) {
    var body = $('.body', card);
    if (body.getAttribute('data-done')) return;
    body.setAttribute('data-done', '1');
    var item = DATA && DATA.items[card.id];
    if (!item) { body.appendChild(h('p', 'note', 'No per-sample data for this card.')); return; }
    var box = h('div');
    body.appendChild(box);
    var tl = item.tracks && item.tracks.length ? drawTimeline(box, item) : null;
    if (DATA.legend && tl) body.appendChild(legend(DATA.legend));
    var players = h('div', 'players'), audios = [];
    (item.tracks || []).forEach(function (tr) {
      var src = audioSrc(tr.audio);
      if (!src) return;
      var lab = h('label', '', tr.sys < 0 ? tr.label : tr.label + ' output');
      var a = document.createElement('audio');
      a.controls = true; a.preload = 'none'; a.src = src;
      a.setAttribute('data-track', tr.sys);
      lab.appendChild(a); players.appendChild(lab); audios.push(a);
    });
    if (audios.length) body.appendChild(players);
    if (tl) {
      var raf = 0;
      var follow = function () {
        var playing = audios.filter(function (a) { return !a.paused; })[0];
        if (playing) { tl.at(playing.currentTime); raf = requestAnimationFrame(follow); } else raf = 0;
      };
      audios.forEach(function (a) {
        a.addEventListener('play', function () {
          audios.forEach(function (b) { if (b !== a && !b.paused) b.pause(); });
          if (!raf) raf = requestAnimationFrame(follow);
        });
        a.addEventListener('timeupdate', function () { tl.at(a.currentTime); });
      });
      tl.svg.addEventListener('click', function (evt) {
        var t = tl.time(evt);
        tl.at(t);
        audios.forEach(function (a) { try { a.currentTime = t; } catch (e) { /* not loaded yet */ } });
      });
    }
    (item.said || []).forEach(function (s) {
      var p = h('p', 'said');
      p.appendChild(h('b', '', s[0] + ': '));
      p.appendChild(document.createTextNode(s[1] || '(no words)'));
      body.appendChild(p);
    });
    if (item.chats && item.chats.length) body.appendChild(chats(item.chats));
    if (item.fields && item.fields.rows.length) body.appendChild(fields(item.fields));
  }

  function legend(entries) {
    var d = h('div', 'legend');
    entries.forEach(function (e) {
      var s = h('span'), i = h('i');
      i.style.background = e[1];
      s.appendChild(i); s.appendChild(document.createTextNode(e[0]));
      d.appendChild(s);
    });
    return d;
  }

  function chats(list) {
    var row = h('div', 'chats');
    list.forEach(function (c) {
      var d = h('div', 'chat');
      d.appendChild(h('h5', '', c[0]));
      c[1].forEach(function (t) { d.appendChild(h('div', 'bubble ' + t[0], t[1])); });
      row.appendChild(d);
    });
    return row;
  }

  function fields(f) {
    var t = h('table', 'fields'), tr = h('tr');
    tr.appendChild(h('th', '', ''));
    f.head.forEach(function (c) { tr.appendChild(h('th', '', c)); });
    var thead = h('thead'); thead.appendChild(tr); t.appendChild(thead);
    var tb = h('tbody');
    f.rows.forEach(function (r) {
      var row = h('tr');
      row.appendChild(h('th', '', r[0]));
      r[1].forEach(function (c) { row.appendChild(h('td', '', c)); });
      tb.appendChild(row);
    });
    t.appendChild(tb);
    return t;
  }

  /* cards opened together ("open all shown") are drawn when they scroll into view, not all at once */
  var lazy = typeof IntersectionObserver === 'undefined' ? null : new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { lazy.unobserve(e.target); renderBody(e.target); }
    });
  }, { rootMargin: '600px 0px' });

  function toggle(card, open, later) {
    var want = open === undefined ? !card.classList.contains('open') : open;
    card.classList.toggle('open', want);
    if (want && later && lazy) lazy.observe(card); else if (want) renderBody(card);
  }

  /* ------------------------------------------------------------------ filters */
  function setupExplorer(root) {
    var cards = $$('article.smp', root);
    var selects = $$('select[data-filter]', root), search = $('input[type=search]', root), count = $('.count', root);
    var texts = cards.map(function (c) {
      var item = DATA && DATA.items[c.id];
      return ((item && item.text) || c.textContent).toLowerCase();
    });
    function apply() {
      var want = {};
      selects.forEach(function (s) { want[s.getAttribute('data-filter')] = s.value; });
      var q = (search && search.value || '').trim().toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
      cards.forEach(function (c, i) {
        var ok = true;
        var sys = want.system || '';
        if (want.group && c.getAttribute('data-group') !== want.group) ok = false;
        if (ok && (want.outcome || want.verdict)) {
          ok = $$('.v', c).some(function (v) {
            return (!sys || v.getAttribute('data-sys') === sys) &&
              (!want.outcome || v.getAttribute('data-outcome') === want.outcome) &&
              (!want.verdict || v.getAttribute('data-verdict') === want.verdict);
          });
        } else if (ok && sys) {
          ok = $$('.v', c).some(function (v) { return v.getAttribute('data-sys') === sys; });
        }
        if (ok && q.length) ok = q.every(function (w) { return texts[i].indexOf(w) >= 0; });
        c.classList.toggle('hidden', !ok);
        if (ok) shown++;
      });
      if (count) count.textContent = shown + ' of ' + cards.length + ' shown';
    }
    selects.forEach(function (s) { s.addEventListener('change', apply); });
    if (search) search.addEventListener('input', apply);
    cards.forEach(function (c) {
      $('h4', c).addEventListener('click', function (evt) {
        if (evt.target.closest('a')) return;
        toggle(c);
      });
    });
    $$('button[data-act]', root).forEach(function (b) {
      b.addEventListener('click', function () {
        var open = b.getAttribute('data-act') === 'open';
        cards.forEach(function (c) { if (!c.classList.contains('hidden')) toggle(c, open, true); });
      });
    });
    apply();
  }

  function followHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    var card = target && target.closest && target.closest('article.smp');
    if (card) {
      card.classList.remove('hidden');
      toggle(card, true);
      card.scrollIntoView({ block: 'start' });
    }
  }

  function start() {
    var roots = $$('.explorer');
    if (!roots.length) return;
    loadData().then(function (d) {
      DATA = d;
      roots.forEach(setupExplorer);
      $$('.explorer .loading').forEach(function (n) { n.remove(); });
      document.documentElement.setAttribute('data-ready', '1');
      followHash();
      window.addEventListener('hashchange', followHash);
    }).catch(function (e) {
      $$('.explorer .loading').forEach(function (n) { n.textContent = 'The sample data could not be read: ' + e.message; });
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
