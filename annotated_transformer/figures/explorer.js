// Generated from book/23_appendix_explorer.md by `make export`; do not edit it by hand.
(function () {
  const root = document.getElementById(__ROOT__);
  const data = JSON.parse(root.querySelector("script.at-data").textContent);
  const svgNS = "http://www.w3.org/2000/svg", colours = __COLOURS__;
  const sel = name => root.querySelector("select[name=" + name + "]");
  function option(select, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
  data.sentences.forEach((s, i) => option(sel("sentence"), i, s.source));
  Object.entries(data.kinds).forEach(([k, name]) => option(sel("kind"), k, name));
  for (let l = 0; l < data.layers; l++) option(sel("layer"), l, "layer " + (l + 1));
  option(sel("head"), "all", "all heads");
  for (let h = 0; h < data.heads; h++) option(sel("head"), h, "head " + (h + 1));
  sel("layer").value = data.layer - 1;
  function draw() {
    const s = data.sentences[+sel("sentence").value];
    const kind = sel("kind").value, layer = +sel("layer").value;
    const [queries, keys] = s.labels[kind], w = s.weights[kind][layer];
    const heads = sel("head").value === "all"
      ? [...Array(data.heads).keys()] : [+sel("head").value];
    const rowH = 18, svg = root.querySelector("svg");
    const height = rowH * Math.max(queries.length, keys.length) + 10;
    svg.setAttribute("height", height); svg.innerHTML = "";
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(svgNS, tag);
      Object.entries(attrs).forEach(([a, v]) => e.setAttribute(a, v));
      if (text !== undefined) e.textContent = text;
      svg.appendChild(e); return e;
    };
    heads.forEach(h => w[h].forEach((row, i) => row.forEach((v, j) => {
      if (v >= 0.02) add("line", {
        x1: 150, y1: rowH * i + 14, x2: 310, y2: rowH * j + 14, stroke: colours[h % 10],
        "stroke-opacity": v, "stroke-width": 2, "data-q": i, "class": "at-mark"});
    })));
    queries.forEach((t, i) => add("text", {
      x: 144, y: rowH * i + 18, "text-anchor": "end", "data-q": i, "class": "at-query"
    }, t));
    keys.forEach((t, j) => add("text", {x: 316, y: rowH * j + 18}, t));
    svg.querySelectorAll("text.at-query").forEach(t => {
      t.addEventListener("mouseenter", () => svg.querySelectorAll("line").forEach(
        l => l.style.display = l.dataset.q === t.dataset.q ? "" : "none"));
      t.addEventListener("mouseleave", () => svg.querySelectorAll("line").forEach(
        l => l.style.display = ""));
    });
    const state = [sel("sentence").value, kind, layer, sel("head").value];
    root.dataset.drawn = state.concat([svg.querySelectorAll("line").length]).join(",");
  }
  root.querySelectorAll("select").forEach(s => s.addEventListener("change", draw));
  draw();
})();
