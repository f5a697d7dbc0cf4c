/* mtcabench view: the table of every span of a run and each span's page, drawn in the browser
 * from data.js (window.MTCA_VIEW, written by mtcabench/scoring/view/_data.py).
 *
 * Every value from the data (ids, method labels, turn texts) reaches the page as text: elements
 * are built with createElement and filled with text nodes or setAttribute, never innerHTML, so
 * no data can become markup or script. Only the rows in sight are in the document (the table is
 * a scroller of fixed-height rows), so thousands of spans open and filter in milliseconds.
 */
(function () {
  "use strict";
  const t0 = performance.now();
  const D = window.MTCA_VIEW;
  const VERSION = 2;
  const ROW = 26; // px per table row; the scroller places rows by index
  const SVGNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    n.append(...kids.map((k) => (k instanceof Node ? k : String(k))));
    return n;
  }
  function svg(tag, attrs, ...kids) {
    const n = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    n.append(...kids.map((k) => (k instanceof Node ? k : String(k))));
    return n;
  }
  function oneLine(text, limit) {
    const flat = text.replace(/\s+/g, " ").trim();
    return flat.length <= limit ? flat : flat.slice(0, limit - 1) + "\u2026";
  }
  const fmt = (x) => (x === null || x === undefined ? "n/a" : x.toFixed(2));

  if (!D || D.version !== VERSION) {
    document.body.replaceChildren(el("p", { class: "error" },
      "data.js is missing or was written by another mtcabench version (layout " +
      (D ? D.version : "none") + ", this page reads " + VERSION + "): rerun mtcabench view."));
    return;
  }

  const N = D.spans.length;
  const M = D.methods.length;
  // The metrics table (D.metrics): a row's values are in its order; the table of spans shows
  // those with a column title (view), the first in the place of the status.
  const METRIC = Object.fromEntries(D.metrics.map((m, k) => [m.name, k]));
  const value = (r, name) => (name in METRIC ? r.values[METRIC[name]] : null);
  const COLUMNS = D.metrics.filter((m) => m.view);
  // 1 the span is fully right on the metric (value 1), 0 it is not, 2 undefined on the span.
  const outcome = (v) => (v === null || v === undefined ? 2 : v === 1 ? 1 : 0);
  const hits = D.methods.map((m) => Uint8Array.from(m.rows, (r) => (r.source_hit ? 1 : 0)));
  // Evidence: 1 every gold evidence range hit, 0 some missed, 2 the span has none.
  const evHits = D.methods.map((m) => Uint8Array.from(m.rows,
    (r) => outcome(value(r, "evidence_hit"))));
  // Methods disagree on a span when one recovers every gold source and another does not.
  const disagree = new Uint8Array(N);
  for (let i = 0; i < N && M > 1; i++) {
    let h = 0;
    for (let m = 0; m < M; m++) h += hits[m][i];
    disagree[i] = h > 0 && h < M ? 1 : 0;
  }
  const lowerIds = D.spans.map((s) => s.id.toLowerCase());
  let shown = new Int32Array(0);

  // ------------------------------------------------------------------ filters and table

  function option(value, label) { return el("option", { value: value }, label); }

  function buildControls() {
    $("title").textContent = "MTCABench view: " + D.benchmark;
    const type = $("f-type");
    type.append(option("", "all types"), ...D.types.map((t) => option(t, t)));
    const depths = [...new Set(D.spans.map((s) => s.depth))].sort((a, b) => a - b);
    $("f-depth").append(option("", "all depths"), ...depths.map((d) => option(String(d), "depth " + d)));
    // Facets of the conversations: shown where the run holds more than one value.
    for (const [id, key, all] of [["f-domain", "domain", "all domains"], ["f-agent", "agent", "all agent models"]]) {
      const values = [...new Set(D.conversations.map((c) => c[key]))].sort();
      $(id).append(option("", all), ...values.map((v) => option(v, v)));
      $(id).hidden = values.length < 2;
    }
    // The span-kind facet: values, claims, each claim kind; shown where the run holds claims.
    const kinds = [...new Set(D.spans.map((s) => s.kind))].filter((k) => k !== "value").sort();
    $("f-kind").append(option("", "values and claims"), option("value", "values"),
      option("claim", "claims"), ...kinds.map((k) => option(k, k)));
    $("f-kind").hidden = kinds.length === 0;
    $("f-method").append(option("all", "every method"),
      ...D.methods.map((m, k) => option(String(k), m.label)));
    $("f-disagree").disabled = M < 2;
    $("filters").addEventListener("submit", (e) => e.preventDefault());
    for (const id of ["f-type", "f-depth", "f-domain", "f-agent", "f-kind", "f-method", "f-outcome", "f-disagree", "f-id"]) {
      $(id).addEventListener(id === "f-id" ? "input" : "change", applyFilters);
    }
    const head = $("head");
    head.style.gridTemplateColumns = columns();
    // Two header rows: each method's label once, over its metrics (a label repeated in every
    // column was cut to "tokengeist/a\u2026" three times, metric and method lost).
    const fixed = ["span", "id", "type", "depth", "gold edges"];
    // Placed explicitly: the fixed columns span both header rows.
    const placed = (node, column, row) => {
      node.style.gridColumn = column;
      node.style.gridRow = row;
      return node;
    };
    fixed.forEach((h, c) => head.append(placed(el("div", {}, h), String(c + 1), "1 / span 2")));
    const per = COLUMNS.length + 1;
    const titles = COLUMNS.map((x) => [x.view, x.label + ": " + x.definition]);
    titles.splice(1, 0, ["source hit", "every gold source recovered"]);
    D.methods.forEach((m, j) => {
      const c = fixed.length + 1 + per * j;
      head.append(placed(el("div", { class: "method", title: m.label + " (" + m.file + ")" },
        m.label), c + " / span " + per, "1"));
      titles.forEach(([name, what], i) => head.append(
        placed(el("div", { class: "num", title: m.label + ": " + what }, name),
          String(c + i), "2")));
    });
  }

  function columns() {
    return "minmax(12em, 2fr) minmax(10em, 1fr) 11em 6.5em 5em" +
      " 7em".repeat((COLUMNS.length + 1) * M);
  }

  function applyFilters() {
    const f0 = performance.now();
    const type = $("f-type").value;
    const depth = $("f-depth").value === "" ? null : Number($("f-depth").value);
    const domain = $("f-domain").value;
    const agent = $("f-agent").value;
    const kind = $("f-kind").value;
    const method = $("f-method").value;
    const outcome = $("f-outcome").value;
    const onlyDisagree = $("f-disagree").checked;
    const q = $("f-id").value.trim().toLowerCase();
    const out = new Int32Array(N);
    let n = 0;
    for (let i = 0; i < N; i++) {
      const s = D.spans[i];
      if (type && s.type !== type) continue;
      if (depth !== null && s.depth !== depth) continue;
      if (domain && D.conversations[s.conv].domain !== domain) continue;
      if (agent && D.conversations[s.conv].agent !== agent) continue;
      if (kind && s.kind !== kind && !(kind === "claim" && s.kind.startsWith("claim:"))) continue;
      if (onlyDisagree && !disagree[i]) continue;
      if (outcome) {
        const [on, what] = outcome.split("-");
        const table = on === "evidence" ? evHits : hits;
        const want = what === "hit" ? 1 : 0;
        if (method === "all") {
          let ok = true;
          for (let m = 0; m < M && ok; m++) ok = table[m][i] === want;
          if (!ok) continue;
        } else if (table[Number(method)][i] !== want) continue;
      }
      if (q && !lowerIds[i].includes(q)) continue;
      out[n++] = i;
    }
    shown = out.subarray(0, n);
    $("count").textContent = n + " of " + N + " spans";
    $("spacer").style.height = n * ROW + "px";
    $("rows").scrollTop = 0;
    drawRows();
    window.MTCA_LAST_FILTER_MS = performance.now() - f0;
  }

  function drawRows() {
    const scroller = $("rows");
    const first = Math.max(0, Math.floor(scroller.scrollTop / ROW) - 10);
    const last = Math.min(shown.length, first + Math.ceil(scroller.clientHeight / ROW) + 20);
    const frag = document.createDocumentFragment();
    const cols = columns();
    for (let k = first; k < last; k++) {
      const i = shown[k];
      const s = D.spans[i];
      const row = el("a", { class: "row", href: "#span=" + i, "data-span": s.id },
        el("div", { class: "text", title: s.text }, "\u201c" + oneLine(s.text, 80) + "\u201d"),
        el("div", { class: "id", title: s.id }, s.id),
        el("div", {}, s.type + (s.origin === "counterfactual" ? " (cf)" : "")),
        el("div", { class: "num", title: hopsTitle(s) }, s.depth + " " + hopsShort(s)),
        el("div", { class: "num" }, s.gold.length));
      row.style.top = k * ROW + "px";
      row.style.gridTemplateColumns = cols;
      D.methods.forEach((m, j) => {
        const r = m.rows[i];
        COLUMNS.forEach((x, k) => {
          const v = value(r, x.name);
          if (k === 0) {
            row.append(el("div", { class: "num" }, r.status === "predicted" ? fmt(v) : r.status),
              el("div", { class: "num " + (hits[j][i] ? "hit" : "miss") }, hits[j][i] ? "hit" : "miss"));
          } else {
            row.append(el("div", { class: "num " + ["miss", "hit", ""][outcome(v)] },
              v === null ? "\u2013" : fmt(v)));
          }
        });
      });
      frag.append(row);
    }
    $("spacer").replaceChildren(frag);
  }

  // ------------------------------------------------------------------ one span's page

  function turnsOf(s) {
    return D.conversations[s.conv].turns.slice(0, s.turn + 1)
      .map(([role, text], index) => ({ index: index, role: role, text: D.texts[text] }));
  }

  /* One graph panel: the turns up to the target, edges arcing on the right. ``edges`` are
   * [child, parent, kind, score]; the kinds and colours are show's (mtcabench show). */
  function panel(title, s, turns, edges, key) {
    const width = 380, row = 38, gap = 6, top = 8, boxX = 6, boxW = 210;
    const height = top + turns.length * (row + gap) + 8;
    const y = (t) => top + t * (row + gap) + row / 2;
    const root = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
      "font-family": "sans-serif", "font-size": "11", class: "graph" });
    const defs = svg("defs");
    for (const [kind, colour] of Object.entries(D.colours)) {
      defs.append(svg("marker", { id: "a-" + key + "-" + kind, viewBox: "0 0 10 10", refX: 9, refY: 5,
        markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        svg("path", { d: "M0,0 L10,5 L0,10 z", fill: colour })));
    }
    root.append(defs);
    for (const t of turns) {
      const y0 = y(t.index) - row / 2;
      const target = t.index === s.turn;
      root.append(svg("rect", { x: boxX, y: y0, width: boxW, height: row, rx: 4,
        fill: D.role_fill[t.role] || "#fff", stroke: target ? "#000" : "#999",
        "stroke-width": target ? 2.5 : 1 }));
      root.append(svg("text", { x: boxX + 5, y: y0 + 14, "font-weight": "bold" },
        "#" + t.index + " " + t.role + (target ? " (target)" : "")));
      const line = target ? "span: \u201c" + oneLine(t.text.slice(s.start, s.end), 24) + "\u201d"
        : oneLine(t.text, 32);
      root.append(svg("text", { x: boxX + 5, y: y0 + 29 }, line));
    }
    const x0 = boxX + boxW;
    for (const [child, parent, kind, score] of edges) {
      if (child > s.turn || parent > s.turn || child < 0 || parent < 0) continue;
      const colour = D.colours[kind];
      const bend = Math.min(width - x0 - 30, 20 + 12 * (child - parent));
      const xc = x0 + bend;
      const tip = kind + " edge " + child + "\u2192" + parent + (score === null || score === undefined ? "" : " score " + score);
      root.append(svg("path", { d: `M${x0},${y(child)} C${xc},${y(child)} ${xc},${y(parent)} ${x0},${y(parent)}`,
        fill: "none", stroke: colour, "stroke-width": 2, "stroke-dasharray": kind === "missed" ? "5,4" : "none",
        "marker-end": "url(#a-" + key + "-" + kind + ")", class: "edge " + kind,
        "data-edge": child + "->" + parent }, svg("title", {}, tip)));
      if (score !== null && score !== undefined) {
        root.append(svg("text", { x: xc + 3, y: (y(child) + y(parent)) / 2, fill: colour,
          "font-size": 10 }, Number(score).toFixed(2)));
      }
    }
    return el("figure", { class: "panel" }, el("figcaption", {}, title), root);
  }

  function spanPage(i) {
    const s = D.spans[i];
    const turns = turnsOf(s);
    const gold = new Set(s.gold.map(([c, p]) => c + ">" + p));
    const page = $("span");
    const metrics = el("table", {}, el("tr", {}, ...["method", "status",
      ...D.metrics.map((x) => x.label), "source hit", "predicted edges"].map((h) => el("th", {}, h))));
    const panels = [panel("gold", s, turns, s.gold.map(([c, p]) => [c, p, "gold", null]), "g")];
    D.methods.forEach((m, k) => {
      const r = m.rows[i];
      metrics.append(el("tr", {}, el("td", {}, m.label), el("td", {}, r.status),
        ...D.metrics.map((x, q) => el("td", { title: x.definition }, fmt(r.values[q]))),
        el("td", { class: r.source_hit ? "hit" : "miss" }, r.source_hit ? "hit" : "miss"),
        el("td", {}, r.edges.length)));
      const pred = new Set(r.edges.map(([c, p]) => c + ">" + p));
      const edges = r.edges.map(([c, p, score]) => [c, p, gold.has(c + ">" + p) ? "both" : "extra", score]);
      for (const [c, p] of s.gold) if (!pred.has(c + ">" + p)) edges.push([c, p, "missed", null]);
      panels.push(panel(m.label + " (" + r.status + ")", s, turns, edges, "m" + k));
    });
    const conv = D.conversations[s.conv];
    const target = turns[s.turn].text;
    page.replaceChildren(
      el("p", {}, el("a", { href: "#", id: "back" }, "\u2190 back to the table")),
      el("h2", { id: "span-id" }, s.id),
      el("p", {}, "dependency type ", el("b", {}, s.type),
        (s.origin === "counterfactual" ? " (counterfactual: a value of the answer replaced)" : "") +
        "; depth " + s.depth + " (" + hopsTitle(s) + "); source " +
        s.source + "/" + conv.domain + "; gold sources " + JSON.stringify(s.sources) +
        "; conversation " + conv.id),
      el("p", {}, "target span: ", el("mark", {}, target.slice(s.start, s.end))),
      metrics,
      el("h3", {}, "Graphs: gold and each method"),
      el("p", { class: "legend" }, ...["both", "missed", "extra", "gold"].map((k) =>
        el("span", { style: "color:" + D.colours[k] }, "\u25a0 " + { both: "in gold and predicted",
          missed: "gold, missed", extra: "predicted, not gold", gold: "gold edge" }[k] + "  "))),
      el("div", { class: "panels" }, ...panels),
      el("h3", {}, "Conversation up to the target"),
      ...turns.map((t) => el("div", { class: "turn " + t.role }, el("b", {}, "#" + t.index + " " + t.role),
        t.index === s.turn
          ? el("pre", {}, t.text.slice(0, s.start), el("mark", {}, t.text.slice(s.start, s.end)), t.text.slice(s.end))
          : el("pre", {}, ...goldEvidence(s, t)))));
  }

  /* A parent turn's text with the gold evidence ranges of its edges underlined. */
  function goldEvidence(s, t) {
    const ranges = s.evidence.filter(([, p, a, b]) => p === t.index && a < b && b <= t.text.length)
      .sort((x, y) => x[2] - y[2]);
    const out = [];
    let pos = 0;
    for (const [c, p, a, b] of ranges) {
      if (a < pos) continue; // overlapping ranges: the first one is shown
      out.push(t.text.slice(pos, a), el("span", { class: "gold-evidence",
        title: "gold evidence of edge " + c + "\u2192" + p }, t.text.slice(a, b)));
      pos = b;
    }
    out.push(t.text.slice(pos));
    return out;
  }

  function route() {
    const m = /^#span=(\d+)$/.exec(location.hash);
    const i = m ? Number(m[1]) : -1;
    const onSpan = i >= 0 && i < N;
    $("table").hidden = onSpan;
    $("span").hidden = !onSpan;
    if (onSpan) {
      spanPage(i);
      window.scrollTo(0, 0);
    } else {
      drawRows();
    }
  }

  buildControls();
  $("rows").addEventListener("scroll", () => requestAnimationFrame(drawRows), { passive: true });
  window.addEventListener("hashchange", route);
  applyFilters();
  route();
  window.MTCA_OPEN_MS = performance.now() - t0;
  document.body.setAttribute("data-ready", "1");
})();

// The gold path's hops beside its depth: content hops (the child's content depends on the
// parent's) and call-structure hops (a tool result's link to its call), so that a "direct"
// span at depth 6 reads as 4 content hops and 2 of call structure.
function hopsShort(s) {
  return s.hops ? "(" + s.hops[0] + "c+" + s.hops[1] + "s)" : "";
}
function hopsTitle(s) {
  return s.hops ? s.hops[0] + " content hops, " + s.hops[1] + " call-structure hops" : "";
}
