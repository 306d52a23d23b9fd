// A loopback port nothing listens on now (the OS picks it), for a process that binds it a
// moment later: a local driver's Spark UI, the test bed's apiserver and webhook.
import { type AddressInfo, createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
