// An error to answer the Jupyter server with: a status and `{reason, message}` (plugin.ts writes it).
export class GatewayError extends Error {
  constructor(readonly statusCode: number, readonly reason: string, message: string) {
    super(message);
  }
}
