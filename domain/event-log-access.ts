// Object storage per application (Kubernetes mode): each driver gets a key of its own that can
// reach only its own folder of the store, `<incoming>/<appName>/`, where it writes its run's event
// log; the controller alone moves the finished log into the History Server's directory and keeps
// the archived pod logs. Spark's writer lists and heads its log directory before writing, so a
// driver writing straight into the shared directory would need to list every run's log: hence a
// folder per application, collected after the driver ended (as local mode's sandbox does).
// Pure: names, the folder, and the bucket-policy statements that grant exactly that folder.

/** The Secret (in the applications namespace, owned by the Application) holding one driver's key. */
export const eventLogSecretName = (appName: string): string => `${appName}-event-log`;

/**
 * The store's user of one application. Derived from the appName (unique among live
 * applications) so the controller finds it again after a restart without keeping state.
 */
export const eventLogAccessKeyId = (appName: string): string => `ss-${appName}`;

/** `s3a://bucket/prefix` of the folder a driver writes its event log into. */
export const appEventLogDir = (incomingDir: string, appName: string): string => `${incomingDir.replace(/\/+$/, '')}/${appName}`;

/** The key prefix (no trailing slash) of that folder, from the incoming directory's key prefix. */
export const appEventLogPrefix = (incomingPrefix: string, appName: string): string => (incomingPrefix ? `${incomingPrefix}/${appName}` : appName);

export interface PolicyStatement {
  Sid: string;
  Effect: 'Allow' | 'Deny';
  Principal: { AWS: string[] };
  Action: string[];
  Resource: string[];
  Condition?: Record<string, Record<string, string[]>>;
}

export interface BucketPolicy {
  Version: string;
  Statement: PolicyStatement[];
}

/** Every statement this service writes has a Sid starting so; the operator's own are left alone. */
export const STATEMENT_SID_PREFIX = 'SubmissionServiceEventLog';

/**
 * A Sid naming one application's statement. Sids are letters and digits only; an appName is a DNS
 * label (lowercase, digits, '-'), so '-' becomes 'X' (never in an appName): one appName, one Sid.
 */
const sidOf = (appName: string, part: string): string => `${STATEMENT_SID_PREFIX}${part}${appName.replace(/-/g, 'X')}`;

/**
 * What one application's key may do: read, write and delete the objects of its own folder (S3A
 * renames by copy and delete, and heads what it writes) and list that folder only (`s3:prefix`
 * is the folder, or under it). Nothing else: no other folder, no listing of the bucket's root,
 * no archived logs, no other application's event log. A bucket policy, not a user policy: the
 * test bed's store (versitygw 1.8) evaluates identity policies only with its separate IAM service.
 */
export function appAccessStatements(bucket: string, prefix: string, appName: string, principal: string): PolicyStatement[] {
  const folder = `arn:aws:s3:::${bucket}/${prefix}`;
  return [
    {
      Sid: sidOf(appName, 'Objects'),
      Effect: 'Allow',
      Principal: { AWS: [principal] },
      Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
      Resource: [folder, `${folder}/*`],
    },
    {
      Sid: sidOf(appName, 'List'),
      Effect: 'Allow',
      Principal: { AWS: [principal] },
      Action: ['s3:ListBucket'],
      Resource: [`arn:aws:s3:::${bucket}`],
      Condition: { StringLike: { 's3:prefix': [prefix, `${prefix}/*`] } },
    },
  ];
}

/** Whether a statement is one of this application's (by its Sid). */
const isAppStatement = (statement: { Sid?: string }, appName: string): boolean =>
  statement.Sid === sidOf(appName, 'Objects') || statement.Sid === sidOf(appName, 'List');

/** The bucket's policy with this application's statements (replacing any it had); other statements kept as they were. */
export function withAppStatements(policy: BucketPolicy | undefined, appName: string, statements: PolicyStatement[]): BucketPolicy {
  const kept = (policy?.Statement ?? []).filter((s) => !isAppStatement(s, appName));
  return { Version: policy?.Version ?? '2012-10-17', Statement: [...kept, ...statements] };
}

/** The bucket's policy without this application's statements; undefined when nothing is left (delete the policy). */
export function withoutAppStatements(policy: BucketPolicy | undefined, appName: string): BucketPolicy | undefined {
  const kept = (policy?.Statement ?? []).filter((s) => !isAppStatement(s, appName));
  return kept.length === 0 ? undefined : { Version: policy?.Version ?? '2012-10-17', Statement: kept };
}

/** The applications that have statements in a policy (the controller's sweep of leftovers). */
export function appsInPolicy(policy: BucketPolicy | undefined): string[] {
  const prefix = `${STATEMENT_SID_PREFIX}Objects`;
  return (policy?.Statement ?? []).flatMap((s) => (s.Sid?.startsWith(prefix) ? [s.Sid.slice(prefix.length).replace(/X/g, '-')] : []));
}
