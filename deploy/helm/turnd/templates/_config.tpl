{{/*
turnd.yaml, rendered from .Values.config plus the parts the chart manages
(addresses, ports, file paths). It is built as a dict and printed with toYaml,
never by pasting values into YAML text, so a password with a quote or a colon
cannot change the file's structure.
*/}}

{{/* turnd.hostPort: "host:port", bracketing the host for IPv6. Takes (list $root $port). */}}
{{- define "turnd.hostPort" -}}
{{- $root := index . 0 -}}
{{- $host := $root.Values.bindAddress -}}
{{- if eq $root.Values.ipFamily "IPv6" -}}
{{- printf "[%s]:%d" $host (int (index . 1)) -}}
{{- else -}}
{{- printf "%s:%d" $host (int (index . 1)) -}}
{{- end -}}
{{- end -}}

{{/* turnd.config: one turnd.yaml. Takes (dict "root" $ "externalIP" "203.0.113.7" or ""). */}}
{{- define "turnd.config" -}}
{{- $v := .root.Values -}}
{{- $cfg := deepCopy $v.config -}}
{{- $turn := list (include "turnd.hostPort" (list .root $v.ports.turn)) -}}
{{- $listen := deepCopy ($cfg.listen | default dict) -}}
{{- $_ := set $listen "udp" (ternary $turn (list) $v.transports.udp) -}}
{{- $_ = set $listen "tcp" (ternary $turn (list) $v.transports.tcp) -}}
{{- $tls := ternary (list (include "turnd.hostPort" (list .root $v.ports.tls))) (list) $v.tls.enabled -}}
{{- if and $v.tls.enabled $v.tls.sharedPort -}}
{{- $_ = set $listen "tls" (list) -}}
{{- $_ = set $listen "tcp_tls" $tls -}}
{{- else -}}
{{- $_ = set $listen "tls" $tls -}}
{{- end -}}
{{- $pp := $v.proxyProtocol | default dict -}}
{{- if $pp.trusted -}}
{{- $_ = set $listen "proxy_protocol" (dict "listeners" (concat $listen.tcp $tls) "trusted" $pp.trusted) -}}
{{- end -}}
{{- $_ = set $cfg "listen" $listen -}}
{{- $relay := deepCopy ($cfg.relay | default dict) -}}
{{- /* A bare off in the values is YAML 1.1's false; turnd wants the word. */ -}}
{{- if eq (toString $relay.offload) "false" -}}
{{- $_ = set $relay "offload" "off" -}}
{{- end -}}
{{- $_ = set $relay "address" (ternary (printf "%s,%s" $v.bindAddress $v.extraRelayAddress) $v.bindAddress (ne ($v.extraRelayAddress | default "") "")) -}}
{{- if .externalIP -}}
{{- $_ = set $relay "external_address" .externalIP -}}
{{- end -}}
{{- $_ = set $cfg "relay" $relay -}}
{{- if $v.tls.enabled -}}
{{- $_ = set $cfg "tls" (dict "cert_file" "/etc/turnd/tls/tls.crt" "key_file" "/etc/turnd/tls/tls.key") -}}
{{- end -}}
{{- $http := dict "address" (include "turnd.hostPort" (list .root $v.ports.http)) -}}
{{- with $v.adminToken -}}{{- if .secretName -}}
{{- $_ = set $http "admin_token_file" (printf "/etc/turnd/admin/%s" .key) -}}
{{- end -}}{{- end -}}
{{- $_ = set $cfg "http" $http -}}
{{- $drain := deepCopy ($cfg.drain | default dict) -}}
{{- /* In a fleet turnd itself names the least-loaded serving node in a draining
       pod's 300, from what the nodes publish, when alternate_servers is empty. */ -}}
{{- if and $v.redirectToPeers (not $drain.alternate_servers) (not ($v.fleet | default dict).redis) -}}
{{- $peers := printf "%s.%s.svc.%s:%d" (include "turnd.fullname" .root) .root.Release.Namespace $v.clusterDomain (int $v.ports.turn) -}}
{{- $_ = set $drain "alternate_servers" (list $peers) -}}
{{- end -}}
{{- $_ = set $cfg "drain" $drain -}}
{{- if $v.handover.enabled -}}
{{- /* after: wait, because a container that exits is restarted: the old pod's
       turnd must stay until Kubernetes deletes its pod (SIGTERM), and then
       exit once its TLS clients are gone. */ -}}
{{- $_ = set $cfg "handover" (dict "socket" "/run/turnd/handover.sock" "timeout" $v.handover.timeout "after" "wait") -}}
{{- end -}}
{{- $fv := $v.fleet | default dict -}}
{{- if $fv.redis -}}
{{- /* The fleet's secrets reach turnd as files the pod mounts (_pod.tpl). */ -}}
{{- $fleet := deepCopy ($cfg.fleet | default dict) -}}
{{- $_ = set $fleet "redis" $fv.redis -}}
{{- if $fv.node -}}
{{- $_ = set $fleet "node" $fv.node -}}
{{- end -}}
{{- if $fv.existingSecret -}}
{{- $_ = set $fleet "password_file" (printf "/etc/turnd/fleet/%s" $fv.secretKey) -}}
{{- end -}}
{{- $fc := $fv.credentials | default dict -}}
{{- if $fc.existingSecret -}}
{{- $creds := deepCopy ($fleet.credentials | default dict) -}}
{{- $_ = set $creds "token_file" (printf "/etc/turnd/fleet-credentials/%s" $fc.secretKey) -}}
{{- $_ = set $fleet "credentials" $creds -}}
{{- end -}}
{{- /* Behind NAT the listeners hold private addresses, from which turnd would
       derive the URIs it advertises; the fleet must hand out the public ones. */ -}}
{{- $ext := .externalIP -}}
{{- if and $ext (not $fleet.advertise) -}}
{{- $uris := list -}}
{{- range $ip := splitList "," $ext -}}
{{- $ip = trim $ip -}}
{{- $host := ternary (printf "[%s]" $ip) $ip (contains ":" $ip) -}}
{{- if $v.transports.udp -}}{{- $uris = append $uris (printf "turn:%s:%d?transport=udp" $host (int $v.ports.turn)) -}}{{- end -}}
{{- if $v.transports.tcp -}}{{- $uris = append $uris (printf "turn:%s:%d?transport=tcp" $host (int $v.ports.turn)) -}}{{- end -}}
{{- if $v.tls.enabled -}}{{- $uris = append $uris (printf "turns:%s:%d?transport=tcp" $host (int $v.ports.tls)) -}}{{- end -}}
{{- end -}}
{{- $_ = set $fleet "advertise" $uris -}}
{{- end -}}
{{- $_ = set $cfg "fleet" $fleet -}}
{{- end -}}
# turnd.yaml rendered by the {{ .root.Chart.Name }} chart {{ .root.Chart.Version }}; edit the values, not this file.
# ${TURND_NODE_IP} is the node's address, set by the pod from the downward API.
{{ toYaml $cfg }}
{{- end -}}

{{/*
turnd.configFiles: the data of the config Secret, file name -> content.
Without per-node NAT addresses there is one turnd.yaml. With
nat.externalIPsByNode every node gets turnd-<node>.yaml, and the container
picks its own through $(TURND_NODE_NAME) in its arguments, because a pod
template cannot hold a per-node value and the downward API cannot read node
annotations.
*/}}
{{- define "turnd.configFiles" -}}
{{- $files := dict -}}
{{- $byNode := .Values.nat.externalIPsByNode | default dict -}}
{{- if $byNode -}}
{{- range $node, $ip := $byNode -}}
{{- $_ := set $files (printf "turnd-%s.yaml" $node) (include "turnd.config" (dict "root" $ "externalIP" $ip)) -}}
{{- end -}}
{{- else -}}
{{- $_ := set $files "turnd.yaml" (include "turnd.config" (dict "root" . "externalIP" .Values.nat.externalIP)) -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/* turnd.configPath: the --config argument. */}}
{{- define "turnd.configPath" -}}
{{- if .Values.existingSecret -}}
/etc/turnd/config/{{ .Values.existingSecretKey }}
{{- else if .Values.nat.externalIPsByNode -}}
/etc/turnd/config/turnd-$(TURND_NODE_NAME).yaml
{{- else -}}
/etc/turnd/config/turnd.yaml
{{- end -}}
{{- end -}}

{{/*
turnd.validate: combinations the schema cannot express. Fails the render with
a message naming the values to change; prints nothing otherwise.
*/}}
{{- define "turnd.validate" -}}
{{- $v := .Values -}}
{{- $byNode := $v.nat.externalIPsByNode | default dict -}}
{{- if not (or $v.transports.udp $v.transports.tcp $v.tls.enabled) -}}
{{- fail "transports: enable udp, tcp or tls (tls.enabled); turnd needs at least one listener" -}}
{{- end -}}
{{- if and $v.tls.enabled (not $v.tls.secretName) -}}
{{- fail "tls.secretName: required when tls.enabled (a kubernetes.io/tls Secret with tls.crt and tls.key)" -}}
{{- end -}}
{{- if and $v.nat.externalIP $byNode -}}
{{- fail "nat: set either externalIP (one pod) or externalIPsByNode (one address per node), not both" -}}
{{- end -}}
{{- if and $v.nat.externalIP (gt (int $v.replicaCount) 1) -}}
{{- fail (printf "nat.externalIP: one external address cannot front %d nodes' relay ports; use nat.externalIPsByNode, or replicaCount: 1" (int $v.replicaCount)) -}}
{{- end -}}
{{- if and $byNode (gt (int $v.replicaCount) (len $byNode)) -}}
{{- fail (printf "replicaCount: %d pods cannot fit on the %d nodes listed in nat.externalIPsByNode (one pod per node)" (int $v.replicaCount) (len $byNode)) -}}
{{- end -}}
{{- if and $byNode $v.existingSecret -}}
{{- fail "nat.externalIPsByNode: needs the chart to render one config per node; with existingSecret put relay.external_address in your own turnd.yaml and use replicaCount: 1 per release" -}}
{{- end -}}
{{- if and (contains ":" $v.bindAddress) (ne $v.ipFamily "IPv6") -}}
{{- fail (printf "bindAddress: %q is an IPv6 address; set ipFamily: IPv6" $v.bindAddress) -}}
{{- end -}}
{{- if $v.handover.enabled -}}
{{- $timeout := include "turnd.durationSeconds" (dict "path" "handover.timeout" "value" $v.handover.timeout) -}}
{{- if le (float64 $v.handover.minReadySeconds) (float64 $timeout) -}}
{{- fail (printf "handover.minReadySeconds: %d must exceed handover.timeout (%s), or an old pod could be deleted before its successor has taken over" (int $v.handover.minReadySeconds) $v.handover.timeout) -}}
{{- end -}}
{{- end -}}
{{- $fv := $v.fleet | default dict -}}
{{- $fc := $fv.credentials | default dict -}}
{{- if and (or $fv.existingSecret $fc.existingSecret) (not $fv.redis) -}}
{{- fail "fleet.existingSecret / fleet.credentials.existingSecret: need fleet.redis" -}}
{{- end -}}
{{- if and $fv.redis $v.existingSecret -}}
{{- fail "fleet.redis: the chart renders no turnd.yaml with existingSecret; put the fleet section in your own turnd.yaml" -}}
{{- end -}}
{{- if and $fv.redis ($v.config.fleet | default dict).redis -}}
{{- fail "fleet.redis and config.fleet.redis: set fleet.redis only (the chart mounts its Secrets)" -}}
{{- end -}}
{{- if and $fc.existingSecret (not $v.config.auth.secrets) -}}
{{- fail "fleet.credentials.existingSecret: GET /credentials signs TURN REST credentials with config.auth.secrets; set one" -}}
{{- end -}}
{{- if and (not $v.existingSecret) (not $v.config.auth.users) (not $v.config.auth.secrets) -}}
{{- fail "config.auth: set users or secrets (or existingSecret); turnd refuses to run without credentials" -}}
{{- end -}}
{{- end -}}
