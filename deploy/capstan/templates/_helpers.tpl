{{/* The release's full name: the release name, with the chart's name unless it contains it. */}}
{{- define "capstan.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods. */}}
{{- define "capstan.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pod labels a Deployment selects: the default shard's are the release's selector
labels; a shard's differ in name (so the default shard's selector and the webhook Service do
not take its pods) and carry the shard key. Takes a dict with root and shard. */}}
{{- define "capstan.shardSelectorLabels" -}}
{{- if .shard -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}-shard
app.kubernetes.io/instance: {{ .root.Release.Name }}
sharding.capstan.dev/key: {{ .shard | quote }}
{{- else -}}
{{ include "capstan.selectorLabels" .root }}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "capstan.labels" -}}
{{ include "capstan.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "capstan.serviceAccountName" -}}
{{- default (include "capstan.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "capstan.webhookService" -}}
{{- printf "%s-webhook" (include "capstan.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Secret with the webhook's serving certificate. */}}
{{- define "capstan.webhookSecret" -}}
{{- default (printf "%s-webhook-cert" (include "capstan.fullname" .)) .Values.webhook.certSecret -}}
{{- end -}}
