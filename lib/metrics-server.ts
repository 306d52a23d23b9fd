// A plain-HTTP /metrics listener for processes whose own server is not fastify (the
// webhook serves HTTPS with a private CA, which Prometheus would have to be told about):
// a second port, scraped like any other pod.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectProcessMetrics, scrape } from './metrics.js';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(options: { port: number; host?: string; onError?: (error: Error) => void }): Promise<MetricsServer> {
  collectProcessMetrics();
  const server: Server = createServer((req, res) => {
    req.resume();
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `no route ${req.method} ${path}; GET /metrics` }));
      return;
    }
    scrape().then(
      ({ contentType, body }) => { res.writeHead(200, { 'content-type': contentType }).end(body); },
      (error: Error) => {
        options.onError?.(error);
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'metrics could not be collected' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
