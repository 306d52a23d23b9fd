// Gives the control plane a core of its own, as a real cluster does: its apiserver and etcd run
// on control-plane nodes, the service on workers. On the test bed every process shares the
// machine's cores, so a submission's rate there is bounded by the CPU of all of them together
// (the service's included), not by what it costs the apiserver. Pinned, the control plane's Go
// process (all its threads) runs on the first core and everything else of the bench (the
// service, the webhook, the gateway, this process) on the others: the rate is then bounded by the
// apiserver's own core, for the ceiling and for the submissions alike.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { CONTROL_PLANE, testbedProcesses } from './costs.js';

/** `taskset -a -c -p CPUS PID`: every thread of the process, and those it starts later. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-c', '-p', cpus, String(pid)], { stdio: 'ignore' });
}

/** Pins as above; returns what it did, for the report. Needs at least two cores. */
export function pinControlPlane(servePid: number): string {
  const cores = availableParallelism();
  if (cores < 2) throw new Error('pinning the control plane needs at least two cores');
  const rest = cores === 2 ? '1' : `1-${cores - 1}`;
  const processes = testbedProcesses(servePid);
  if (!processes.some((p) => p.role === CONTROL_PLANE)) throw new Error('no control-plane process under the test bed');
  for (const { pid, role } of processes) pin(pid, role === CONTROL_PLANE ? '0' : rest);
  pin(process.pid, rest);
  return `control plane on CPU 0; the service, webhook, gateway and this bench on CPU ${rest}`;
}
