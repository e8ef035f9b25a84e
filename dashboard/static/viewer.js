// The replay viewer: an SVG board per frame, stepping through the turns (no libraries).
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var FILES = "abcdefg";
  var COLORS = ["#2b5fd9", "#e8710a"];
  var replay = JSON.parse(document.getElementById("replay").textContent);
  var record = JSON.parse(document.getElementById("record").textContent);
  var n = replay.board || record.rules.board;
  var frames = replay.frames || [];
  var err = replay.error;
  var broken = err && err.turn !== null && err.turn !== undefined ? err.turn : null;
  var last = frames.length - 1 + (broken !== null ? 1 : 0);
  var boardEl = document.getElementById("board");
  var idx = Math.min(parseInt(boardEl.dataset.start || "0", 10), last);
  var CELL = 64;

  function el(name, attrs, text) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function xy(sq) { // row 1 at the bottom, file a on the left
    return [FILES.indexOf(sq[0]) * CELL, (n - parseInt(sq.slice(1), 10)) * CELL];
  }
  function squaresOf(moves) {
    var out = [];
    (moves || []).forEach(function (m) { var p = m.split("-"); out.push(p[0], p[1]); });
    return out;
  }
  function draw(i) {
    var isBroken = broken !== null && i === frames.length;
    var frame = frames[Math.min(i, frames.length - 1)] || { pieces: [], traps: [] };
    var turn = isBroken ? record.turns[broken] : frame;
    var svg = el("svg", { width: n * CELL + 24, height: n * CELL + 24, viewBox: "-20 0 " + (n * CELL + 24) + " " + (n * CELL + 24), role: "img", "aria-label": "board" });
    for (var r = 0; r < n; r++) {
      for (var f = 0; f < n; f++) {
        svg.appendChild(el("rect", { x: f * CELL, y: r * CELL, width: CELL, height: CELL, fill: (r + f) % 2 ? "#e9edf5" : "#f8f9fb", stroke: "#d0d5dd" }));
      }
      svg.appendChild(el("text", { x: -12, y: r * CELL + CELL / 2 + 4, "font-size": 11, fill: "#667085" }, String(n - r)));
    }
    for (var c = 0; c < n; c++) {
      svg.appendChild(el("text", { x: c * CELL + CELL / 2 - 3, y: n * CELL + 14, "font-size": 11, fill: "#667085" }, FILES[c]));
    }
    (frame.traps || []).forEach(function (t) {
      var p = xy(t);
      svg.appendChild(el("rect", { x: p[0] + 4, y: p[1] + 4, width: CELL - 8, height: CELL - 8, fill: "none", stroke: "#7a2e0e", "stroke-dasharray": "3 3", "stroke-width": 2, "class": "trap" }));
    });
    var hl = squaresOf(turn && turn.moves);
    // The broken turn: the squares the rule is about (those its message names, e.g. the trap
    // square of R8.8 or the square passed over of R2.2) in red; the tried moves stay grey.
    var focus = isBroken ? focusOf(err, turn) : [];
    hl.forEach(function (sq, k) {
      if (focus.indexOf(sq) >= 0) { return; }
      var p = xy(sq);
      svg.appendChild(el("rect", { x: p[0] + 1, y: p[1] + 1, width: CELL - 2, height: CELL - 2, fill: "none", stroke: isBroken ? "#98a2b3" : (k % 2 ? "#12b76a" : "#98a2b3"), "stroke-width": 3, "stroke-dasharray": isBroken ? "6 4" : "", "class": "move" }));
    });
    targetsOf(turn).forEach(function (sq) {
      if (isBroken || !onBoard(sq)) { return; }
      var p = xy(sq);
      svg.appendChild(el("rect", { x: p[0] + 6, y: p[1] + 6, width: CELL - 12, height: CELL - 12, fill: "none", stroke: "#7a5af8", "stroke-width": 2, "stroke-dasharray": "2 2", "class": "target" }));
    });
    focus.forEach(function (sq) {
      var p = xy(sq);
      svg.appendChild(el("rect", { x: p[0] + 1, y: p[1] + 1, width: CELL - 2, height: CELL - 2, fill: "none", stroke: "#c4320a", "stroke-width": 4, "class": "focus", "data-square": sq }));
    });
    (frame.pieces || []).forEach(function (pc) {
      var p = xy(pc.square || pc.sq);
      var g = el("g", { "class": "piece" });
      g.appendChild(el("circle", { cx: p[0] + CELL / 2, cy: p[1] + CELL / 2, r: CELL * 0.36, fill: COLORS[pc.side], stroke: pc.stunned ? "#fdb022" : (pc.immobile ? "#98a2b3" : "#1d2430"), "stroke-width": pc.stunned || pc.immobile ? 4 : 1.5, "stroke-dasharray": pc.wounded ? "4 3" : "" }));
      g.appendChild(el("text", { x: p[0] + CELL / 2, y: p[1] + CELL / 2 + 6, "text-anchor": "middle", "font-size": 18, "font-weight": 700, fill: "#fff" }, pc.crown ? "♛" : String(pc.rank)));
      var marks = (pc.stunned ? "⚡" : "") + (pc.immobile && !pc.stunned ? "❄" : "") + (pc.shield ? "🛡" : "");
      if (marks) { g.appendChild(el("text", { x: p[0] + CELL - 14, y: p[1] + 14, "font-size": 12 }, marks)); }
      var title = el("title", {}, "side " + pc.side + ", " + (pc.crown ? "crown" : "rank " + pc.rank) + " from " + pc.start + (pc.wounded ? ", wounded" : "") + (pc.stunned ? ", stunned" : "") + (pc.immobile ? ", immobile" : ""));
      g.appendChild(title);
      svg.appendChild(g);
    });
    boardEl.replaceChildren(svg);
    var where = document.getElementById("where");
    var info = document.getElementById("info");
    if (isBroken) {
      where.textContent = "turn " + broken + " (breaks " + err.rule + ")";
      info.textContent = err.message + " — tried: " + describe(turn);
    } else if (frame.turn === null || frame.turn === undefined) {
      where.textContent = "start";
      info.textContent = "Points " + (frame.points || []).join(" : ") + "; side " + (record.first) + " moves first.";
    } else {
      where.textContent = "after turn " + frame.turn + " of " + record.turns.length;
      info.textContent = describe(frame) + " · points " + (frame.points || []).join(" : ");
    }
    document.querySelectorAll("#turns li").forEach(function (li) {
      li.classList.toggle("on", parseInt(li.dataset.index, 10) === i);
    });
    boardEl.dataset.index = String(i);
  }
  function onBoard(sq) {
    return typeof sq === "string" && /^[a-g][1-7]$/.test(sq) && FILES.indexOf(sq[0]) < n && parseInt(sq.slice(1), 10) <= n;
  }
  function targetsOf(t) {
    if (!t || !t.target) { return []; }
    return (Array.isArray(t.target) ? t.target : [t.target]).filter(function (x) { return typeof x === "string"; });
  }
  function focusOf(e, t) {
    var named = [];
    ((e && e.message) || "").replace(/\b[a-g][1-7]\b/g, function (sq) {
      if (onBoard(sq) && named.indexOf(sq) < 0) { named.push(sq); }
      return sq;
    });
    var moves = squaresOf(t && t.moves);
    var targets = targetsOf(t);
    // a square named besides the move's own ends (passed over, a trap, a power's target)
    var extra = named.filter(function (sq) { return moves.indexOf(sq) < 0; });
    if (extra.length) { return extra; }
    var aimed = named.filter(function (sq) { return targets.indexOf(sq) >= 0; });
    if (aimed.length) { return aimed; }
    if (named.length) { return named; }
    return targets.length ? targets.filter(onBoard) : moves.filter(onBoard);
  }
  function describe(t) {
    if (!t) { return ""; }
    var s = (t.side !== undefined && t.side !== null ? "side " + t.side + ": " : "");
    if (t.power) { s += t.power + (t.target ? " " + JSON.stringify(t.target) : "") + ", "; }
    s += t.moves && t.moves.length ? t.moves.join(", ") : "pass";
    var ev = t.events || {};
    var words = [];
    ["fights", "removed", "stuns", "catches", "promotions", "trapped"].forEach(function (k) { if (ev[k]) { words.push(ev[k] + " " + k); } });
    if (words.length) { s += " — " + words.join(", "); }
    return s;
  }
  function list() {
    var ol = document.getElementById("turns"); // a plain list: each item says its turn
    var add = function (i, text, cls) {
      var li = document.createElement("li");
      li.dataset.index = String(i);
      li.textContent = text;
      if (cls) { li.className = cls; }
      li.addEventListener("click", function () { idx = i; draw(idx); });
      ol.appendChild(li);
    };
    add(0, "start");
    frames.slice(1).forEach(function (f, k) { add(k + 1, "turn " + f.turn + ": " + describe(f)); });
    if (broken !== null) { add(frames.length, "turn " + broken + ": " + describe(record.turns[broken]) + " ✗ " + err.rule, "broken"); }
    if (replay.ended) { var li = document.createElement("li"); li.textContent = "ended: " + (replay.ended.winner === null ? "draw" : "side " + replay.ended.winner + " wins") + " by " + replay.ended.reason; ol.appendChild(li); }
  }
  function go(i) { idx = Math.max(0, Math.min(last, i)); draw(idx); }
  document.getElementById("first").addEventListener("click", function () { go(0); });
  document.getElementById("prev").addEventListener("click", function () { go(idx - 1); });
  document.getElementById("next").addEventListener("click", function () { go(idx + 1); });
  document.getElementById("last").addEventListener("click", function () { go(last); });
  document.addEventListener("keydown", function (e) { if (e.key === "ArrowRight") { go(idx + 1); } if (e.key === "ArrowLeft") { go(idx - 1); } });
  list();
  draw(idx);
  document.body.dataset.rendered = "viewer";
})();
