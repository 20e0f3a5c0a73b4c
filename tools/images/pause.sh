# pause.sh - openshell/pause: the pod sandbox image (containerd's
# sandbox_image on the test node): one static binary that holds the Pod's
# namespaces, sleeps until SIGTERM/SIGINT and reaps orphans. Sourced by
# scripts/build-images.
IMAGE_DESCRIPTION="Pod sandbox (pause) process for containerd"
# Not root: sleeping and reaping need no privilege (the upstream pause image
# runs as 65535 too); a Pod's own runAsUser overrides it anyway.
IMAGE_USER=65535:65535
IMAGE_ENTRYPOINT=(/pause)

stage() {
	require_static "$BUILD/tools/images/openshell-pause"
	put_elf "$BUILD/tools/images/openshell-pause" pause
}
