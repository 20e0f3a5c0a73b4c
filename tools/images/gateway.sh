# gateway.sh - openshell/gateway: openshell-gateway and exactly the shared
# libraries it loads, a CA bundle (libcurl's default trust when a kubeconfig
# names no CA), its state on the volume /var/lib/openshell, as user 65532.
# The chart runs it as `openshell-gateway --config /etc/openshell/gateway.toml`
# (deploy/helm/openshell/templates/deployment.yaml). Sourced by
# scripts/build-images.
IMAGE_DESCRIPTION="OpenShell gateway (control plane) with the Kubernetes driver"
IMAGE_USER=65532:65532
IMAGE_ENTRYPOINT=(/usr/local/bin/openshell-gateway)
IMAGE_CMD=(--config /etc/openshell/gateway.toml)
IMAGE_ENV=(PATH=/usr/local/bin:/usr/bin:/bin)
IMAGE_VOLUMES=(/var/lib/openshell)
IMAGE_PORTS=(17670/tcp)
OWNED_DIRS=(var/lib/openshell:0700)

stage() {
	put_elf "$BUILD/src/gateway/openshell-gateway" usr/local/bin/openshell-gateway
	put_libs "$BUILD/src/gateway/openshell-gateway"
	put_ca
	put_accounts nonroot 65532 /var/lib/openshell /sbin/nologin
	put_text etc/nsswitch.conf 0644 <<<'hosts: files dns'
	put_dir tmp 1777
	put_dir etc/openshell 0755
}
