{{/* Names are fixed: SPEC names the services `submission-service` and `notebook-service`, so one
release per namespace. Cluster-scoped objects carry the namespace to stay unique. */}}
{{- define "ss.name" -}}submission-service{{- end }}
{{- define "ss.webhookConfigurationName" -}}submission-service-{{ .Release.Namespace }}{{- end }}
{{- define "ss.webhookClusterRoleName" -}}submission-service-webhook-{{ .Release.Namespace }}{{- end }}
{{- define "ss.webhookServiceName" -}}submission-service-webhook{{- end }}
{{- define "ss.webhookCertSecretName" -}}submission-service-webhook-cert{{- end }}
{{- define "ss.connectCertSecretName" -}}submission-service-connect-cert{{- end }}
{{- define "ss.connectServiceName" -}}submission-service-connect{{- end }}
{{- define "ss.authSecretName" -}}{{ .Values.auth.existingSecret | default "submission-service-auth" }}{{- end }}
{{- define "ss.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end }}

{{/* Selector labels of one component: (dict "root" $ "component" "api") */}}
{{- define "ss.selectorLabels" -}}
app.kubernetes.io/name: submission-service
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "ss.labels" -}}
{{ include "ss.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}

{{/* What every pod of ours shares: (dict "root" $ "component" "api") */}}
{{- define "ss.podCommon" -}}
serviceAccountName: submission-service-{{ .component }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{ toJson . }}
{{- end }}
securityContext: {{ toJson .root.Values.podSecurityContext }}
{{- with .root.Values.nodeSelector }}
nodeSelector: {{ toJson . }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations: {{ toJson . }}
{{- end }}
{{- end }}

{{/* The config file the webhook reads, and the volume that holds it. */}}
{{- define "ss.configVolume" -}}
- name: config
  configMap:
    name: submission-service-config
{{- end }}
{{- define "ss.configMount" -}}
- name: config
  mountPath: /etc/submission-service
  readOnly: true
{{- end }}
{{- define "ss.configChecksum" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- end }}

{{/* Scrape annotations of a pod: (dict "root" $ "port" 8080) */}}
{{- define "ss.scrapeAnnotations" -}}
{{- if .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* Whether the history is on: enabled and an event log directory named. */}}
{{- define "ss.historyOn" -}}
{{- if and .Values.history.enabled .Values.history.eventLogDir }}true{{ end -}}
{{- end -}}

{{/* The node-pool file's history section (cli/rules.ts, cli/kubernetes-history.ts), as JSON. */}}
{{- define "ss.historySection" -}}
{{- if include "ss.historyOn" . -}}
{{- $h := dict "enabled" true "eventLogDir" .Values.history.eventLogDir "pathStyleAccess" .Values.history.pathStyleAccess "credentialsSecret" (include "ss.driverCredentialsSecret" .) "serverUrl" (printf "http://submission-service-history.%s.svc:%v" .Release.Namespace .Values.history.server.port) -}}
{{- with .Values.history.logArchiveDir }}{{ $_ := set $h "logArchiveDir" . }}{{ end -}}
{{- with .Values.history.s3Endpoint }}{{ $_ := set $h "s3Endpoint" . }}{{ end -}}
{{- with .Values.history.s3Region }}{{ $_ := set $h "s3Region" . }}{{ end -}}
{{- with .Values.history.driverKeys }}{{ $_ := set $h "driverKeys" . }}{{ end -}}
{{- with .Values.history.incomingDir }}{{ $_ := set $h "incomingDir" . }}{{ end -}}
{{- with .Values.history.storeAdminEndpoint }}{{ $_ := set $h "storeAdminEndpoint" . }}{{ end -}}
{{- toJson $h -}}
{{- else -}}
{"enabled": false}
{{- end -}}
{{- end -}}

{{/* The Secret drivers get (the node-pool file's history.credentialsSecret): the drivers' own key
when one is set, else the controller's (NOTES.txt says what that shares). */}}
{{- define "ss.driverCredentialsSecret" -}}
{{ .Values.history.driverCredentialsSecret | default .Values.history.credentialsSecret }}
{{- end -}}

{{/* Whether drivers hold the controller's own key (no driverCredentialsSecret of their own, no key per application). */}}
{{- define "ss.driversShareControllerKey" -}}
{{- if and (not (include "ss.keyPerApplication" .)) (eq (include "ss.driverCredentialsSecret" .) .Values.history.credentialsSecret) }}true{{ end -}}
{{- end -}}

{{/* Whether the controller makes each driver a key of its own (history.driverKeys other than shared). */}}
{{- define "ss.keyPerApplication" -}}
{{- if and .Values.history.driverKeys (ne .Values.history.driverKeys "shared") }}true{{ end -}}
{{- end -}}

{{/* S3A's credentials from history.credentialsSecret (the controller's key: api and History
Server only), as environment variables (never in a ConfigMap). */}}
{{- define "ss.historyCredentials" -}}
{{- if include "ss.historyOn" . }}
{{- range list "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" }}
- name: {{ . }}
  valueFrom:
    secretKeyRef: { name: {{ $.Values.history.credentialsSecret }}, key: {{ . }} }
{{- end }}
{{- end }}
{{- end -}}

{{/* Command-line flags given only when their value is set: (list (list "--flag" value) ...).
"" or absent leaves the flag out, so the program's own default holds; 0 is a value. A whole
number read from a values file is a float to Helm: printed as an integer (1000000, not 1e+06). */}}
{{- define "ss.optionalFlags" -}}
{{- $lines := list }}
{{- range . }}
{{- $value := index . 1 }}
{{- if and (not (kindIs "invalid" $value)) (ne (toString $value) "") }}
{{- if and (kindIs "float64" $value) (eq (floor $value) $value) }}{{ $value = int64 $value }}{{ end }}
{{- $lines = append $lines (printf "- %s" (index . 0)) }}
{{- $lines = append $lines (printf "- %s" (toString $value | quote)) }}
{{- end }}
{{- end }}
{{- join "\n" $lines }}
{{- end }}

{{/* Where drivers' folders are with a key per application: history.incomingDir, else spark-incoming in the event logs' bucket. */}}
{{- define "ss.incomingDir" -}}
{{- .Values.history.incomingDir | default (printf "%s/spark-incoming" (regexFind "^s3a?://[^/]+" .Values.history.eventLogDir)) -}}
{{- end -}}

{{/* The Spark runtime image of one engineVersion (dict "root" $ "version" V): images' entry, else imagePattern. */}}
{{- define "ss.sparkImage" -}}
{{- index .root.Values.images .version | default (replace "{version}" .version .root.Values.imagePattern) -}}
{{- end -}}

{{/* Copies the Spark UI's static files out of the spark-core jar in argv[1] (a jars folder) into
argv[2] (api.sparkStaticFromImages' init containers; python3 is in every Spark runtime image). */}}
{{- define "ss.sparkStaticScript" -}}
import glob, os, sys, zipfile
jars, out = sys.argv[1:3]
prefix = "org/apache/spark/ui/static/"
with zipfile.ZipFile(sorted(glob.glob(os.path.join(jars, "spark-core_*.jar")))[0]) as jar:
    for entry in jar.infolist():
        name = entry.filename[len(prefix):]
        if entry.filename.startswith(prefix) and name and not entry.is_dir() and ".." not in name.split("/"):
            target = os.path.join(out, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with jar.open(entry) as source, open(target, "wb") as copy:
                copy.write(source.read())
{{- end -}}
