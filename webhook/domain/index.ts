// The admission domain: pure functions shared by the webhook, the API and local mode.
export * from './admit.js';
export * from './defaults.js';
export * from './driver-pod.js';
export * from './effective-config.js';
export * from './event-log.js';
export * from './labels.js';
export * from './merge.js';
export * from './overrides-schema.js';
export * from './policy.js';
export * from './quantities.js';
export * from './rules.js';
export * from './sizing.js';
export * from './spark-properties.js';
export * from './spark-ui.js';
export * from './sizing-explanation.js';
export * from './sizing-annotation.js';
