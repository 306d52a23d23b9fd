// IP addresses as their bytes, so a certificate's SANs compare equal however they are
// written (node prints IPv6 expanded, a policy may give it short).
import { isIPv4, isIPv6 } from 'node:net';

export function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  const [head = '', tail] = ip.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail ?? '').length;
  const all = [...groups(head), ...Array(tail === undefined ? 0 : missing).fill('0'), ...groups(tail ?? '')];
  return Buffer.from(all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}
