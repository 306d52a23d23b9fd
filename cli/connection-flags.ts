// Caps on what one client holds open: connections per address (lib/address-cap.ts) and proxied
// Spark UI requests (dashboard/spark-ui-limits.ts), from the command line. Behind a proxy
// (--trust-proxy) every client has the proxy's address, so the per-address cap is off there
// unless a flag sets it: the proxy caps its own clients.
import { defaultSparkUiLimits, type SparkUiLimits } from '../dashboard/spark-ui-limits.js';
import type { ApiLimits } from '../submit-api/limits.js';

export const connectionFlags = {
  'connections-per-address': { type: 'string', description: 'open HTTP connections one client address (an IPv6 /64) may hold; 0: no cap; default: a quarter of the connections, 16 to 256 (none with --trust-proxy)' },
  'spark-ui-requests-per-key': { type: 'string', description: `proxied Spark UI requests one key (or address) may have open (${defaultSparkUiLimits.requestsPerKey}); 0: no cap` },
  'spark-ui-answer-seconds': { type: 'string', description: `a proxied Spark UI answer is cut after this long (${defaultSparkUiLimits.answerMs / 1000}); 0: never` },
  'spark-ui-answer-mib': { type: 'string', description: `a proxied Spark UI answer is cut past this many MiB (${defaultSparkUiLimits.answerBytes / 1024 / 1024}); 0: never` },
} as const;

type Values = Partial<Record<keyof typeof connectionFlags, string>> & { 'trust-proxy'?: boolean };

function whole(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new Error(`--${flag} takes a whole number (0: no limit), not ${JSON.stringify(value)}`);
  return Number(value);
}

export function connectionLimitsFrom(values: Values): { limits: Partial<ApiLimits>; sparkUiLimits: Partial<SparkUiLimits> } {
  const perAddress = whole('connections-per-address', values['connections-per-address']) ?? (values['trust-proxy'] ? 0 : undefined);
  const seconds = whole('spark-ui-answer-seconds', values['spark-ui-answer-seconds']);
  const mib = whole('spark-ui-answer-mib', values['spark-ui-answer-mib']);
  const requests = whole('spark-ui-requests-per-key', values['spark-ui-requests-per-key']);
  const sparkUiLimits: Partial<SparkUiLimits> = {
    ...(requests === undefined ? {} : { requestsPerKey: requests }),
    ...(seconds === undefined ? {} : { answerMs: seconds * 1000 }),
    ...(mib === undefined ? {} : { answerBytes: mib * 1024 * 1024 }),
  };
  return { limits: perAddress === undefined ? {} : { connectionsPerAddress: perAddress }, sparkUiLimits };
}
