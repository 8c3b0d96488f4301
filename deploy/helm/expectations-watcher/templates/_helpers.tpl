{{/* Names, labels and the pieces both Deployments share. */}}

{{- define "watcher.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "watcher.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "watcher.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "watcher.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "watcher.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "watcher.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component (worker or bridge): (dict "root" $ "component" "worker"). */}}
{{- define "watcher.selectorLabels" -}}
app.kubernetes.io/name: {{ include "watcher.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "watcher.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "watcher.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "watcher.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/*
The Secret each secret setting is read from: the one the values name, else the one the chart renders from an inline
value, else nothing. (dict "root" $ "values" .Values.temporal.apiKey "inline" "value" "suffix" "temporal-api-key")
*/}}
{{- define "watcher.secretName" -}}
{{- if .values.existingSecret }}
{{- .values.existingSecret }}
{{- else if index .values .inline }}
{{- printf "%s-%s" (include "watcher.fullname" .root) .suffix }}
{{- end }}
{{- end }}

{{- define "watcher.apiKeySecret" -}}
{{- include "watcher.secretName" (dict "root" . "values" .Values.temporal.apiKey "inline" "value" "suffix" "temporal-api-key") }}
{{- end }}

{{- define "watcher.principalsSecret" -}}
{{- include "watcher.secretName" (dict "root" . "values" .Values.principals "inline" "json" "suffix" "principals") }}
{{- end }}

{{- define "watcher.codecKeysSecret" -}}
{{- include "watcher.secretName" (dict "root" . "values" .Values.codecKeys "inline" "json" "suffix" "codec-keys") }}
{{- end }}

{{/* Generated when neither is given, so this one always names a Secret. */}}
{{- define "watcher.pageTokenSecret" -}}
{{- default (printf "%s-page-token" (include "watcher.fullname" .)) .Values.pageTokenSecret.existingSecret }}
{{- end }}

{{/* Where the Secrets are mounted in the containers. */}}
{{- define "watcher.principalsDir" -}}/etc/expectations-watcher/principals{{- end }}
{{- define "watcher.codecKeysDir" -}}/etc/expectations-watcher/codec-keys{{- end }}
{{- define "watcher.temporalTlsDir" -}}/etc/expectations-watcher/temporal-tls{{- end }}

{{- define "watcher.validate" -}}
{{- if not .Values.temporal.address }}
{{- fail "temporal.address: the Temporal frontend (host:port) is required; the chart starts no Temporal" }}
{{- end }}
{{- if not (include "watcher.principalsSecret" .) }}
{{- fail "principals: set principals.existingSecret to a Secret holding the principals file, or give the file with --set-file principals.json=<file>" }}
{{- end }}
{{- $tls := .Values.temporal.tls }}
{{- if and $tls.existingSecret (ne (empty $tls.clientCertKey) (empty $tls.clientKeyKey)) }}
{{- fail "temporal.tls: clientCertKey and clientKeyKey go together (a client certificate needs its key)" }}
{{- end }}
{{- with .Values.pageTokenSecret.value }}
{{- if lt (len .) 32 }}
{{- fail "pageTokenSecret.value: at least 32 characters (it signs the list page tokens)" }}
{{- end }}
{{- end }}
{{- if and .Values.keda.enabled (lt (int .Values.keda.minReplicaCount) 1) }}
{{- fail "keda.minReplicaCount: at least 1; with no worker polling the task queue every bridge's /readyz fails" }}
{{- end }}
{{- end }}

{{/*
The environment of both processes: the Temporal connection, the principals file, the codec keys, the settings map,
and the bridge's page token secret. Every name is one src/config.ts reads (test/unit/deploy/helm-chart.test.ts checks).
(dict "root" $ "component" "bridge")
*/}}
{{- define "watcher.env" -}}
{{- $component := .component }}
{{- $root := .root }}
{{- with .root -}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: TEMPORAL_TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
{{- with .Values.temporal.uiUrl }}
- name: TEMPORAL_UI_URL
  value: {{ . | quote }}
{{- end }}
{{- $tls := .Values.temporal.tls }}
{{- if $tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- end }}
{{- if $tls.existingSecret }}
{{- if $tls.clientCertKey }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: {{ printf "%s/client.crt" (include "watcher.temporalTlsDir" .) | quote }}
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: {{ printf "%s/client.key" (include "watcher.temporalTlsDir" .) | quote }}
{{- end }}
{{- if $tls.serverCaKey }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: {{ printf "%s/server-ca.crt" (include "watcher.temporalTlsDir" .) | quote }}
{{- end }}
{{- end }}
{{- with $tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- with include "watcher.apiKeySecret" . }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $root.Values.temporal.apiKey.key }}
{{- end }}
- name: WATCHER_PRINCIPALS_FILE
  value: {{ printf "%s/principals.json" (include "watcher.principalsDir" .) | quote }}
{{- if include "watcher.codecKeysSecret" . }}
- name: WATCHER_CODEC_KEYS_FILE
  value: {{ printf "%s/codec-keys.json" (include "watcher.codecKeysDir" .) | quote }}
{{- end }}
{{- if eq $component "bridge" }}
- name: WATCHER_PAGE_TOKEN_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "watcher.pageTokenSecret" . }}
      key: {{ .Values.pageTokenSecret.key }}
{{- end }}
- name: WATCHER_DATA_DIR
  value: /app/.data
{{- range $name, $value := .Values.settings }}
- name: {{ $name }}
  value: {{ toString $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret volumes both processes mount, and the two writable directories of a read-only root. */}}
{{- define "watcher.volumes" -}}
- name: principals
  secret:
    secretName: {{ include "watcher.principalsSecret" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.principals.key }}
        path: principals.json
{{- with include "watcher.codecKeysSecret" . }}
- name: codec-keys
  secret:
    secretName: {{ . }}
    defaultMode: 0440
    items:
      - key: {{ $.Values.codecKeys.key }}
        path: codec-keys.json
{{- end }}
{{- $tls := .Values.temporal.tls }}
{{- if $tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ $tls.existingSecret }}
    defaultMode: 0440
    items:
      {{- if $tls.clientCertKey }}
      - key: {{ $tls.clientCertKey }}
        path: client.crt
      - key: {{ $tls.clientKeyKey }}
        path: client.key
      {{- end }}
      {{- if $tls.serverCaKey }}
      - key: {{ $tls.serverCaKey }}
        path: server-ca.crt
      {{- end }}
{{- end }}
# The root file system is read-only: the data directory (the image's one writable directory) and /tmp (tsx's cache).
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- end }}

{{- define "watcher.volumeMounts" -}}
- name: principals
  mountPath: {{ include "watcher.principalsDir" . }}
  readOnly: true
{{- if include "watcher.codecKeysSecret" . }}
- name: codec-keys
  mountPath: {{ include "watcher.codecKeysDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  mountPath: {{ include "watcher.temporalTlsDir" . }}
  readOnly: true
{{- end }}
- name: data
  mountPath: /app/.data
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* The image runs as `node` (uid 1000) and writes only the two emptyDirs. */}}
{{- define "watcher.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "watcher.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}
