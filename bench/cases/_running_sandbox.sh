# bench/cases/_running_sandbox.sh - sourced by the cases that need one
# running sandbox behind a private local gateway (sandbox-exec,
# sandbox-upload): `running_sandbox NAME` starts the gateway in a temporary
# state dir, creates NAME running `sleep 3600`, sets CLI, STATE and INIT
# (the sandbox's pid 1, for a peer that enters it with nsenter), and
# deletes everything at exit.
CLI=$OPENSHELL_BUILD/src/cli/openshell

running_sandbox() {
	RS_NAME=$1
	STATE=$(mktemp -d /var/tmp/bench-gw.XXXXXX)
	export OPENSHELL_GATEWAY_STATE_DIR=$STATE OPENSHELL_GATEWAY_LISTEN_ADDRESS=none
	unset OPENSHELL_GATEWAY OPENSHELL_TOKEN
	trap running_sandbox_cleanup EXIT
	"$CLI" gateway start >/dev/null
	"$CLI" sandbox create --name "$RS_NAME" --detach -- sleep 3600 >/dev/null
	# The sandbox's pid 1: supervisor -> launcher -> its init.
	local sup
	sup=$(cut -d' ' -f1 "$STATE"/sandboxes/*/supervisor.pid)
	INIT=$(rs_child_of "$(rs_child_of "$sup")")
	[ -n "$INIT" ] || {
		echo "$RS_NAME: no sandbox pid 1 found" >&2
		exit 1
	}
}

rs_child_of() { tr ' ' '\n' <"/proc/$1/task/$1/children" | head -n 1; }

running_sandbox_cleanup() {
	# Delete through the gateway first: a supervisor killed under its
	# monitor is still being recorded in the state dir while rm runs.
	"$CLI" sandbox delete "$RS_NAME" >/dev/null 2>&1 || true
	"$CLI" gateway stop >/dev/null 2>&1 || true
	for p in "$STATE"/sandboxes/*/supervisor.pid; do
		[ -f "$p" ] && kill -9 "$(cut -d' ' -f1 "$p")" 2>/dev/null || true
	done
	for _ in $(seq 50); do
		rm -rf "$STATE" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$RS_NAME: could not remove $STATE" >&2
}
