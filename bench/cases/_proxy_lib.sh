# bench/cases/_proxy_lib.sh - shared setup of the proxy cases (a helper, not a
# case): a private network namespace on the RFC 2544 benchmarking range
# 198.19.T.0/24 holding netbench upstreams, openshell-proxy and tinyproxy on
# loopback, and a trap that tears all of it down. Nothing here may reach an
# address outside this machine: upstreams are IPv4 literals in our namespace,
# the proxy's names come from our hosts file and its DNS points at a closed
# loopback port.
#
# After px_setup: PX_DIR (temp dir), PX_UP (upstream address), PX_BULK_PORT
# (serve-bulk, L4), PX_IDLE_PORT (serve-http, L4 tunnels), PX_HTTP_PORT
# (serve-http, L7 read-only), NETBENCH (absolute path).

PX_BULK_PORT=9000
PX_IDLE_PORT=9001
PX_HTTP_PORT=8080
PX_PIDS=()

px_require() {
	bench_require_built src/supervisor/egress/openshell-proxy bench/netbench
	bench_require_cmd ip "$@"
	[ "$(id -u)" = 0 ] || bench_skip "needs root (network namespace for the upstreams)"
	NETBENCH=$(realpath "$OPENSHELL_BUILD/bench/netbench")
	PROXY_BIN=$(realpath "$OPENSHELL_BUILD/src/supervisor/egress/openshell-proxy")
}

px_cleanup() {
	local p
	set +e # a dying child's status must not cut the teardown short
	for p in "${PX_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PX_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	PX_PIDS=()
	[ -n "${PX_VETH:-}" ] && ip link del "$PX_VETH" 2>/dev/null
	[ -n "${PX_NS:-}" ] && ip netns del "$PX_NS" 2>/dev/null
	[ -n "${PX_DIR:-}" ] && rm -rf "$PX_DIR"
	px_cgroup_leave
	return 0
}

# px_cgroup_enter: moves this script (so every client it starts) into a
# cgroup of its own, which the proxy is told to search for callers' sockets,
# as the supervisor searches a sandbox's cgroup; the proxy runs on the host,
# and without it every lookup would walk every process of the machine. Sets
# PX_CGROUP ("" when this machine has no writable cgroup hierarchy, or
# BENCH_PROXY_CGROUP=0 asks for the walk of the whole namespace).
px_cgroup_enter() {
	local root
	PX_CGROUP=
	[ "${BENCH_PROXY_CGROUP:-1}" = 0 ] && return 0
	for root in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
		[ -w "$root/cgroup.procs" ] || continue
		# Where we are now in that hierarchy, to go back at the end.
		if [ "$root" = /sys/fs/cgroup/pids ]; then
			PX_CGROUP_HOME=$(sed -n 's/^[0-9]*:pids:\(.*\)$/\1/p' /proc/self/cgroup)
		else
			PX_CGROUP_HOME=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
		fi
		mkdir "$root/openshell-bench-$$" 2>/dev/null || continue
		PX_CGROUP=$root/openshell-bench-$$
		PX_CGROUP_ROOT=$root
		echo $$ >"$PX_CGROUP/cgroup.procs" || { rmdir "$PX_CGROUP"; PX_CGROUP=; continue; }
		return 0
	done
}

px_cgroup_leave() {
	[ -n "${PX_CGROUP:-}" ] || return 0
	local p
	for p in $(cat "$PX_CGROUP/cgroup.procs" 2>/dev/null); do
		echo "$p" >"$PX_CGROUP_ROOT${PX_CGROUP_HOME%/}/cgroup.procs" 2>/dev/null ||
			echo "$p" >"$PX_CGROUP_ROOT/cgroup.procs" 2>/dev/null
	done
	rmdir "$PX_CGROUP" 2>/dev/null
	PX_CGROUP=
}

# px_wait_line FILE PATTERN [SECONDS]: waits (default 10 s) for a line
# matching PATTERN.
px_wait_line() {
	local i n=$((${3:-10} * 20))
	for ((i = 0; i < n; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "px: no '$2' in $1 after ${3:-10} s: $(cat "$1" 2>/dev/null)" >&2
	return 1
}

# px_bg LOGNAME CMD...: starts CMD in the background, output in PX_DIR/LOGNAME;
# its pid is appended to PX_PIDS and left in PX_LAST.
px_bg() {
	local log=$PX_DIR/$1
	shift
	"$@" >"$log" 2>&1 &
	PX_LAST=$!
	PX_PIDS+=("$PX_LAST")
}

px_setup() {
	local tag=$(($$ % 250))
	PX_DIR=$(mktemp -d /tmp/bench-proxy.XXXXXX)
	PX_NS=pbench$$
	PX_VETH=pbv$$
	PX_UP=198.19.$tag.10
	PX_NET=198.19.$tag.0/24
	trap px_cleanup EXIT
	trap 'exit 130' INT TERM
	px_cgroup_enter
	ip netns add "$PX_NS"
	ip link add "$PX_VETH" type veth peer name "${PX_VETH}p"
	ip link set "${PX_VETH}p" netns "$PX_NS"
	ip addr add "198.19.$tag.1/24" dev "$PX_VETH"
	ip link set "$PX_VETH" up
	ip -n "$PX_NS" addr add "$PX_UP/24" dev "${PX_VETH}p"
	ip -n "$PX_NS" link set "${PX_VETH}p" up
	ip -n "$PX_NS" link set lo up
	px_bg bulk.log ip netns exec "$PX_NS" "$NETBENCH" serve-bulk "$PX_UP" "$PX_BULK_PORT"
	px_bg idle.log ip netns exec "$PX_NS" "$NETBENCH" serve-http "$PX_UP" "$PX_IDLE_PORT"
	px_bg http.log ip netns exec "$PX_NS" "$NETBENCH" serve-http "$PX_UP" "$PX_HTTP_PORT"
	local f
	for f in bulk idle http; do
		px_wait_line "$PX_DIR/$f.log" '^listening on ' || return 1
	done
	echo "$PX_UP upstream.test" >"$PX_DIR/hosts"
	px_policy
}

# The policy every "ours" run uses: two L4 endpoints (bulk, idle tunnels) and
# one L7 read-only REST endpoint, for netbench and wrk only.
px_policy() {
	cat >"$PX_DIR/policy.yaml" <<-EOF_POLICY
		version: 1
		network_policies:
		  bench:
		    endpoints:
		      - host: upstream.test
		        port: $PX_BULK_PORT
		        allowed_ips: ["$PX_NET"]
		      - host: upstream.test
		        port: $PX_IDLE_PORT
		        allowed_ips: ["$PX_NET"]
		      - host: upstream.test
		        port: $PX_HTTP_PORT
		        allowed_ips: ["$PX_NET"]
		        protocol: rest
		        access: read-only
		    binaries:
		      - { path: $NETBENCH }
		      - { path: /usr/bin/wrk }
	EOF_POLICY
}

# px_start_proxy: openshell-proxy on 127.0.0.1; sets OURS_PID and OURS_PORT.
# Callers are identified from this script's process down.
px_start_proxy() {
	px_bg ours.log "$PROXY_BIN" --listen 127.0.0.1:0 --policy "$PX_DIR/policy.yaml" \
		--identity-pid $$ ${PX_CGROUP:+--identity-cgroup "$PX_CGROUP"} \
		--hosts "$PX_DIR/hosts" --dns 127.0.0.1:9 \
		--audit-log "$PX_DIR/audit.log" --max-conns 8192 --max-upstream-connections 8192 \
		--sandbox-id bench
	OURS_PID=$PX_LAST
	px_wait_line "$PX_DIR/ours.log" '^listening on 127\.0\.0\.1:[0-9]+$' || return 1
	OURS_PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$PX_DIR/ours.log")
}

# px_free_port: a loopback port nobody listens on right now.
px_free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# px_start_tinyproxy: the peer on 127.0.0.1; sets PEER_PID and PEER_PORT.
# Only IPv4 literals are ever sent to it, so it never resolves a name.
px_start_tinyproxy() {
	local i
	PEER_PORT=$(px_free_port)
	cat >"$PX_DIR/tinyproxy.conf" <<-EOF_TP
		Port $PEER_PORT
		Listen 127.0.0.1
		Timeout 600
		Allow 127.0.0.1
		ConnectPort $PX_BULK_PORT
		ConnectPort $PX_IDLE_PORT
		MaxClients 4096
		LogLevel Critical
		DisableViaHeader Yes
	EOF_TP
	px_bg tinyproxy.log tinyproxy -d -c "$PX_DIR/tinyproxy.conf"
	PEER_PID=$PX_LAST
	for ((i = 0; i < 200; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$PEER_PORT") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "px: tinyproxy did not listen on $PEER_PORT: $(cat "$PX_DIR/tinyproxy.log")" >&2
	return 1
}

# px_bulk ARGS...: one `netbench bulk` transfer; prints its Gbit/s figure.
px_bulk() {
	"$NETBENCH" bulk "$@" 2>"$PX_DIR/bulk.err" || {
		cat "$PX_DIR/bulk.err" >&2
		return 1
	}
}

# px_bulk_bytes: bytes per transfer (BENCH_PROXY_BYTES, default 2 GB).
px_bulk_bytes() {
	if bench_is_smoke; then
		echo 20000000
	else
		echo "${BENCH_PROXY_BYTES:-2000000000}"
	fi
}

# px_wrk_script FILE URL HOST: a wrk script sending absolute-form requests
# (what a client configured with an HTTP proxy sends) for URL with Host HOST.
px_wrk_script() {
	cat >"$1" <<-EOF_LUA
		wrk.path = "$2"
		wrk.headers["Host"] = "$3"
	EOF_LUA
}

# px_wrk SIDE URL [SCRIPT]: one wrk run (BENCH_WRK_THREADS, BENCH_WRK_CONNS,
# BENCH_WRK_SECONDS); prints requests/s and appends "p50_ms p99_ms" to
# PX_DIR/lat.SIDE. Any non-2xx answer fails the run: a figure made of denials
# would measure the wrong thing.
px_wrk() {
	local side=$1 url=$2 script=${3:-} out secs=${BENCH_WRK_SECONDS:-5}
	bench_is_smoke && secs=1
	out=$(wrk -t "${BENCH_WRK_THREADS:-1}" -c "${BENCH_WRK_CONNS:-16}" -d "${secs}s" --latency \
		${script:+-s "$script"} "$url") || {
		echo "px: wrk failed: $out" >&2
		return 1
	}
	if grep -q 'Non-2xx' <<<"$out" || ! grep -q '^Requests/sec:' <<<"$out"; then
		echo "px: wrk $side: bad answers: $out" >&2
		return 1
	fi
	grep -q 'Socket errors' <<<"$out" && grep 'Socket errors' <<<"$out" >>"$PX_DIR/errors.$side"
	awk '
		function ms(v) {
			if (v ~ /us$/) return v / 1000
			if (v ~ /ms$/) return v + 0
			if (v ~ /s$/) return v * 1000
			return v + 0
		}
		$1 == "50%" { p50 = ms($2) }
		$1 == "99%" { p99 = ms($2) }
		END { printf "%.3f %.3f\n", p50, p99 }' <<<"$out" >>"$PX_DIR/lat.$side"
	awk '$1 == "Requests/sec:" { print $2 }' <<<"$out"
}

# px_latency_report: median p50/p99 of each side (warm-up runs dropped) and
# what the proxy adds over the peer.
px_latency_report() {
	local peer_name=$1 side s50 s99 o50 o99 p50 p99
	for side in ours peer; do
		mapfile -t lines < <(tail -n +"$((BENCH_WARMUP + 1))" "$PX_DIR/lat.$side")
		s50=$(bench_median $(printf '%s\n' "${lines[@]}" | awk '{ print $1 }'))
		s99=$(bench_median $(printf '%s\n' "${lines[@]}" | awk '{ print $2 }'))
		[ "$side" = ours ] && o50=$s50 o99=$s99 || p50=$s50 p99=$s99
		[ -f "$PX_DIR/errors.$side" ] && echo "  $BENCH_NAME $side: wrk $(tail -n 1 "$PX_DIR/errors.$side")"
	done
	echo "  $BENCH_NAME latency ms: ours p50=$o50 p99=$o99; $peer_name p50=$p50 p99=$p99"
	echo "  $BENCH_NAME added latency vs $peer_name ms: p50=$(awk -v a="$o50" -v b="$p50" 'BEGIN { printf "%.3f", a - b }') p99=$(awk -v a="$o99" -v b="$p99" 'BEGIN { printf "%.3f", a - b }')"
}
