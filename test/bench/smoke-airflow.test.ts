// The benches of the Airflow provider (real Airflow): a deferrable task and scheduled DAG runs.
// Each runs as bench/README.md says with tiny counts (test/helpers/bench-smoke.ts).
import { smokeTests } from '../helpers/bench-smoke.js';

smokeTests([
  'airflow/deferrable.ts',
  'airflow/scheduled.ts',
]);
