{{/*
Go duration strings ("1h", "90s", "1h30m", "1.5h", "500ms") in templates, so
the pod's grace period follows turnd's own drain settings instead of a number
someone has to keep in step by hand (the Wire coturn chart left Kubernetes'
30 s default in place unless graceful termination was switched on).
*/}}

{{/*
turnd.durationSeconds: seconds in a Go duration, as a decimal number (may have
a fraction). Takes (dict "path" "config.drain.timeout" "value" $v); fails the
render, naming the path, on anything time.ParseDuration would refuse or on a
negative duration (turnd refuses those too). A bare number is refused, as turnd
refuses it: its unit would be a guess.
*/}}
{{- define "turnd.durationSeconds" -}}
{{- $s := toString .value | trim -}}
{{- $body := trimPrefix "+" $s -}}
{{- $term := "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)" -}}
{{- if not (or (eq $body "0") (regexMatch (printf "^(%s)+$" $term) $body)) -}}
{{- fail (printf "%s: %q is not a non-negative Go duration such as \"30s\", \"1h\" or \"1h30m\"" .path $s) -}}
{{- end -}}
{{- /* Unit names are tried longest first by the regexp above ("ms" before "m"). */ -}}
{{- $unit := dict "h" "3600" "m" "60" "s" "1" "ms" "0.001" "us" "0.000001" "µs" "0.000001" "μs" "0.000001" "ns" "0.000000001" -}}
{{- $total := 0.0 -}}
{{- range regexFindAll $term $body -1 -}}
{{- $num := regexFind "^[0-9.]+" . -}}
{{- /* Sprig's mulf/addf do decimal arithmetic, so 1500ms is exactly 1.5. */ -}}
{{- $total = addf $total (mulf $num (get $unit (trimPrefix $num .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* turnd.drainSeconds: whole seconds a drain may last, ceil(delay + timeout). */}}
{{- define "turnd.drainSeconds" -}}
{{- $d := .Values.config.drain -}}
{{- $delay := include "turnd.durationSeconds" (dict "path" "config.drain.delay" "value" $d.delay) -}}
{{- $timeout := include "turnd.durationSeconds" (dict "path" "config.drain.timeout" "value" $d.timeout) -}}
{{- ceil (addf $delay $timeout) | int -}}
{{- end -}}

{{/*
turnd.terminationGracePeriodSeconds: how long the kubelet waits after SIGTERM
before SIGKILL. turnd exits by itself within drain.delay + drain.timeout, so
the default is that plus a margin for closing sockets and writing logs. A value
set by hand must not be shorter, or Kubernetes would kill live calls that the
drain promised to keep.
*/}}
{{- define "turnd.terminationGracePeriodSeconds" -}}
{{- $drain := include "turnd.drainSeconds" . | int -}}
{{- $set := .Values.terminationGracePeriodSeconds -}}
{{- if kindIs "invalid" $set -}}
{{- add $drain (int .Values.terminationGraceMarginSeconds) -}}
{{- else if lt (int $set) $drain -}}
{{- fail (printf "terminationGracePeriodSeconds: %d is shorter than config.drain.delay + config.drain.timeout = %ds; Kubernetes would kill turnd mid-drain. Raise it, or leave it null to derive it" (int $set) $drain) -}}
{{- else -}}
{{- int $set -}}
{{- end -}}
{{- end -}}
