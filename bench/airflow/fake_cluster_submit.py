#!/usr/bin/env python3
"""TEST DOUBLE for `spark-submit --deploy-mode cluster` as Kubeflow's Spark Operator runs it (its
SPARK_HOME/bin/spark-submit in bench/airflow/vs-spark-operator.ts): it creates the driver pod that
Spark's Kubernetes client would create, with the labels, name, namespace, image, service account and
container arguments that the operator's --conf options ask for, then exits, as spark-submit does with
waitAppCompletion=false. No JVM: a hundred real spark-submits would take the 2-core machine minutes of
CPU that have nothing to do with what the bench measures (what Airflow spends while the runs last).
The test bed's FakeKubelet runs the pod (its app arguments tell fake-spark-submit how long to sleep).
The test bed's admission webhook renders every pod labelled with a job from the config-overrides
annotation, as it renders our own bare pods: the double writes the application's file and arguments
there, so that both operators' drivers are the same pod, run the same way.
Standard library only, so it starts in milliseconds.
"""
import json
import ssl
import sys
import urllib.error
import urllib.request
import uuid
from typing import Dict, List, Tuple

OVERRIDES = "submission-service/config-overrides"  # domain/labels.ts: ANNOTATION_OVERRIDES


def parse(args: List[str]) -> Tuple[Dict[str, str], Dict[str, str], List[str]]:
    """spark-submit's options (--name value), its --conf pairs, and the primary resource with its arguments."""
    options: Dict[str, str] = {}
    conf: Dict[str, str] = {}
    i = 0
    while i < len(args) and args[i].startswith("--"):
        if args[i] == "--conf":
            key, _, value = args[i + 1].partition("=")
            conf[key] = value
        else:
            options[args[i]] = args[i + 1]
        i += 2
    return options, conf, args[i:]


def driver_pod(options: Dict[str, str], conf: Dict[str, str], application: List[str]) -> Dict[str, object]:
    """The driver pod spark-submit's Kubernetes client builds (the fields that matter to a watcher)."""
    prefix = "spark.kubernetes.driver.label."
    labels = {key[len(prefix):]: value for key, value in conf.items() if key.startswith(prefix)}
    labels.update({"spark-role": "driver", "spark-app-selector": "spark-" + uuid.uuid4().hex,
                   "spark-app-name": options.get("--name", "spark")[:63]})
    main_class = options.get("--class", "org.apache.spark.deploy.PythonRunner")
    overrides = {"type": "Python" if application[0].endswith(".py") else "Scala", "mainApplicationFile": application[0],
                 "arguments": application[1:]}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": conf["spark.kubernetes.driver.pod.name"], "namespace": conf["spark.kubernetes.namespace"], "labels": labels,
                     "annotations": {OVERRIDES: json.dumps(overrides)}},
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": conf.get("spark.kubernetes.authenticate.driver.serviceAccountName", "default"),
            "containers": [{
                "name": "spark-kubernetes-driver",
                "image": conf.get("spark.kubernetes.driver.container.image", conf.get("spark.kubernetes.container.image", "")),
                "args": ["driver", "--properties-file", "/opt/spark/conf/spark.properties", "--class", main_class, *application],
            }],
        },
    }


def main(args: List[str]) -> int:
    options, conf, application = parse(args)
    server = options["--master"][len("k8s://"):]
    pod = driver_pod(options, conf, application)
    context = ssl.create_default_context(cafile=conf["spark.kubernetes.authenticate.submission.caCertFile"])
    with open(conf["spark.kubernetes.authenticate.submission.oauthTokenFile"]) as token_file:
        token = token_file.read().strip()
    request = urllib.request.Request("%s/api/v1/namespaces/%s/pods" % (server, pod["metadata"]["namespace"]),  # type: ignore[index]
                                     data=json.dumps(pod).encode(), method="POST",
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=60):
            return 0
    except urllib.error.HTTPError as error:
        # As fabric8 words it (code=409 when the pod exists: the operator looks for that).
        sys.stderr.write("Failure executing: POST, code=%d: %s" % (error.code, error.read().decode(errors="replace")))
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
