// Long-lived connections (event streams, followed logs, websockets) counted per owner: an API
// key, or the client's address when the request carries none. One owner holds at most `perOwner`
// at once, so one key (or one anonymous address) cannot hold every connection the process has;
// and every connection of an owner can be closed at once (its key was revoked).

/** The owner of a connection: its key's id, else the address it came from. */
export function connectionOwner(keyId: string | null | undefined, address: string | undefined): string {
  return keyId ? `key:${keyId}` : `address:${address ?? 'unknown'}`;
}

export const keyOwner = (keyId: string) => connectionOwner(keyId, undefined);

export class ConnectionSlots {
  private readonly byOwner = new Map<string, Set<() => void>>();

  /** `perOwner`: connections one owner may hold at once; 0 for no cap. */
  constructor(readonly perOwner: number) {
    if (!Number.isInteger(perOwner) || perOwner < 0) throw new Error(`a connection cap is a whole number, at least 0 (not ${perOwner})`);
  }

  /**
   * A slot for one connection of `owner`, or undefined when the owner holds its cap already.
   * `close` ends the connection (closeOwner calls it); the returned function frees the slot and
   * must be called when the connection ends, however it ends (calling it twice is harmless).
   */
  take(owner: string, close: () => void): (() => void) | undefined {
    let held = this.byOwner.get(owner);
    if (this.perOwner > 0 && (held?.size ?? 0) >= this.perOwner) return undefined;
    if (!held) this.byOwner.set(owner, (held = new Set()));
    const closer = () => close();
    held.add(closer);
    return () => {
      if (held.delete(closer) && held.size === 0 && this.byOwner.get(owner) === held) this.byOwner.delete(owner);
    };
  }

  /** How many connections `owner` holds. */
  count(owner: string): number {
    return this.byOwner.get(owner)?.size ?? 0;
  }

  /** Closes every connection of `owner` (a revoked key); returns how many. */
  closeOwner(owner: string): number {
    const held = [...(this.byOwner.get(owner) ?? [])];
    for (const close of held) {
      try {
        close();
      } catch {
        // A connection that fails to close is closed as far as it goes; the others still are.
      }
    }
    return held.length;
  }
}
