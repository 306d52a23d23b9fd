// The realistic submission the benchmarks use: a Python ETL job on a stored template,
// executor cores 4 (sized onto the 4-core pool), some Spark settings of its own.
import type { ApplicationConfig, ConfigTemplate, Submission } from '../schemas/index.js';

export const TEMPLATE: ConfigTemplate = {
  name: 'python-etl',
  config: {
    type: 'Python',
    engineVersion: '3.5.7',
    pythonVersion: '3',
    mainApplicationFile: 'gs://example-bucket/jobs/etl/main.py',
    engineConf: {
      'spark.sql.adaptive.enabled': 'true',
      'spark.sql.shuffle.partitions': '64',
      'spark.serializer': 'org.apache.spark.serializer.KryoSerializer',
    },
    driver: {
      secrets: [{ name: 'gcs-reader', path: '/mnt/secrets/gcs', secretType: 'CloudServiceAccount' }],
      labels: { team: 'data-platform' },
    },
    executor: {
      instances: 2,
      secrets: [{ name: 'gcs-reader', path: '/mnt/secrets/gcs', secretType: 'CloudServiceAccount' }],
      env: { TZ: 'UTC' },
    },
  },
};

export const OVERRIDES: ApplicationConfig = {
  arguments: ['--date', '2024-05-01', '--input', 'gs://example-bucket/raw/2024-05-01/', '--output', 'gs://example-bucket/curated/'],
  engineConf: {
    'spark.sql.shuffle.partitions': '200',
    'spark.network.timeout': '300s',
    'spark.executor.heartbeatInterval': '20s',
    'spark.dynamicAllocation.maxExecutors': '8',
  },
  driver: { cores: 1 },
  executor: { cores: 4, instances: 3 },
};

export const SUBMISSION: Submission = {
  jobName: 'nightly-etl',
  configTemplateName: TEMPLATE.name,
  configOverrides: OVERRIDES,
};
