// The session as a sequence diagram: two lanes, an arrow per message, a request and its response
// in the same colour (hover or focus one to highlight both), notifications dashed. Plain SVG.

const NS = "http://www.w3.org/2000/svg";
const WIDTH = 520;
// Two lanes (client, server), or three once an app talks (app, host, server): the host is the client.
const TWO = { client: 70, server: WIDTH - 70, app: null };
const THREE = { app: 50, client: 200, server: WIDTH - 60 };
const TOP = 46;
const ROW = 34;
const PAIR_COLOURS = 6; // .pair-0 ... .pair-5 in style.css
// Arrows drawn at most; later messages are counted below the last one. A server printing in a loop
// would otherwise grow the diagram by thousands of rows, each one laying the page out again.
export const MAX_ARROWS = 300;
let diagrams = 0;

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

export class SequenceDiagram {
  constructor(container) {
    this.container = container;
    this.rows = [];
    this.lanes3 = false; // an app has talked: its lane is drawn
    this.undrawn = 0; // messages past MAX_ARROWS, counted, not drawn
    this.scrollPending = false;
    this.pairs = new Map(); // pair key -> colour index
    this.nextColour = 0;
    diagrams += 1; // a page may show two (the console's and an endpoint's): ids must differ
    const titleId = diagrams === 1 ? "sequence-title" : `sequence-title-${diagrams}`;
    this.root = svg("svg", {
      class: "sequence",
      role: "img",
      "aria-labelledby": titleId,
      viewBox: `0 0 ${WIDTH} ${TOP + ROW}`,
    });
    this.title = svg("title", { id: titleId }, "Sequence diagram: no messages yet");
    this.root.append(this.title);
    this.lanes = svg("g", { class: "lanes" });
    this.arrows = svg("g", { class: "arrows" });
    this.root.append(this.lanes, this.arrows);
    container.append(this.root);
    this.draw();
  }

  clear() {
    this.rows = [];
    this.lanes3 = false;
    this.undrawn = 0;
    this.pairs.clear();
    this.nextColour = 0;
    this.arrows.replaceChildren();
    this.draw();
  }

  /** Scroll to the newest arrow once per animation frame, however many arrive in it. */
  scrollSoon() {
    if (this.scrollPending) return;
    this.scrollPending = true;
    requestAnimationFrame(() => {
      this.scrollPending = false;
      this.container.scrollTop = this.container.scrollHeight;
    });
  }

  colourFor(pairKey) {
    if (!pairKey) return null;
    if (!this.pairs.has(pairKey)) {
      this.pairs.set(pairKey, this.nextColour % PAIR_COLOURS);
      this.nextColour += 1;
    }
    return this.pairs.get(pairKey);
  }

  /**
   * @param {{seq?: number, dir: "c2s"|"s2c"|"relay"|"h2a"|"a2h", label: string, kind: string, pairKey?: string}} row
   *   h2a and a2h: between the console (an MCP Apps host) and an app
   */
  add(row) {
    if (this.rows.length >= MAX_ARROWS) {
      this.undrawn += 1;
      this.draw();
      return;
    }
    this.rows.push(row);
    if ((row.dir === "h2a" || row.dir === "a2h") && !this.lanes3) {
      this.lanes3 = true; // every arrow moves to the three-lane layout
      this.arrows.replaceChildren();
      this.rows.forEach((each, index) => {
        this.arrow(each, index);
      });
    } else {
      this.arrow(row, this.rows.length - 1);
    }
    this.draw();
    this.scrollSoon();
  }

  arrow(row, index) {
    const x = this.lanes3 ? THREE : TWO;
    const y = TOP + ROW * index + ROW / 2;
    const colour = this.colourFor(row.pairKey);
    const g = svg("g", { class: `arrow kind-${row.kind}${colour === null ? "" : ` pair-${colour}`}`, tabindex: "0" });
    if (row.pairKey) g.dataset.pair = row.pairKey;
    const [from, to] = {
      c2s: [x.client, x.server],
      s2c: [x.server, x.client],
      relay: [x.client, (x.client + x.server) / 2],
      h2a: [x.client, x.app],
      a2h: [x.app, x.client],
    }[row.dir];
    const x1 = from;
    const x2 = to;
    const tip = to > from ? -1 : 1;
    const line = svg("line", { x1, y1: y, x2: x2 + tip * 8, y2: y, class: "shaft" });
    if (row.kind === "notification") line.setAttribute("stroke-dasharray", "6 4");
    const head =
      row.dir === "relay"
        ? svg("path", {
            d: `M${x2 - 6} ${y - 6} L${x2 + 6} ${y + 6} M${x2 + 6} ${y - 6} L${x2 - 6} ${y + 6}`,
            class: "cross",
          })
        : svg("polygon", { points: `${x2},${y} ${x2 + tip * 10},${y - 5} ${x2 + tip * 10},${y + 5}`, class: "head" });
    const label = svg("text", { x: (x1 + x2) / 2, y: y - 6, "text-anchor": "middle", class: "label" }, row.label);
    const seq = row.seq ? svg("text", { x: 8, y: y + 4, class: "seq" }, `#${row.seq}`) : null;
    const sides = {
      c2s: "client → server",
      relay: "client → relay",
      s2c: "server → client",
      h2a: "host → app",
      a2h: "app → host",
    };
    const hover = svg("title", {}, `${row.seq ? `#${row.seq} ` : ""}${sides[row.dir]}: ${row.label}`);
    g.append(hover, line, head, label);
    if (seq) g.append(seq);
    const highlight = (on) => {
      if (!row.pairKey) return;
      for (const other of this.arrows.querySelectorAll("g.arrow")) {
        if (other.dataset.pair === row.pairKey) other.classList.toggle("highlight", on);
      }
    };
    g.addEventListener("mouseenter", () => highlight(true));
    g.addEventListener("mouseleave", () => highlight(false));
    g.addEventListener("focus", () => highlight(true));
    g.addEventListener("blur", () => highlight(false));
    this.arrows.append(g);
  }

  draw() {
    const more = this.undrawn
      ? [
          svg(
            "text",
            { x: WIDTH / 2, y: TOP + ROW * this.rows.length + ROW / 2, "text-anchor": "middle", class: "label" },
            `… and ${this.undrawn} more message${this.undrawn === 1 ? "" : "s"}: the log has the newest`,
          ),
        ]
      : [];
    const height = TOP + ROW * (Math.max(this.rows.length, 1) + more.length) + 8;
    this.root.setAttribute("viewBox", `0 0 ${WIDTH} ${height}`);
    this.root.setAttribute("height", String(height));
    const count = `${this.rows.length} message${this.rows.length === 1 ? "" : "s"}`;
    this.title.textContent = this.lanes3
      ? `Sequence diagram: ${count} between an app, you (the console, its host and the client) and the server`
      : `Sequence diagram: ${count} between you (client) and the server`;
    const lanes = this.lanes3
      ? [
          [THREE.app, "app"],
          [THREE.client, "you (host, client)"],
          [THREE.server, "server"],
        ]
      : [
          [TWO.client, "you (client)"],
          [TWO.server, "server"],
        ];
    this.lanes.replaceChildren(
      ...lanes.map(([x, name]) => svg("text", { x, y: 18, "text-anchor": "middle", class: "lane-title" }, name)),
      ...lanes.map(([x]) => svg("line", { x1: x, y1: 28, x2: x, y2: height - 4, class: "lane" })),
      ...more,
    );
  }
}
