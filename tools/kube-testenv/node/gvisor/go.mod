// Pins gVisor (runsc and its containerd shim) for the test node; see
// docs/kube-testenv.md. gVisor publishes its Go module only as pseudo-versions
// of its "go" branch (@latest; @go and @master are refused by the proxy).
// tools/kube-testenv/build-node builds a patched copy of this module
// (patches/gvisor-shim-oom-score.patch) inside the copy's own go.mod/go.sum.
module openshell.local/kube-testenv/node/gvisor

go 1.26.8

require gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
