// The gate on sandboxed drivers' Spark UIs. A driver's UI listens on loopback (the proxy's way
// in), where every other driver on this machine could open it too: the sandbox shares the
// network namespace. So each sandboxed driver's UI carries the filter the History Server has
// (ui-gate.ts), with a secret of its own run that only the service holds (in the run's record)
// and sends after the proxy's checks. Unsandboxed drivers run as the service's user and could
// read those records anyway: for them the gate would protect nothing, and it is left off.
import { buildUiGate, gateClasses, newGateSecret } from './ui-gate.js';
import { sparkJars } from './spark-builds.js';
import type { DriverSandbox } from './sandbox.js';

export interface GatedRun {
  /** What spark-command.ts puts on the driver: the filter's classes and this run's secret. */
  uiGate: { classes: string; secret: string };
  /** The sandbox with the filter's classes readable (they lie in the service's cache, hidden otherwise). */
  sandbox: DriverSandbox;
}

export class DriverUiGates {
  /** The filter's classes per Spark (its spark-submit): compiled once, at the first driver of that Spark. */
  private readonly built = new Map<string, Promise<string | undefined>>();

  constructor(private readonly build: (jars: string) => Promise<string> = buildUiGate) {}

  /**
   * The gate for one run of the Spark behind `sparkSubmit`; rejects (the driver does not start)
   * when it cannot be built. Undefined when no Spark's jars are found beside it: a program that
   * only stands in for spark-submit (a test double) serves no Spark UI to keep.
   */
  async forRun(spark: { sparkSubmit: string; python?: string }, sandbox: DriverSandbox): Promise<GatedRun | undefined> {
    let classes = this.built.get(spark.sparkSubmit);
    if (!classes) {
      classes = sparkJars(spark.sparkSubmit, spark.python).then(this.build, () => undefined).then((built) => built && gateClasses(built));
      this.built.set(spark.sparkSubmit, classes);
      classes.catch(() => this.built.delete(spark.sparkSubmit));
    }
    const dir = await classes;
    return dir === undefined ? undefined : { uiGate: { classes: dir, secret: newGateSecret() }, sandbox: { ...sandbox, readable: [...sandbox.readable, dir] } };
  }
}
