{{/* The prefix of every object's name: the release name, with the chart's
name appended unless the release name already contains it. */}}
{{- define "dynamo-go.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 32 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 32 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; (dict "ctx" $ "component" NAME). */}}
{{- define "dynamo-go.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: dynamo-go
{{ include "dynamo-go.selectorLabels" . }}
{{- end -}}

{{/* Labels that select a component's pods; (dict "ctx" $ "component" NAME). */}}
{{- define "dynamo-go.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The image of a binary; (dict "ctx" $ "name" "frontend"). */}}
{{- define "dynamo-go.image" -}}
{{- printf "%s/%s:%s" .ctx.Values.image.repository .name (.ctx.Values.image.tag | default .ctx.Chart.AppVersion) -}}
{{- end -}}

{{- define "dynamo-go.etcdEndpoints" -}}
{{- if .Values.etcd.enabled -}}
{{- printf "http://%s-etcd:2379" (include "dynamo-go.fullname" .) -}}
{{- else -}}
{{- required "etcd.enabled is false: set etcd.endpoints (ETCD_ENDPOINTS)" .Values.etcd.endpoints -}}
{{- end -}}
{{- end -}}

{{- define "dynamo-go.natsURL" -}}
{{- if .Values.nats.enabled -}}
{{- printf "nats://%s-nats:4222" (include "dynamo-go.fullname" .) -}}
{{- else -}}
{{- required "nats.enabled is false: set nats.url (NATS_SERVER)" .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{/* Environment of every frontend and worker container: the control
plane, the pod's address to advertise, logs and tracing. */}}
{{- define "dynamo-go.env" -}}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: ETCD_ENDPOINTS
  value: {{ include "dynamo-go.etcdEndpoints" . | quote }}
- name: NATS_SERVER
  value: {{ include "dynamo-go.natsURL" . | quote }}
- name: DYN_TCP_RPC_HOST
  value: $(POD_IP)
- name: DYN_TCP_RESPONSE_STREAM_HOST
  value: $(POD_IP)
- name: DYN_LOG
  value: {{ .Values.dynamo.logLevel | quote }}
- name: DYN_LOGGING_JSONL
  value: {{ ternary "1" "0" .Values.dynamo.logJSON | quote }}
{{- if .Values.dynamo.tracing.enabled }}
- name: OTEL_EXPORT_ENABLED
  value: "1"
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ required "dynamo.tracing.enabled: set dynamo.tracing.endpoint" .Values.dynamo.tracing.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .Values.dynamo.tracing.protocol | quote }}
{{- end }}
{{- with .Values.dynamo.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The writable directories of a read-only root file system. */}}
{{- define "dynamo-go.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- end -}}
