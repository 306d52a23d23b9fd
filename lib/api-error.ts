// The HTTP status an API client attached to its error (client-node's ApiException carries it
// as `code`): what certificates, keys and the cluster adapter test for "absent" (404) or
// "changed meanwhile" (409). Kept here, below every layer that calls an API.
export const statusCode = (error: unknown): number | undefined => (error as { code?: number } | undefined)?.code;
