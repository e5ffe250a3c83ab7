// Time-to-live of stored objects, as kube-apiserver's --event-ttl gives every Event an etcd lease: each object of a
// tracked resource is queued with the time its current version was last seen, and a sweep takes the ones whose
// time has passed. A min-heap by that time, so a sweep costs the expired objects (log n each), not a pass over every
// stored object (and no parse of each: the store keeps objects as text).
//
// One entry per object, not per version: an Event whose count the correlator raises on every resync of a pending
// claim has dozens of versions, and queueing each kept about 240,000 entries (8.5 MB) for 30,000 Events after 10,000
// claims, for the hour of the TTL. A new version only updates its object's entry; the entry is moved to its later
// time when it reaches the top of the heap (each entry moves at most once per sweep).

/** One queued object: expires at `at` (epoch ms, its current version's) unless it has changed since (`rv`). */
interface Due {
  /** Where the entry sits in the heap: the time it was queued with (at most `at`, unless a version rewound it). */
  queuedAt: number;
  at: number;
  key: string;
  rv: number;
}

/** The objects of one resource by the time their current version was last seen, earliest first. */
export class ExpiryQueue {
  private readonly heap: Due[] = [];
  private readonly byKey = new Map<string, Due>();

  /** Objects queued. */
  get size(): number {
    return this.byKey.size;
  }

  add(at: number, key: string, rv: number): void {
    const queued = this.byKey.get(key);
    if (queued && at >= queued.queuedAt) {
      // A later version: found at its old time, then moved (takeBefore).
      queued.at = at;
      queued.rv = rv;
      return;
    }
    // New, or last seen earlier than the entry's place in the heap (a version that rewinds its time): a fresh
    // entry; the old one, if any, is no longer the object's and is dropped when it reaches the top.
    const due: Due = { queuedAt: at, at, key, rv };
    this.byKey.set(key, due);
    this.push(due);
  }

  /** Removes and returns the objects last seen before `cutoff`, earliest first (their key and current rv). */
  takeBefore(cutoff: number): Array<{ at: number; key: string; rv: number }> {
    const out: Array<{ at: number; key: string; rv: number }> = [];
    while (this.heap.length > 0 && this.heap[0].queuedAt < cutoff) {
      const due = this.pop();
      if (this.byKey.get(due.key) !== due) continue; // replaced by a rewound version's entry
      if (due.at < cutoff) {
        this.byKey.delete(due.key);
        out.push({ at: due.at, key: due.key, rv: due.rv });
      } else {
        due.queuedAt = due.at;
        this.push(due);
      }
    }
    return out.sort((a, b) => a.at - b.at);
  }

  private push(due: Due): void {
    const heap = this.heap;
    heap.push(due);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (heap[parent].queuedAt <= heap[i].queuedAt) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
  }

  private pop(): Due {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < heap.length && heap[l].queuedAt < heap[min].queuedAt) min = l;
        if (r < heap.length && heap[r].queuedAt < heap[min].queuedAt) min = r;
        if (min === i) break;
        [heap[min], heap[i]] = [heap[i], heap[min]];
        i = min;
      }
    }
    return top;
  }
}
