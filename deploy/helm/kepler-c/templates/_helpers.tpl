{{/* The chart's name. */}}
{{- define "kepler-c.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: the release's, with the chart's name unless it holds it. */}}
{{- define "kepler-c.fullname" -}}
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

{{/* What selects the exporters' pods (the DaemonSet's, the Service's, the monitors'). */}}
{{- define "kepler-c.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kepler-c.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: exporter
{{- end -}}

{{/* Every object's labels. */}}
{{- define "kepler-c.labels" -}}
app.kubernetes.io/name: {{ include "kepler-c.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: kepler-c
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Every object's metadata: name, namespace, labels and annotations. Call with (dict "ctx" $ "name" NAME "labels" EXTRA "annotations" EXTRA "cluster" BOOL). */}}
{{- define "kepler-c.metadata" -}}
{{- $ctx := .ctx -}}
name: {{ .name }}
{{- if not .cluster }}
namespace: {{ $ctx.Release.Namespace }}
{{- end }}
labels:
  {{- include "kepler-c.labels" $ctx | nindent 2 }}
  {{- with .labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := merge (dict) (.annotations | default dict) $ctx.Values.commonAnnotations }}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "kepler-c.serviceAccountName" -}}
{{- default (include "kepler-c.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kepler-c.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/*
The configuration both containers read: .Values.config with what the
chart's own values decide (they win over the same keys in config).
*/}}
{{- define "kepler-c.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $monitor := merge (dict "interval" .Values.collector.interval) (get $c "monitor" | default dict) -}}
{{- $_ := set $c "monitor" $monitor -}}
{{- $web := merge (dict "listen-address" (printf ":%d" (int .Values.exporter.port))) (get $c "web" | default dict) -}}
{{- if .Values.exporter.web.secret -}}
{{- $_ := set $web "config-file" "/etc/kepler-c-web/web-config.yml" -}}
{{- end -}}
{{- $_ := set $c "web" $web -}}
{{- if not .Values.kubelet.token -}}
{{- $kube := get $c "kube" | default dict -}}
{{- $_ := set $kube "pod-source" "logs" -}}
{{- $_ := unset $kube "insecure-skip-tls-verify" -}}
{{- $_ := set $c "kube" $kube -}}
{{- end -}}
{{- $carbon := get $c "carbon" | default dict -}}
{{- if ne (toString .Values.carbon.intensity) "" -}}
{{- $_ := set $carbon "intensity" (toString .Values.carbon.intensity) -}}
{{- end -}}
{{- if .Values.carbon.intensityFile.configMap -}}
{{- $_ := set $carbon "intensity-file" (printf "/etc/kepler-c-carbon/%s" .Values.carbon.intensityFile.key) -}}
{{- end -}}
{{- if .Values.carbon.feed.enabled -}}
{{- $_ := set $carbon "intensity-file" "/var/run/kepler-c-carbon/carbon.csv" -}}
{{- end -}}
{{- if $carbon -}}
{{- $_ := set $c "carbon" $carbon -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* kepler-push's configuration: .Values.push.config with its state folder and credential files. */}}
{{- define "kepler-c.pushConfig" -}}
{{- $c := deepCopy .Values.push.config -}}
{{- $p := get $c "push" | default dict -}}
{{- $_ := set $p "state-dir" "/var/lib/kepler-c-push" -}}
{{- range $dest := list "remote-write" "otlp" -}}
{{- $v := ternary $.Values.push.remoteWrite $.Values.push.otlp (eq $dest "remote-write") -}}
{{- $d := get $p $dest | default dict -}}
{{- if $v.bearerToken.secret -}}
{{- $_ := set $d "bearer-token-file" (printf "/etc/kepler-c-push-secrets/%s-token/%s" $dest $v.bearerToken.key) -}}
{{- end -}}
{{- if $v.basicAuth.secret -}}
{{- $_ := set $d "basic-auth" (dict "username" $v.basicAuth.username "password-file" (printf "/etc/kepler-c-push-secrets/%s-password/%s" $dest $v.basicAuth.key)) -}}
{{- end -}}
{{- if $d -}}
{{- $_ := set $p $dest $d -}}
{{- end -}}
{{- end -}}
{{- with .Values.push.tls -}}
{{- if .secret -}}
{{- $tls := get $p "tls" | default dict -}}
{{- if .caKey }}{{ $_ := set $tls "ca-file" (printf "/etc/kepler-c-push-secrets/tls/%s" .caKey) }}{{ end -}}
{{- if .certKey }}{{ $_ := set $tls "cert-file" (printf "/etc/kepler-c-push-secrets/tls/%s" .certKey) }}{{ end -}}
{{- if .keyKey }}{{ $_ := set $tls "key-file" (printf "/etc/kepler-c-push-secrets/tls/%s" .keyKey) }}{{ end -}}
{{- $_ := set $p "tls" $tls -}}
{{- end -}}
{{- end -}}
{{- $_ := set $c "push" $p -}}
{{- toYaml $c -}}
{{- end -}}

{{/* Secrets are mounted: the pod's fsGroup lets the unprivileged containers read them (mode 0440). */}}
{{- define "kepler-c.mountsSecrets" -}}
{{- if or .Values.kubelet.token .Values.exporter.web.secret (and .Values.push.enabled (or .Values.push.remoteWrite.bearerToken.secret .Values.push.remoteWrite.basicAuth.secret .Values.push.otlp.bearerToken.secret .Values.push.otlp.basicAuth.secret .Values.push.tls.secret)) (and .Values.carbon.feed.enabled .Values.carbon.feed.tokenSecret) -}}
true
{{- end -}}
{{- end -}}
