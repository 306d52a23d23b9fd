// The memory that sending followed logs' parts takes, kept apart from the follower itself: a
// fixed few part-sized buffers shared by every LogFollower, so memory stays flat whatever the
// number of followed pods (a follower waits for a free buffer rather than allocating one).

/** S3's smallest part (only the last may be smaller): the most a followed pod spools. */
export const FOLLOW_PART_BYTES = 5 * 1024 * 1024;

/** A few part-sized buffers shared by every follower: the memory of sending parts, whatever the number of pods. */
export class PartBuffers {
  private readonly free: Buffer[] = [];
  private readonly waiting: ((buffer: Buffer) => void)[] = [];
  constructor(count: number) {
    for (let i = 0; i < count; i++) this.free.push(Buffer.allocUnsafe(FOLLOW_PART_BYTES));
  }

  async use<T>(work: (buffer: Buffer) => Promise<T>): Promise<T> {
    const buffer = this.free.pop() ?? await new Promise<Buffer>((ok) => this.waiting.push(ok));
    try {
      return await work(buffer);
    } finally {
      const next = this.waiting.shift();
      if (next) next(buffer); else this.free.push(buffer);
    }
  }
}
