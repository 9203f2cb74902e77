{{/*
turnd.podTemplate: the pod template of the StatefulSet (drain) and of the
DaemonSet (hand-over, handover.enabled). One template, so the two modes cannot
drift apart; the hand-over mode differs only where its rollout needs it (the
comments at each "if $handover" say why).
*/}}
{{- define "turnd.podTemplate" -}}
{{- $v := .Values -}}
{{- $handover := and $v.handover $v.handover.enabled -}}
{{- $offload := include "turnd.offload" . -}}
{{- $fleet := $v.fleet | default dict -}}
{{- $fleetCreds := $fleet.credentials | default dict -}}
{{- /* Probes name the port in drain mode; the hand-over mode declares no
       container ports (see "ports:" below), so it gives the number. */ -}}
{{- $probePort := "http" -}}
{{- if $handover -}}{{- $probePort = int $v.ports.http -}}{{- end }}
    metadata:
      labels:
        {{- include "turnd.labels" . | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        {{- if not $v.existingSecret }}
        # A config change rolls the pods: turnd reloads on SIGHUP, but nothing
        # sends one in Kubernetes, and a rolled pod drains gracefully anyway.
        checksum/config: {{ include "turnd.configFiles" . | sha256sum }}
        {{- end }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      # TURN needs the node's own addresses and a wide relay port range; a
      # Service or NAT in front would hide the client's 5-tuple.
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      enableServiceLinks: false
      serviceAccountName: {{ include "turnd.serviceAccountName" . }}
      # turnd never talks to the Kubernetes API.
      automountServiceAccountToken: false
      # turnd drains on SIGTERM by itself (new Allocates get 486, live
      # allocations keep working) and exits when the last one ends or when
      # drain.delay + drain.timeout has passed, so there is no preStop hook:
      # the grace period only has to outlast that deadline.
      terminationGracePeriodSeconds: {{ include "turnd.terminationGracePeriodSeconds" . }}
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- $nodeAffinity := deepCopy ($v.nodeAffinity | default dict) }}
      {{- with $v.nat.externalIPsByNode }}
      {{- /* Only nodes with a known external address can run turnd: AND the
               hostname rule into every user term (terms are ORed). */}}
      {{- $only := dict "key" "kubernetes.io/hostname" "operator" "In" "values" (keys . | sortAlpha) }}
      {{- $required := $nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution | default dict }}
      {{- $terms := list }}
      {{- range ($required.nodeSelectorTerms | default (list dict)) }}
      {{- $term := deepCopy . }}
      {{- $_ := set $term "matchExpressions" (append ($term.matchExpressions | default list) $only) }}
      {{- $terms = append $terms $term }}
      {{- end }}
      {{- $_ := set $nodeAffinity "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $terms) }}
      {{- end }}
      {{- /* The hand-over's new pod runs beside the old one on the same node, so
             the DaemonSet, which places one pod per node by itself, has no
             anti-affinity: it would keep the new pod from being scheduled. */}}
      {{- if or $nodeAffinity (not $handover) }}
      affinity:
        {{- with $nodeAffinity }}
        nodeAffinity:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- if not $handover }}
        # Two turnd pods on one node would fight over the host ports, and a
        # second process must never join the first one's SO_REUSEPORT group.
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector:
                matchLabels:
                  {{- include "turnd.selectorLabels" . | nindent 18 }}
        {{- end }}
      {{- end }}
      {{- if and $handover $v.handover.initImage }}
      initContainers:
        # The kubelet creates the hostPath directory as root, mode 0755; turnd
        # runs as 65532 and must create its socket there. The turnd image has
        # no shell or chown, so a small image does this one step as root.
        - name: handover-dir
          image: {{ $v.handover.initImage }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          {{- if $offload }}
          # With offload turnd runs as UID 0 (below) but without
          # CAP_DAC_OVERRIDE, so the directory must be its own to write in.
          command: [chown, "0:65532", /run/turnd]
          {{- else }}
          command: [chown, "65532:65532", /run/turnd]
          {{- end }}
          securityContext:
            runAsNonRoot: false
            runAsUser: 0
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            privileged: false
            capabilities:
              drop: [ALL]
              add: [CHOWN]
          volumeMounts:
            - name: handover
              mountPath: /run/turnd
      {{- end }}
      containers:
        - name: turnd
          image: {{ include "turnd.image" . }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          args:
            {{- if $handover }}
            # Takes over from the turnd of the pod it replaces through the
            # socket in /run/turnd; with nobody there it starts fresh.
            - serve
            - --take-over
            {{- end }}
            - --config={{ include "turnd.configPath" . }}
          env:
            # Read by turnd as ${TURND_NODE_IP} in its config. On the host
            # network the pod's address is the node's.
            - name: TURND_NODE_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.hostIP
            - name: TURND_NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
          {{- if not $handover }}
          ports:
            {{- if $v.transports.udp }}
            - name: turn-udp
              containerPort: {{ $v.ports.turn }}
              protocol: UDP
            {{- end }}
            {{- if $v.transports.tcp }}
            - name: turn-tcp
              containerPort: {{ $v.ports.turn }}
              protocol: TCP
            {{- end }}
            {{- if $v.tls.enabled }}
            - name: turns
              containerPort: {{ $v.ports.tls }}
              protocol: TCP
            {{- end }}
            - name: http
              containerPort: {{ $v.ports.http }}
              protocol: TCP
          {{- else }}
          # No container ports: on the host network each declared port becomes
          # a hostPort, and the scheduler would then refuse the new pod on the
          # node whose old pod holds those ports, so the rollout would never
          # surge. The probes give the HTTP port by number instead. Both pods'
          # probes reach whichever turnd holds the HTTP listener, which moves
          # with the hand-over: minReadySeconds covers the moment before it.
          {{- end }}
          # /healthz stays 200 during a drain, so a draining pod is never
          # restarted; /readyz turns 503 the instant a drain starts, which takes
          # the pod out of the Service's endpoints.
          startupProbe:
            httpGet:
              path: /healthz
              port: {{ $probePort }}
            periodSeconds: {{ $v.probes.startup.periodSeconds }}
            failureThreshold: {{ $v.probes.startup.failureThreshold }}
            timeoutSeconds: {{ $v.probes.startup.timeoutSeconds }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: {{ $probePort }}
            periodSeconds: {{ $v.probes.liveness.periodSeconds }}
            failureThreshold: {{ $v.probes.liveness.failureThreshold }}
            timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: {{ $probePort }}
            periodSeconds: {{ $v.probes.readiness.periodSeconds }}
            failureThreshold: {{ $v.probes.readiness.failureThreshold }}
            timeoutSeconds: {{ $v.probes.readiness.timeoutSeconds }}
          {{- with $v.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            privileged: false
            {{- if $offload }}
            # The kernel fast path (config.relay.offload) loads and attaches
            # a tc program: BPF and NET_ADMIN. Linux gives a non-root process
            # no added capability after exec unless its binary carries file
            # capabilities, which the distroless image has none of, so turnd
            # runs as UID 0, still with nothing but these capabilities, no
            # privilege escalation and a read-only root.
            runAsNonRoot: false
            runAsUser: 0
            capabilities:
              drop: [ALL]
              add: [BPF, NET_ADMIN{{ if include "turnd.needsBindService" . }}, NET_BIND_SERVICE{{ end }}]
            {{- else }}
            runAsNonRoot: true
            capabilities:
              drop: [ALL]
              {{- if include "turnd.needsBindService" . }}
              add: [NET_BIND_SERVICE]
              {{- end }}
            {{- end }}
          volumeMounts:
            {{- if $handover }}
            # The hand-over socket (handover.socket in turnd.yaml): the same
            # node directory in the old and the new pod.
            - name: handover
              mountPath: /run/turnd
            {{- end }}
            # Whole-directory mounts, not subPath, so Secret updates reach the
            # files (subPath mounts never update).
            - name: config
              mountPath: /etc/turnd/config
              readOnly: true
            {{- if $v.tls.enabled }}
            - name: tls
              mountPath: /etc/turnd/tls
              readOnly: true
            {{- end }}
            {{- if and $v.adminToken $v.adminToken.secretName }}
            - name: admin-token
              mountPath: /etc/turnd/admin
              readOnly: true
            {{- end }}
            {{- if and $fleet.redis $fleet.existingSecret }}
            # The Redis password (fleet.password_file), read at start.
            - name: fleet-redis
              mountPath: /etc/turnd/fleet
              readOnly: true
            {{- end }}
            {{- if and $fleet.redis $fleetCreds.existingSecret }}
            # GET /credentials' bearer token, read on every request.
            - name: fleet-credentials
              mountPath: /etc/turnd/fleet-credentials
              readOnly: true
            {{- end }}
      volumes:
        {{- if $handover }}
        - name: handover
          hostPath:
            path: {{ $v.handover.hostPath }}
            type: DirectoryOrCreate
        {{- end }}
        - name: config
          secret:
            secretName: {{ include "turnd.configSecretName" . }}
            defaultMode: 0440
        {{- if $v.tls.enabled }}
        - name: tls
          secret:
            secretName: {{ $v.tls.secretName }}
            defaultMode: 0440
        {{- end }}
        {{- if and $v.adminToken $v.adminToken.secretName }}
        - name: admin-token
          secret:
            secretName: {{ $v.adminToken.secretName }}
            defaultMode: 0440
        {{- end }}
        {{- if and $fleet.redis $fleet.existingSecret }}
        - name: fleet-redis
          secret:
            secretName: {{ $fleet.existingSecret }}
            defaultMode: 0440
        {{- end }}
        {{- if and $fleet.redis $fleetCreds.existingSecret }}
        - name: fleet-credentials
          secret:
            secretName: {{ $fleetCreds.existingSecret }}
            defaultMode: 0440
        {{- end }}
{{- end -}}
