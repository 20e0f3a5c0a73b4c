{{/*
_gateway_toml.tpl - renders gateway.toml from the values. Optional settings
left empty are omitted, never written as "" (the loader refuses an empty
RuntimeClass name, and an absent supervisor class means "no runtimeClassName").
Strings go through toJson: a JSON string is a valid TOML basic string.
*/}}
{{- define "openshell.gatewayToml" -}}
{{- include "openshell.validate" . -}}
{{- $s := .Values.server -}}
# Rendered by the openshell Helm chart from its values: change the values, not this file.
[openshell.gateway]
listen_address = {{ printf "0.0.0.0:%d" (int $s.port) | toJson }}
# A directory the gateway creates (and chmods 0700) inside the state volume.
state_dir = "/var/lib/openshell/state"
log_level = {{ $s.logLevel | toJson }}
default_driver = "kubernetes"
# The admin token: the chart's Secret (admin-token.yaml), mounted by deployment.yaml.
admin_token_file = "/etc/openshell-admin/token"
{{- if $s.tls.secretName }}
# TLS on the API port: the Secrets deployment.yaml mounts.
tls_cert_file = "/etc/openshell-tls/tls.crt"
tls_key_file = "/etc/openshell-tls/tls.key"
{{- end }}
{{- if $s.tls.clientCaSecretName }}
tls_client_ca_file = "/etc/openshell-client-ca/ca.crt"
{{- end }}

[openshell.drivers.kubernetes]
namespace = {{ include "openshell.sandboxNamespace" . | toJson }}
topology = {{ $s.topology | toJson }}
{{- with $s.defaultImage }}
default_image = {{ toJson . }}
{{- end }}
supervisor_image = {{ include "openshell.supervisorImage" . | toJson }}
image_pull_policy = {{ $s.sandboxImagePullPolicy | toJson }}
image_pull_secrets = {{ $s.sandboxImagePullSecrets | toJson }}
{{- with $s.defaultRuntimeClassName }}
default_runtime_class_name = {{ toJson . }}
{{- end }}
{{- with .Values.supervisor.runtimeClassName }}
supervisor_runtime_class_name = {{ toJson . }}
{{- end }}
allowed_runtime_class_names = {{ $s.allowedRuntimeClassNames | toJson }}
{{- with .Values.supervisor.serviceAccountName }}
service_account_name = {{ toJson . }}
{{- end }}
gateway_endpoint = {{ include "openshell.gatewayEndpoint" . | toJson }}
{{- with $s.tls.caSecretName }}
gateway_ca_secret = {{ toJson . }}
{{- end }}
split_binary_identity = {{ $s.splitBinaryIdentity | toJson }}
{{- with $s.workspaceStorageSize }}
workspace_storage_size = {{ toJson . }}
{{- end }}
{{- with $s.workspaceStorageClass }}
workspace_storage_class = {{ toJson . }}
{{- end }}
sandbox_uid = {{ int $s.sandboxUid }}
sandbox_gid = {{ int $s.sandboxGid }}
{{- if not $s.dnsPeers }}
dns_peers = []
{{- end }}
{{- range $s.dnsPeers }}

[[openshell.drivers.kubernetes.dns_peers]]
port = {{ int .port }}
{{- with .namespaceSelector }}
namespace_selector = {{ include "openshell.tomlStringTable" . }}
{{- end }}
{{- with .podSelector }}
pod_selector = {{ include "openshell.tomlStringTable" . }}
{{- end }}
{{- end }}
{{ end -}}
