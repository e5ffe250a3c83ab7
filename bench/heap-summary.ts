// Where a heap snapshot's bytes go: reads a .heapsnapshot (node --heapsnapshot-signal, v8.writeHeapSnapshot, or
// bench:controller --heap-snapshot) and prints, as markdown, the self size by kind of node (strings, plain
// objects, arrays, code...) and the dominator tree's largest subtrees: what each retains, named by the path of
// property names that reaches it (e.g. `ProvisionController.shared.claimRecords`). Used for docs/benchmarks.md.
// Run: node --max-old-space-size=4096 --import tsx bench/heap-summary.ts FILE.heapsnapshot [--depth 8] [--min-mb 0.5]
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] };
    node_count: number;
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Graph {
  count: number;
  type: string[];
  name: string[];
  selfSize: Float64Array;
  /** Successors (CSR): edges of node i are firstEdge[i]..firstEdge[i+1]. */
  firstEdge: Uint32Array;
  edgeTo: Uint32Array;
  edgeName: string[];
}

/** The array of numbers that follows `"key":[` in the snapshot's bytes (scanned: it can hold tens of millions). */
function numberArray(buf: Buffer, key: string): number[] {
  const start = buf.indexOf(`"${key}":[`);
  if (start < 0) return [];
  const out: number[] = [];
  let n = 0;
  let inNumber = false;
  for (let i = start + key.length + 4; i < buf.length; i++) {
    const c = buf[i];
    if (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48);
      inNumber = true;
    } else {
      if (inNumber) out.push(n);
      n = 0;
      inNumber = false;
      if (c === 93) break; // ]
    }
  }
  return out;
}

/**
 * Reads a snapshot. One larger than V8's longest string (512 MB, e.g. `dev` at 10,000 claims) is read in parts:
 * the meta header and the strings are parsed as JSON, the node and edge arrays scanned as numbers.
 */
function readSnapshot(file: string): Snapshot {
  const buf = readFileSync(file);
  if (buf.length < 0x1fffffe8) return JSON.parse(buf.toString('utf8')) as Snapshot;
  const headerEnd = buf.indexOf('"nodes":[');
  const header = JSON.parse(`${buf.subarray(0, headerEnd).toString('utf8').replace(/,\s*$/, '')}}`) as Pick<
    Snapshot,
    'snapshot'
  >;
  const stringsAt = buf.indexOf('"strings":[');
  const strings = JSON.parse(
    buf.subarray(stringsAt + '"strings":'.length, buf.lastIndexOf(']') + 1).toString('utf8'),
  ) as string[];
  return { snapshot: header.snapshot, nodes: numberArray(buf, 'nodes'), edges: numberArray(buf, 'edges'), strings };
}

function load(file: string): Graph {
  const s = readSnapshot(file);
  const {
    node_fields: nf,
    node_types: [nodeTypes],
    edge_fields: ef,
    edge_types: [edgeTypes],
  } = s.snapshot.meta;
  const N = nf.length;
  const E = ef.length;
  const count = s.nodes.length / N;
  const iType = nf.indexOf('type');
  const iName = nf.indexOf('name');
  const iSize = nf.indexOf('self_size');
  const iEdges = nf.indexOf('edge_count');
  const eType = ef.indexOf('type');
  const eName = ef.indexOf('name_or_index');
  const eTo = ef.indexOf('to_node');
  const type: string[] = new Array(count);
  const name: string[] = new Array(count);
  const selfSize = new Float64Array(count);
  const firstEdge = new Uint32Array(count + 1);
  const edgeTo: number[] = [];
  const edgeName: string[] = [];
  let e = 0;
  for (let i = 0; i < count; i++) {
    const base = i * N;
    type[i] = nodeTypes[s.nodes[base + iType]];
    name[i] = s.strings[s.nodes[base + iName]] ?? '';
    selfSize[i] = s.nodes[base + iSize];
    firstEdge[i] = edgeTo.length;
    const edges = s.nodes[base + iEdges];
    for (let k = 0; k < edges; k++, e += E) {
      const t = edgeTypes[s.edges[e + eType]];
      if (t === 'weak' || t === 'shortcut') continue; // weak references retain nothing; shortcuts duplicate paths
      const raw = s.edges[e + eName];
      edgeName.push(t === 'element' || t === 'hidden' ? `[${raw}]` : (s.strings[raw] ?? String(raw)));
      edgeTo.push(s.edges[e + eTo] / N);
    }
  }
  firstEdge[count] = edgeTo.length;
  return { count, type, name, selfSize, firstEdge, edgeTo: Uint32Array.from(edgeTo), edgeName };
}

/** Immediate dominators (Cooper, Harvey, Kennedy: "A Simple, Fast Dominance Algorithm"), root = node 0. */
function dominators(g: Graph): { idom: Int32Array; order: Uint32Array } {
  const { count, firstEdge, edgeTo } = g;
  // Reverse postorder by an iterative DFS.
  const post = new Int32Array(count).fill(-1);
  const order = new Uint32Array(count);
  let n = 0;
  const stack = new Uint32Array(count);
  const next = new Uint32Array(count);
  const seen = new Uint8Array(count);
  let sp = 0;
  stack[sp++] = 0;
  seen[0] = 1;
  next[0] = firstEdge[0];
  while (sp > 0) {
    const v = stack[sp - 1];
    if (next[v] < firstEdge[v + 1]) {
      const w = edgeTo[next[v]++];
      if (!seen[w]) {
        seen[w] = 1;
        next[w] = firstEdge[w];
        stack[sp++] = w;
      }
    } else {
      sp--;
      post[v] = n;
      order[n++] = v;
    }
  }
  // Predecessors of reachable nodes (CSR).
  const predCount = new Uint32Array(count + 1);
  for (let v = 0; v < count; v++)
    if (post[v] >= 0) for (let k = firstEdge[v]; k < firstEdge[v + 1]; k++) predCount[edgeTo[k] + 1]++;
  for (let i = 0; i < count; i++) predCount[i + 1] += predCount[i];
  const preds = new Uint32Array(predCount[count]);
  const fill = predCount.slice(0, count);
  for (let v = 0; v < count; v++)
    if (post[v] >= 0) for (let k = firstEdge[v]; k < firstEdge[v + 1]; k++) preds[fill[edgeTo[k]]++] = v;
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number): number => {
    while (a !== b) {
      while (post[a] < post[b]) a = idom[a];
      while (post[b] < post[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let i = n - 1; i >= 0; i--) {
      const v = order[i];
      if (v === 0) continue;
      let d = -1;
      for (let k = predCount[v]; k < predCount[v + 1]; k++) {
        const p = preds[k];
        if (idom[p] < 0) continue;
        d = d < 0 ? p : intersect(p, d);
      }
      if (d >= 0 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  return { idom, order: order.subarray(0, n) };
}

function label(g: Graph, i: number): string {
  const t = g.type[i];
  if (t === 'object' || t === 'closure') return g.name[i] || t;
  if (t === 'string' || t === 'concatenated string' || t === 'sliced string') return '(string)';
  return `(${t}${g.name[i] ? ` ${g.name[i].slice(0, 30)}` : ''})`;
}

function main(): void {
  const argv = process.argv.slice(2);
  const opt = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  const file = argv.find((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
  if (!file) {
    console.error(
      'usage: node --max-old-space-size=4096 --import tsx bench/heap-summary.ts FILE.heapsnapshot [--depth 8] [--min-mb 0.5]',
    );
    process.exitCode = 2;
    return;
  }
  const maxDepth = opt('--depth', 8);
  const minBytes = opt('--min-mb', 0.5) * 2 ** 20;
  const g = load(file);
  const { idom, order } = dominators(g);
  const retained = Float64Array.from(g.selfSize);
  for (let i = 0; i < order.length; i++) {
    const v = order[i]; // postorder: children before their dominators
    if (v !== 0 && idom[v] >= 0) retained[idom[v]] += retained[v];
  }
  const children = new Map<number, number[]>();
  for (const v of order) {
    if (v === 0 || idom[v] < 0) continue;
    const list = children.get(idom[v]);
    if (list) list.push(v);
    else children.set(idom[v], [v]);
  }
  // The property name by which a node's dominator (or the nearest object on the way) reaches it.
  const via = (parent: number, child: number): string => {
    for (let k = g.firstEdge[parent]; k < g.firstEdge[parent + 1]; k++) if (g.edgeTo[k] === child) return g.edgeName[k];
    return '';
  };
  const mb = (b: number) => (b / 2 ** 20).toFixed(1);
  const total = retained[0];
  const byKind = new Map<string, { n: number; bytes: number }>();
  for (let i = 0; i < g.count; i++) {
    const t = g.type[i];
    const kind =
      t === 'object' && g.name[i] === 'Object'
        ? 'plain objects'
        : t === 'object'
          ? `object ${g.name[i]}`
          : t.includes('string')
            ? 'strings'
            : t;
    const k = byKind.get(kind) ?? { n: 0, bytes: 0 };
    k.n++;
    k.bytes += g.selfSize[i];
    byKind.set(kind, k);
  }
  console.log(`Heap snapshot ${file}: ${mb(total)} MB reachable, ${g.count} nodes.\n`);
  console.log('| kind | count | self MB |\n|---|---:|---:|');
  for (const [kind, k] of [...byKind].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 12))
    console.log(`| ${kind} | ${k.n} | ${mb(k.bytes)} |`);
  console.log(
    `\nDominator tree, subtrees retaining >= ${mb(minBytes)} MB (a path of property names; MB retained, share of the heap):\n`,
  );
  const walk = (v: number, path: string, depth: number) => {
    const kids = (children.get(v) ?? [])
      .filter((c) => retained[c] >= minBytes)
      .sort((a, b) => retained[b] - retained[a]);
    for (const c of kids) {
      const edge = via(v, c);
      const here = `${path}${path ? '.' : ''}${edge && !edge.startsWith('[') ? edge : label(g, c)}`;
      // Collapse chains of one big child into one line; print where the bytes fan out.
      const big = (children.get(c) ?? []).filter((k) => retained[k] >= minBytes);
      const fansOut = big.length !== 1 || retained[big[0]] < retained[c] * 0.9;
      if (fansOut || depth >= maxDepth) {
        console.log(
          `${'  '.repeat(Math.min(depth, maxDepth))}- ${here} (${label(g, c)}): ${mb(retained[c])} MB, ${((100 * retained[c]) / total).toFixed(1)}%`,
        );
        if (depth < maxDepth) walk(c, '', depth + 1);
      } else {
        walk(c, here, depth);
      }
    }
  };
  walk(0, '', 0);
}

main();
