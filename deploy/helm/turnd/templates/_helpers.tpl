{{/* Names, labels and the image reference. */}}

{{- define "turnd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "turnd.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "turnd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "turnd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "turnd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "turnd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/component: turn-server
app.kubernetes.io/part-of: turnd
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "turnd.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "turnd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "turnd.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret turnd.yaml is read from: the user's, or the one the chart renders. */}}
{{- define "turnd.configSecretName" -}}
{{- .Values.existingSecret | default (printf "%s-config" (include "turnd.fullname" .)) -}}
{{- end -}}

{{/*
Whether some port the pod binds is below 1024, which needs CAP_NET_BIND_SERVICE
on nodes with the usual net.ipv4.ip_unprivileged_port_start of 1024 (a
host-network pod cannot change that sysctl; README "Ports below 1024" says why
the capability alone is not enough for a non-root process). Prints "true" or
nothing.
*/}}
{{- define "turnd.needsBindService" -}}
{{- $v := .Values -}}
{{- $low := lt (int $v.ports.http) 1024 -}}
{{- if and (or $v.transports.udp $v.transports.tcp) (lt (int $v.ports.turn) 1024) -}}{{- $low = true -}}{{- end -}}
{{- if and $v.tls.enabled (lt (int $v.ports.tls) 1024) -}}{{- $low = true -}}{{- end -}}
{{- if lt (int $v.config.relay.min_port) 1024 -}}{{- $low = true -}}{{- end -}}
{{- if $low -}}true{{- end -}}
{{- end -}}

{{/*
Whether config.relay.offload turns on the kernel fast path (tc or auto): then
the turnd container gets BPF and NET_ADMIN and runs as UID 0 (README "Kernel
fast path"). false counts as off: Helm reads values as YAML 1.1, which makes
a bare off a boolean. Prints "true" or nothing.
*/}}
{{- define "turnd.offload" -}}
{{- $relay := .Values.config.relay | default dict -}}
{{- if has (toString $relay.offload) (list "tc" "auto") -}}true{{- end -}}
{{- end -}}
