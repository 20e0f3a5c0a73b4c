# supervisor.sh - openshell/supervisor: a self-contained bundle under
# /opt/openshell (bin/: openshell-supervisor and the static openshell-sandbox;
# lib/: the supervisor's loader and libraries, pinned by its interpreter and
# RPATH; etc/: its CA bundle) and cp for the init containers that copy the
# bundle into workload Pods (src/drivers/kubernetes/k8s_render.c,
# docs/kubernetes.md). Sourced by scripts/build-images.
IMAGE_DESCRIPTION="OpenShell supervisor (policy authority) and sandbox launcher"
# Not root: the dedicated supervisor Pod runs it as 65532 (K8S_SUPERVISOR_UID)
# with no capability. The combined topology's root supervisor runs from the
# copied bundle inside the workload image, and its init container asks for
# uid 0 itself, so nothing needs root from this image's default user.
IMAGE_USER=65532:65532
IMAGE_ENTRYPOINT=(/opt/openshell/bin/openshell-supervisor)
IMAGE_ENV=(PATH=/usr/local/bin:/usr/bin:/bin)
# The supervisor's state (the driver mounts an emptyDir here too).
OWNED_DIRS=(var/lib/openshell:0700)

stage() {
	put_bundle "$BUILD/src/supervisor/openshell-supervisor" opt/openshell
	require_static "$BUILD/src/sandbox/openshell-sandbox"
	put_elf "$BUILD/src/sandbox/openshell-sandbox" opt/openshell/bin/openshell-sandbox
	# The names Pod specs and operators use, on PATH.
	put_symlink /opt/openshell/bin/openshell-supervisor usr/local/bin/openshell-supervisor
	put_symlink /opt/openshell/bin/openshell-sandbox usr/local/bin/openshell-sandbox
	# The init containers' copier: busybox's cp applet (chosen by argv[0]),
	# static, and no shell beside it.
	require_static /bin/busybox
	put_file /bin/busybox usr/bin/cp 0755
	# Inside the bundle: the combined Pod's supervisor trusts it for
	# upstream TLS (--upstream-ca) whatever the workload image holds.
	put_ca opt/openshell/etc/ssl/ca-certificates.crt
	put_accounts nonroot 65532 /var/lib/openshell /sbin/nologin
	put_text etc/nsswitch.conf 0644 <<<'hosts: files dns'
	put_dir tmp 1777
	# Mount points the driver's Pods use (the init containers' target).
	put_dir mnt/openshell 0755
	put_dir etc/openshell 0755
}
