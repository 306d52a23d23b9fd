// Work done one step at a time per key (a record's writes, a template's changes), so that an
// older state never lands after a newer one; different keys run side by side. Each caller gets
// its own step's outcome; a failed step does not stop the ones queued after it.
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, step: () => Promise<T>): Promise<T> {
    const next = (this.tails.get(key) ?? Promise.resolve()).then(step);
    const settled = next.then(() => undefined, () => undefined);
    this.tails.set(key, settled);
    void settled.then(() => { if (this.tails.get(key) === settled) this.tails.delete(key); });
    return next;
  }

  /** Resolves once every step started so far has settled. */
  async idle(): Promise<void> {
    await Promise.all([...this.tails.values()]);
  }
}
