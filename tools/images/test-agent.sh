# test-agent.sh - openshell/test-agent: a small userland for tests, Debian's
# static busybox (sh, nc, ... as applet symlinks), run as a non-root user.
# Sourced by scripts/build-images.
IMAGE_DESCRIPTION="Test workload: Debian busybox-static userland"
IMAGE_USER=1000:1000
IMAGE_CMD=(/bin/sh)
IMAGE_ENV=(PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/home/agent)
OWNED_DIRS=(home/agent:0755)

stage() {
	local busybox=/bin/busybox applet
	require_static "$busybox"
	put_file "$busybox" bin/busybox 0755
	# Every applet the binary has, at the path it names for it.
	while read -r applet; do
		case $applet in
		bin/busybox | */) ;;
		*/*) put_symlink /bin/busybox "$applet" ;;
		esac
	done < <("$busybox" --list-full)
	[ -L "$R/bin/sh" ] && [ -L "$R/usr/bin/nc" ] || die "$busybox lacks the sh or nc applet"
	put_dir tmp 1777
	put_dir home 0755
	put_accounts agent 1000 /home/agent /bin/sh
}
