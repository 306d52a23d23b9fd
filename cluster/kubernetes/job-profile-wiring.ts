// Jobs' past runs in Kubernetes mode, wired to the cluster: the JobProfiles followed by every
// replica (job-profile-store.ts), and the recorder that writes each ended run into its job's
// profile on the replica holding the Lease (cluster/profile-recorder.ts), as a controller of
// the manager.
import type { RulesInput } from '../../domain/index.js';
import type { Cluster } from '../cluster.js';
import { ProfileRecorder, type ProfileRecorderOptions } from '../profile-recorder.js';
import type { KubeClients } from './client.js';
import { Controller } from './controller.js';
import type { Log as LogFn } from './informers.js';
import { followJobProfiles, type KubernetesJobProfiles } from './job-profile-store.js';
import type { Manager } from './manager.js';

export interface JobProfileWiringDeps {
  clients: KubeClients;
  namespace: string;
  profiles: KubernetesJobProfiles;
  manager: Manager;
  /** The runs to catch up on, and their ends as they come. */
  cluster: Pick<Cluster, 'events' | 'submission' | 'list'>;
  log: LogFn;
}

export class JobProfileWiring {
  private follow?: ReturnType<typeof followJobProfiles>;
  private recorder?: ProfileRecorder;

  constructor(private readonly deps: JobProfileWiringDeps) {}

  /** Follows the JobProfiles in the background (once). */
  start(): void {
    this.follow ??= followJobProfiles(this.deps.clients, this.deps.namespace, this.deps.profiles, this.deps.log);
  }

  /** Resolves once the JobProfiles are listed. */
  ready(): Promise<void> {
    return this.follow?.ready ?? Promise.reject(new Error('the cluster is not started'));
  }

  /**
   * A controller of the manager with one key: at the start of each term and at every resync it
   * catches up on the runs that ended lately and are not recorded yet.
   */
  record(readProfile: ProfileRecorderOptions['readProfile'], rules: RulesInput): ProfileRecorder {
    const { manager, log, cluster } = this.deps;
    const recorder = new ProfileRecorder({
      cluster, profiles: this.deps.profiles, rules, readProfile, mayRecord: () => manager.isLeader,
      warn: (message, { err, appName }) => log(`${appName}: ${message}: ${(err as Error)?.message ?? String(err)}`),
    });
    this.recorder = recorder;
    manager.register({
      controller: new Controller({
        name: 'job-profiles', workers: 1, keys: () => ['catch-up'], mayWrite: () => manager.isLeader,
        reconcile: async () => { recorder.catchUp((await cluster.list({ limit: Number.MAX_SAFE_INTEGER })).items); },
        onError: (_key, error) => log(`job profiles: catching up: ${(error as Error)?.message ?? String(error)}`),
      }),
    });
    return recorder;
  }

  /** The recorder takes no more runs, `stopControllers` runs, then the recordings under way end and the watch stops. */
  async close(stopControllers: () => Promise<void>): Promise<void> {
    this.recorder?.close();
    await stopControllers();
    await this.recorder?.idle();
    await this.follow?.stop();
  }
}
