// A FIFO of texts with a byte cap. `hold` refuses what does not fit (the caller answers the
// sender); `keep` drops the oldest to make room (a replay buffer: the newest output matters most).
// Sizes are UTF-16 code units (`text.length`): what a JS string costs, within 2× of its bytes.

export class ByteQueue<T extends { text: string }> {
  private items: T[] = [];
  private head = 0;
  private size = 0;

  constructor(readonly capBytes: number) {}

  get bytes(): number { return this.size; }
  get length(): number { return this.items.length - this.head; }

  /** Appends when it fits under the cap; false (nothing kept) when it does not. */
  hold(item: T): boolean {
    if (this.size + item.text.length > this.capBytes) return false;
    this.append(item);
    return true;
  }

  /** Appends, dropping the oldest items until it fits; an item bigger than the cap alone is not kept. Returns how many were dropped. */
  keep(item: T): number {
    if (item.text.length > this.capBytes) return 0;
    let dropped = 0;
    while (this.size + item.text.length > this.capBytes) { this.shift(); dropped++; }
    this.append(item);
    return dropped;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined as unknown as T; // released at once, not at the next compaction
    this.size -= item.text.length;
    // Compacts once half the array is spent, so a long-lived queue does not grow its backing array.
    if (this.head > 1024 && this.head * 2 > this.items.length) { this.items = this.items.slice(this.head); this.head = 0; }
    return item;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i];
  }

  clear(): void {
    this.items = [];
    this.head = 0;
    this.size = 0;
  }

  private append(item: T): void {
    this.items.push(item);
    this.size += item.text.length;
  }
}
