// Which request paths name one of Spark's static files (its UI's scripts, styles, images): a
// plain path below `/static/`, no `..`, no encoded characters. One rule for the Spark UI proxy's
// cookieless answers (dashboard/spark-ui-access.ts) and the two places those files come from
// (cluster/local/spark-static.ts, cluster/history/remote-spark-static.ts).
export const SPARK_STATIC_PATH = /^\/static\/(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
