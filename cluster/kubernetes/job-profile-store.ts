// Kubernetes mode's job profiles: one JobProfile resource per job and submitting key
// (schemas/crd.ts), named `<job>.<key id>` (`<job>`: runs with no key; cluster/job-profiles.ts),
// holding the last runs that key made of the job (domain/job-history.ts) and the config its
// newest run asked for. Every replica and the webhook hold them in memory from a watch (admission reads
// them synchronously, like the templates); only the controller's leader writes them, once per
// ended run (cluster/profile-recorder.ts), with the resource's version, so that two writers
// after a leader change never lose a run: a conflict reads it again and adds the run to that.
import type { KubernetesObject } from '@kubernetes/client-node';
import { type RulesInput, type RunEvidence, withRun } from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
import { JOB_NAME, type JobProfileData, KeptJobProfiles, profileName, type RecordedJobProfiles, type Submitter } from '../job-profiles.js';
import { GROUP, JOB_PROFILES, type KubeClients, VERSION } from './client.js';
import { statusCode } from './errors.js';
import { type Log, type ResilientInformer, resilientInformer } from './informers.js';

export type JobProfileObject = KubernetesObject & { spec?: Partial<JobProfileData> };

/** The apiserver calls the profiles make (jobProfileObjects below; an in-memory fake in tests). */
export interface JobProfileObjects {
  /** Undefined when there is none (404). */
  get(name: string): Promise<JobProfileObject | undefined>;
  /** Rejects with a 409 when one exists already. */
  create(body: JobProfileObject): Promise<JobProfileObject>;
  /** Rejects with a 409 when `body`'s resourceVersion is not the current one. */
  replace(name: string, body: JobProfileObject): Promise<JobProfileObject>;
}

/** Tries of one run's write before it is given up (each a conflict with another writer). */
const WRITE_ATTEMPTS = 5;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A run as the recorder writes it; anything else (a hand edit) is left out rather than fed to admission. */
function isRun(value: unknown): value is RunEvidence {
  return isObject(value) && typeof value.appName === 'string' && typeof value.state === 'string' && typeof value.endedAt === 'string'
    && typeof value.durationMs === 'number' && isObject(value.asked) && isObject(value.ran) && isObject(value.cost)
    && (value.profile === null || isObject(value.profile));
}

/** The profile a JobProfile holds, or undefined when it is not one the service can read (its name not its own profile's among them). */
export function profileOf(object: JobProfileObject | undefined): JobProfileData | undefined {
  const spec = object?.spec;
  const name = object?.metadata?.name;
  if (!spec || !name || typeof spec.jobName !== 'string' || !Array.isArray(spec.runs)) return undefined;
  const submittedBy = typeof spec.submittedBy === 'string' ? spec.submittedBy : null;
  if (profileName(spec.jobName, submittedBy) !== name) return undefined;
  return { jobName: spec.jobName, submittedBy, asked: isObject(spec.asked) ? spec.asked as ApplicationConfig : {}, runs: spec.runs.filter(isRun) };
}

export class KubernetesJobProfiles extends KeptJobProfiles implements RecordedJobProfiles {
  /** `mayWrite`: checked before each write (this replica holds the Lease). */
  constructor(private readonly objects: JobProfileObjects, rules: RulesInput | undefined, private readonly mayWrite: () => boolean = () => true) {
    super(rules);
  }

  /** From the watch (or a write's answer): the job's profile as the apiserver has it now. */
  applyObject(object: JobProfileObject): void {
    const job = profileOf(object);
    if (job) this.keep(job);
  }

  removeObject(object: JobProfileObject): void {
    if (object.metadata?.name) this.forget(object.metadata.name);
  }

  /** Adds an ended run to its submitter's JobProfile of the job (the newest HISTORY_RUNS stay), made on the first such run. */
  async record(jobName: string, submittedBy: Submitter, asked: ApplicationConfig, run: RunEvidence): Promise<void> {
    if (!JOB_NAME.test(jobName)) return;
    const name = profileName(jobName, submittedBy);
    for (let attempt = 1; ; attempt++) {
      if (!this.mayWrite()) return;
      const current = await this.objects.get(name);
      const spec: JobProfileData = { jobName, ...(submittedBy === null ? {} : { submittedBy }), asked, runs: withRun(profileOf(current)?.runs ?? [], run) };
      const body: JobProfileObject = {
        apiVersion: `${GROUP}/${VERSION}`, kind: 'JobProfile',
        metadata: { name, ...(current?.metadata?.resourceVersion ? { resourceVersion: current.metadata.resourceVersion } : {}) },
        spec,
      };
      try {
        this.applyObject(current ? await this.objects.replace(name, body) : await this.objects.create(body));
        return;
      } catch (error) {
        if (statusCode(error) !== 409 || attempt >= WRITE_ATTEMPTS) throw error;
      }
    }
  }
}

/** The JobProfiles of `namespace` through the apiserver. */
export function jobProfileObjects(clients: KubeClients, namespace: string): JobProfileObjects {
  const where = { group: GROUP, version: VERSION, namespace, plural: JOB_PROFILES };
  return {
    get: async (name) => {
      try {
        return await clients.custom.getNamespacedCustomObject({ ...where, name }) as JobProfileObject;
      } catch (error) {
        if (statusCode(error) === 404) return undefined;
        throw error;
      }
    },
    create: async (body) => await clients.custom.createNamespacedCustomObject({ ...where, body }) as JobProfileObject,
    replace: async (name, body) => await clients.custom.replaceNamespacedCustomObject({ ...where, name, body }) as JobProfileObject,
  };
}

/** Keeps `profiles` current from a watch of `namespace`'s JobProfiles; resolves once they are listed. */
export async function watchJobProfiles(clients: KubeClients, namespace: string, profiles: KubernetesJobProfiles, log?: Log): Promise<ResilientInformer<JobProfileObject>> {
  const { kc, custom } = clients;
  const watch = resilientInformer<JobProfileObject>(kc, 'job profiles', `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${JOB_PROFILES}`,
    () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: JOB_PROFILES }) as never, { log });
  watch.informer.on('add', (object) => profiles.applyObject(object));
  watch.informer.on('update', (object) => profiles.applyObject(object));
  watch.informer.on('delete', (object) => profiles.removeObject(object));
  await watch.start();
  return watch;
}

/** How long a watch whose first list failed waits before it lists again. */
const RETRY_MS = 30_000;

/**
 * Follows the JobProfiles in the background: `ready` resolves once they are listed. A first list
 * that fails (an installation upgraded without `kubectl apply -f manifests/chart/crds/`, a Role
 * without jobprofiles) is said and tried again; meanwhile jobs have no history, so admission
 * sizes them as asked: never a reason to refuse a pod or to keep a replica from serving.
 */
export function followJobProfiles(clients: KubeClients, namespace: string, profiles: KubernetesJobProfiles, log: Log): { ready: Promise<void>; stop(): Promise<void> } {
  let stopped = false;
  let watch: ResilientInformer<JobProfileObject> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const ready = new Promise<void>((resolve) => {
    const attempt = () => {
      watchJobProfiles(clients, namespace, profiles, log).then(async (started) => {
        if (stopped) { await started.stop(); return; }
        watch = started;
        resolve();
      }, (error: unknown) => {
        if (stopped) return;
        log(`job profiles cannot be listed (${(error as Error)?.message ?? String(error)}): jobs are sized as asked until they can; is the JobProfile CRD applied?`);
        timer = setTimeout(attempt, RETRY_MS);
        timer.unref();
      });
    };
    attempt();
  });
  return {
    ready,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await watch?.stop();
    },
  };
}
