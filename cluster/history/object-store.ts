// The object store that keeps an ended run's event log and archived pod logs in Kubernetes mode:
// any S3-compatible server (AWS S3, MinIO, the test bed's), addressed as Spark's S3A connector
// names it (`s3a://bucket/prefix`). Uploads are streamed part by part, so archiving a log of any
// size holds at most one part in memory.
import type { Readable } from 'node:stream';
import { Client } from 'minio';

export interface ObjectStoreOptions {
  /** The S3 API's address, e.g. `http://127.0.0.1:9000` (absent: AWS's own). */
  endpoint?: string;
  accessKey: string;
  secretKey: string;
  region?: string;
  /** Path-style requests (`endpoint/bucket/key`): what MinIO and most S3-compatible servers want. */
  pathStyle?: boolean;
}

export interface StoredObject { key: string; size: number; lastModified: Date }

/** One part of a multipart upload: S3's minimum is 5 MiB (only the last part may be smaller). */
export const PART_BYTES = 8 * 1024 * 1024;

/** `s3a://bucket/some/prefix` → bucket and prefix (without a trailing slash); undefined for another scheme. */
export function parseS3Url(url: string): { bucket: string; prefix: string } | undefined {
  const match = /^s3a?:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url.trim());
  if (!match) return undefined;
  return { bucket: match[1]!, prefix: (match[2] ?? '').replace(/^\/+|\/+$/g, '') };
}

/** The store's settings from the environment S3A reads too (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). */
export function objectStoreFromEnv(endpoint: string | undefined, pathStyle: boolean | undefined, env = process.env): ObjectStoreOptions {
  const accessKey = env.AWS_ACCESS_KEY_ID;
  const secretKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKey || !secretKey) throw new Error('the object store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (the chart sets them from history.credentialsSecret)');
  return { endpoint, accessKey, secretKey, pathStyle, region: env.AWS_REGION };
}

export class ObjectStore {
  private readonly client: Client;

  constructor(readonly bucket: string, options: ObjectStoreOptions) {
    const url = new URL(options.endpoint ?? 'https://s3.amazonaws.com');
    const useSSL = url.protocol === 'https:';
    this.client = new Client({
      endPoint: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port ? Number(url.port) : useSSL ? 443 : 80,
      useSSL,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region ?? 'us-east-1',
      pathStyle: options.pathStyle ?? true,
      partSize: PART_BYTES,
    });
  }

  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) await this.client.makeBucket(this.bucket);
  }

  /**
   * Streams `body` into `key`: one PUT when it fits in a part, else a multipart upload whose parts
   * are sent one at a time (memory: one part). A failed upload is aborted, leaving no object.
   */
  async upload(key: string, body: Readable, contentType = 'text/plain; charset=utf-8'): Promise<number> {
    const headers = { 'Content-Type': contentType };
    // One buffer for every part, filled and sent in turn: no allocation per part for the GC to lag on.
    const part = Buffer.allocUnsafe(PART_BYTES);
    let partBytes = 0;
    let total = 0;
    let uploadId: string | undefined;
    const etags: { part: number; etag: string }[] = [];
    const flush = async () => {
      uploadId ??= await this.client.initiateNewMultipartUpload(this.bucket, key, headers);
      const sent = await this.client.uploadPart({ bucketName: this.bucket, objectName: key, uploadID: uploadId, partNumber: etags.length + 1, headers: {} }, part.subarray(0, partBytes));
      etags.push({ part: etags.length + 1, etag: sent.etag });
      partBytes = 0;
    };
    try {
      for await (const chunk of body) {
        const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
        total += bytes.length;
        for (let offset = 0; offset < bytes.length;) {
          const n = Math.min(PART_BYTES - partBytes, bytes.length - offset);
          bytes.copy(part, partBytes, offset, offset + n);
          partBytes += n;
          offset += n;
          if (partBytes === PART_BYTES) await flush(); // the for-await pauses the source meanwhile
        }
      }
      if (uploadId === undefined) {
        await this.client.putObject(this.bucket, key, Buffer.from(part.subarray(0, partBytes)), partBytes, headers);
        return total;
      }
      if (partBytes > 0) await flush();
      await this.client.completeMultipartUpload(this.bucket, key, uploadId, etags);
      return total;
    } catch (error) {
      body.destroy();
      if (uploadId !== undefined) await this.client.abortMultipartUpload(this.bucket, key, uploadId).catch(() => undefined);
      throw error;
    }
  }

  /**
   * A multipart upload that its caller fills part by part as data comes (a followed pod log,
   * cluster/kubernetes/log-follower.ts): every part but the last at least 5 MiB.
   */
  startMultipart(key: string, contentType = 'text/plain; charset=utf-8'): Promise<string> {
    return this.client.initiateNewMultipartUpload(this.bucket, key, { 'Content-Type': contentType });
  }

  async uploadPart(key: string, uploadId: string, partNumber: number, bytes: Buffer): Promise<{ part: number; etag: string }> {
    const sent = await this.client.uploadPart({ bucketName: this.bucket, objectName: key, uploadID: uploadId, partNumber, headers: {} }, bytes);
    return { part: partNumber, etag: sent.etag };
  }

  async completeMultipart(key: string, uploadId: string, etags: { part: number; etag: string }[]): Promise<void> {
    await this.client.completeMultipartUpload(this.bucket, key, uploadId, etags);
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    await this.client.abortMultipartUpload(this.bucket, key, uploadId);
  }

  /** Aborts every unfinished multipart upload of `key` (a former leader's): its parts would cost storage for ever. */
  async abortUnfinished(key: string): Promise<void> {
    await this.client.removeIncompleteUpload(this.bucket, key);
  }

  /** Whether `uploadId` is an unfinished multipart upload of `key` (a former leader's, to go on with). */
  async hasUpload(key: string, uploadId: string): Promise<boolean> {
    for await (const upload of this.client.listIncompleteUploads(this.bucket, key, false)) {
      if (upload.key === key && upload.uploadId === uploadId) return true;
    }
    return false;
  }

  /** A small object in one PUT (a followed log's state). */
  async put(key: string, bytes: Buffer, contentType = 'application/json'): Promise<void> {
    await this.client.putObject(this.bucket, key, bytes, bytes.length, { 'Content-Type': contentType });
  }

  /** A small object read whole, refused above `maxBytes`; undefined when there is none. */
  async readSmall(key: string, maxBytes: number): Promise<Buffer | undefined> {
    const body = await this.read(key);
    if (!body) return undefined;
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > maxBytes) { body.destroy(); throw new Error(`${key} is above ${maxBytes} bytes`); }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  async remove(key: string): Promise<void> {
    await this.client.removeObject(this.bucket, key);
  }

  /**
   * Makes `prefix` a directory for S3A: Spark's event log writer and History Server both refuse a
   * log directory that does not exist, and on S3 a directory exists once an object is under it.
   */
  async ensureFolder(prefix: string): Promise<void> {
    if (!prefix) return;
    for await (const _ of this.list(`${prefix}/`, false)) return;
    await this.client.putObject(this.bucket, `${prefix}/`, Buffer.alloc(0), 0);
  }

  /** The object from byte `offset` on; undefined when there is no such object. */
  async read(key: string, offset = 0): Promise<Readable | undefined> {
    try {
      return offset > 0 ? await this.client.getPartialObject(this.bucket, key, offset) : await this.client.getObject(this.bucket, key);
    } catch (error) {
      if (isMissing(error)) return undefined;
      // Asking past the end of an object: nothing more to read.
      if ((error as { code?: string }).code === 'InvalidRange') return (await import('node:stream')).Readable.from([]);
      throw error;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await this.client.statObject(this.bucket, key)).size;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /** Copies an object within the bucket (server side); `to` is written even if it exists: callers check first. */
  async copy(from: string, to: string): Promise<void> {
    await this.client.copyObject(this.bucket, to, `/${this.bucket}/${from}`);
  }

  /** The bucket's policy document (JSON), undefined when it has none. */
  async bucketPolicy(): Promise<string | undefined> {
    try {
      return await this.client.getBucketPolicy(this.bucket);
    } catch (error) {
      if ((error as { code?: string }).code === 'NoSuchBucketPolicy') return undefined;
      throw error;
    }
  }

  /** Replaces the bucket's policy; undefined deletes it. */
  async setBucketPolicy(policy: string | undefined): Promise<void> {
    await this.client.setBucketPolicy(this.bucket, policy ?? '');
  }

  /** Every object under `prefix`, page by page (the listing is streamed by the client). */
  async *list(prefix: string, recursive = true): AsyncGenerator<StoredObject | { prefix: string }> {
    for await (const item of this.client.listObjectsV2(this.bucket, prefix, recursive)) {
      if (item.name) yield { key: item.name, size: item.size ?? 0, lastModified: item.lastModified ?? new Date(0) };
      else if (item.prefix) yield { prefix: item.prefix };
    }
  }

  /** Deletes every object under `prefix`, in batches; the count deleted. */
  async removePrefix(prefix: string): Promise<number> {
    let batch: string[] = [];
    let removed = 0;
    const send = async () => {
      if (batch.length === 0) return;
      await this.client.removeObjects(this.bucket, batch);
      removed += batch.length;
      batch = [];
    };
    for await (const item of this.list(prefix)) {
      if (!('key' in item)) continue;
      batch.push(item.key);
      if (batch.length >= 500) await send();
    }
    await send();
    return removed;
  }
}

const isMissing = (error: unknown): boolean => {
  const code = (error as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchBucket';
};
