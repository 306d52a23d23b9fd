// The names by which the service recognises its pods, and Spark's own labels.
export const LABEL_JOB = 'submission-service/job-name';
export const LABEL_TEMPLATE = 'submission-service/config-template';
export const LABEL_APP = 'submission-service/app-name';
export const ANNOTATION_OVERRIDES = 'submission-service/config-overrides';
/** The effective config, as admission computed it. */
export const ANNOTATION_CONFIG = 'submission-service/config';
/** Stamped on every pod admission changed, with the rule set's version. */
export const ANNOTATION_ADMITTED = 'submission-service/admitted-by';
export const RULES_VERSION = 'submission-service-rules/v1';

export const SPARK_ROLE = 'spark-role';
export const SPARK_APP_SELECTOR = 'spark-app-selector';
export const DRIVER_CONTAINER = 'spark-kubernetes-driver';
