{{/*
kepler-push as the pod's third container, and its volumes. Credentials are
existing Secrets, each mounted read-only (0440, group fsGroup) in its own
folder under /etc/kepler-c-push-secrets; never a value of the chart.
*/}}
{{- define "kepler-c.pushSecrets" -}}
{{- $v := .Values.push -}}
{{- $out := list -}}
{{- if $v.remoteWrite.bearerToken.secret }}{{ $out = append $out (dict "name" "remote-write-token" "secret" $v.remoteWrite.bearerToken.secret) }}{{ end -}}
{{- if $v.remoteWrite.basicAuth.secret }}{{ $out = append $out (dict "name" "remote-write-password" "secret" $v.remoteWrite.basicAuth.secret) }}{{ end -}}
{{- if $v.otlp.bearerToken.secret }}{{ $out = append $out (dict "name" "otlp-token" "secret" $v.otlp.bearerToken.secret) }}{{ end -}}
{{- if $v.otlp.basicAuth.secret }}{{ $out = append $out (dict "name" "otlp-password" "secret" $v.otlp.basicAuth.secret) }}{{ end -}}
{{- if $v.tls.secret }}{{ $out = append $out (dict "name" "tls" "secret" $v.tls.secret) }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{- define "kepler-c.pushContainer" -}}
{{- $ctx := .ctx -}}
{{- $v := $ctx.Values.push -}}
- name: push
  image: {{ .image }}
  imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
  command: ["kepler-push", "--config", "/etc/kepler-c-push/push.yaml",
            "--store.path", {{ $ctx.Values.config.store.path | quote }}]
  {{- with $v.extraArgs }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    # A reader: nobody, the store's group, nothing else; no port.
    runAsNonRoot: true
    runAsUser: 65534
    runAsGroup: {{ .gid }}
    privileged: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: ["ALL"]
    seccompProfile:
      type: RuntimeDefault
  resources:
    {{- toYaml $v.resources | nindent 4 }}
  volumeMounts:
    - { name: push-config, mountPath: /etc/kepler-c-push, readOnly: true }
    - { name: store, mountPath: /var/lib/kepler-c, readOnly: true }
    - { name: push-state, mountPath: /var/lib/kepler-c-push }
    {{- range (include "kepler-c.pushSecrets" $ctx | fromJsonArray) }}
    - { name: push-{{ .name }}, mountPath: /etc/kepler-c-push-secrets/{{ .name }}, readOnly: true }
    {{- end }}
{{- end -}}

{{- define "kepler-c.pushVolumes" -}}
{{- $ctx := .ctx -}}
- name: push-config
  configMap: { name: {{ .fullname }}-push }
# On the host, so that what the receivers acknowledged survives pod restarts.
- name: push-state
  hostPath: { path: {{ $ctx.Values.push.stateHostPath }}, type: DirectoryOrCreate }
{{- range (include "kepler-c.pushSecrets" $ctx | fromJsonArray) }}
- name: push-{{ .name }}
  secret: { secretName: {{ .secret }}, defaultMode: 288 }  # 0440: owner and group (fsGroup)
{{- end }}
{{- end -}}
