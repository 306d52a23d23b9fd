// submission-service: one command, a subcommand per process or task.
// Each command is imported when used: the Kubernetes client alone costs a second to load.
import { installProcessGuards } from '../lib/process-guards.js';

const USAGE = `usage: submission-service <command> [options]

  local            the whole service on this machine (API, admission in-process, Spark drivers as local processes)
                   --port 8080 --host 127.0.0.1 --data-dir DIR --node-pools FILE --auth on|off --cores N
                   --allowed-hosts localhost,127.0.0.1,::1 (Host names served while auth is off)
                   --cull-idle-seconds N --warm-pool TEMPLATE=N (repeatable); the notebook gateway at /notebooks
                   --kernels-per-key N (kernels a user key holds at once; default 5, 0: no limit)
                   --kernel-launch-timeout S (600) --kernel-restart-timeout S (60) --kernel-interrupt-timeout S (10)
                   --websocket-ping-interval S (30, 0: off) --websocket-ping-timeout S (three pings, ≥ 30); also for gateway
                   --allowed-origins URL,… (browser pages whose websockets are accepted besides this service's own)
                   --spark-ui-host NAME[:PORT] (each proxied Spark UI on <app>.NAME, an origin of its own; default: this host, sandboxed)
  api              the API in Kubernetes mode   --kubeconfig F --namespace NS --port 8080 --auth on|off --keys-secret NS/NAME
                   --spark-ui-host NAME[:PORT]
  webhook          the admission webhook (HTTPS) --kubeconfig F --namespace NS --node-pools FILE --cert-dir DIR
                   --cert-secret NS/NAME --register NAME
  gateway          the notebook gateway alone  --api-url URL --port 8888 --host 0.0.0.0 --auth on|off
                   --keys-secret NS/NAME [--kubeconfig F] --data-dir DIR --launcher-url ws://… --launcher-file local://…
                   --cull-idle-seconds N (0: never) --warm-pool TEMPLATE=N (repeatable, kernels kept ready with Spark)
                   --allowed-origins URL,… (browser pages whose websockets are accepted besides the gateway's own origin)
                   --kernels-per-key N (default 5); its own key: SUBMISSION_SERVICE_API_KEY; the secret it
                   shares with the API (kernel labels, launchers): SUBMISSION_SERVICE_GATEWAY_SECRET
  release-finalizers
                   takes the log-archive finalizer off every pod of the applications namespace
                   (the chart's pre-delete hook runs it)  --namespace NS [--kubeconfig F]
  keys create --role user|admin [--label L] | keys list | keys revoke ID
                   (--data-dir DIR, or --secret NAMESPACE/NAME [--kubeconfig F] for a cluster's keys)
  apps submit --job NAME [--template T] [--set executor.cores=4] [--file overrides.json] [--follow] [--dry-run]
  apps list [--job NAME] [--state STATE] [--search TEXT]
  apps logs APP [-f]
                   (apps: --url, or SUBMISSION_SERVICE_URL; --api-key, or SUBMISSION_SERVICE_API_KEY)
  schedules create NAME --cron "0 3 * * *" --job NAME [--time-zone TZ] [--template T] [--set k=v] [--concurrency Allow|Forbid|Replace]
                   [--starting-deadline S] [--suspend] | schedules list | get NAME | pause NAME | resume NAME | delete NAME
`;

async function main(argv: string[]): Promise<number> {
  installProcessGuards();
  const [command, ...rest] = argv;
  switch (command) {
    case 'local': return (await import('./local.js')).localCommand(rest);
    case 'keys': return (await import('./keys.js')).keysCommand(rest, (await import('./config.js')).defaultDataDir());
    case 'apps': return (await import('./apps.js')).appsCommand(rest);
    case 'schedules': return (await import('./schedules.js')).schedulesCommand(rest);
    case 'api': return (await import('./kubernetes.js')).apiCommand(rest);
    case 'webhook': return (await import('./kubernetes.js')).webhookCommand(rest);
    case 'gateway': return (await import('./gateway.js')).gatewayCommand(rest);
    case 'release-finalizers': return (await import('./release-finalizers.js')).releaseFinalizersCommand(rest);
    case undefined: case '-h': case '--help': case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => { if (code !== undefined && code !== -1) process.exitCode = code; },
  (error: Error) => {
    process.stderr.write(`submission-service: ${error.message}\n`);
    process.exitCode = 1;
  },
);
