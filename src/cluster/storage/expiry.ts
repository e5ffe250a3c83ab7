// Time-to-live of stored objects, as kube-apiserver's --event-ttl gives every Event an etcd lease: each version of
// an object of a tracked resource is queued at commit with the time it was last seen, and a sweep takes the ones
// whose time has passed. A min-heap by that time, so a sweep costs the expired objects (log n each), not a pass
// over every stored object (and no parse of each: the store keeps objects as text).

/** One queued version: expires at `at` (epoch ms) unless the object has changed since (`rv`). */
interface Due {
  at: number;
  key: string;
  rv: number;
}

/** The versions of one resource's objects by the time they were last seen, earliest first. */
export class ExpiryQueue {
  private readonly heap: Due[] = [];

  get size(): number {
    return this.heap.length;
  }

  add(at: number, key: string, rv: number): void {
    const heap = this.heap;
    heap.push({ at, key, rv });
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= heap[i].at) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
  }

  /** Removes and returns the queued versions last seen before `cutoff`, earliest first. */
  takeBefore(cutoff: number): Due[] {
    const out: Due[] = [];
    while (this.heap.length > 0 && this.heap[0].at < cutoff) out.push(this.pop());
    return out;
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
        if (l < heap.length && heap[l].at < heap[min].at) min = l;
        if (r < heap.length && heap[r].at < heap[min].at) min = r;
        if (min === i) break;
        [heap[min], heap[i]] = [heap[i], heap[min]];
        i = min;
      }
    }
    return top;
  }
}
