// The per-key limits and their defaults (fair-share.ts applies them; the gateway reads the
// websockets' one). Their own file, so the CLI and the gateway read them without the plugin.

export interface FairShareLimits {
  /** Submissions (POST /api/apps/, dry runs included) one key may make per minute; 0: no limit. */
  submissionsPerMinute: number;
  /** Unfinished applications (PENDING or RUNNING) one key may have at once; 0: no limit. */
  applicationsPerKey: number;
  /** Event streams and followed logs one key (or one address, without a key) may hold open; 0: no limit. */
  streamsPerKey: number;
  /** The notebook gateway's websockets per key (or address); the gateway reads it (gateway/plugin.ts). */
  websocketsPerKey: number;
}

/** What a cluster shared by a few dozen people would pick; every one is a flag and a chart value. */
export const defaultFairShare: FairShareLimits = {
  submissionsPerMinute: 60,
  applicationsPerKey: 50,
  streamsPerKey: 16,
  websocketsPerKey: 32,
};
