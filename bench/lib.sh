# bench/lib.sh - helpers sourced by bench cases: repeated rounds alternating
# ours and the peer, median/min/max, ratio formatting and the one result line.
# It never judges a figure: a slow result is printed, never turned into a failure.
#
# A case script does:
#   . "$(dirname "$0")/../lib.sh"
#   bench_init NAME
#   bench_require_built src/cli/openshell      # or bench_skip "reason"
#   bench_require_cmd bwrap
#   ours() { ...; echo FIGURE; }   peer() { ...; echo FIGURE; }
#   bench_alternate ours peer
#   bench_report "$BENCH_OURS" "$BENCH_PEER" ms bwrap
#
# Environment (set by bench/run, defaults for running a case by hand):
#   BENCH_SMOKE=1      one tiny round, no warm-up: proves the case still works
#   BENCH_ROUNDS=N     measured rounds per side (default 7)
#   BENCH_WARMUP=N     discarded rounds per side before measuring (default 1)
#   OPENSHELL_BUILD    build directory with our binaries (default ROOT/build)

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${OPENSHELL_BUILD:=$BENCH_ROOT/build}"
: "${BENCH_SMOKE:=0}"
: "${BENCH_ROUNDS:=7}"
: "${BENCH_WARMUP:=1}"
if [ "$BENCH_SMOKE" = 1 ]; then
	BENCH_ROUNDS=1
	BENCH_WARMUP=0
fi
BENCH_SKIP_CODE=77
BENCH_NAME=

bench_init() {
	BENCH_NAME=$1
}

bench_is_smoke() {
	[ "$BENCH_SMOKE" = 1 ]
}

# bench_skip REASON: prints the skip line and ends the case (exit 77).
bench_skip() {
	echo "bench $BENCH_NAME: skipped ($*)"
	exit "$BENCH_SKIP_CODE"
}

# bench_require_built RELPATH...: our binaries must exist in the build dir.
bench_require_built() {
	local p
	for p in "$@"; do
		[ -x "$OPENSHELL_BUILD/$p" ] || bench_skip "not built yet: $OPENSHELL_BUILD/$p"
	done
}

# bench_require_cmd CMD...: peers and tools must be installed.
bench_require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || bench_skip "$c not installed (scripts/install-deps --check)"
	done
}

# bench_now_ns: monotonic-enough wall clock in nanoseconds for timing commands.
bench_now_ns() {
	date +%s%N
}

# bench_time_ms CMD...: runs CMD (output discarded), prints elapsed ms.
# A failing CMD fails the case: a figure from a broken run is worthless.
bench_time_ms() {
	local t0 t1
	t0=$(bench_now_ns)
	"$@" >/dev/null 2>&1 || {
		echo "bench_time_ms: command failed: $*" >&2
		return 1
	}
	t1=$(bench_now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e6 }'
}

# bench_stats FIGURES...: prints "median min max n" of the figures.
bench_stats() {
	printf '%s\n' "$@" | sort -g | awk '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "nan nan nan 0"; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.6g %.6g %.6g %d\n", m, v[1], v[NR], NR
		}'
}

bench_median() {
	local s
	s=$(bench_stats "$@")
	echo "${s%% *}"
}

# bench_ratio OURS PEER: ours/peer with 3 significant digits; "n/a" when the
# peer figure is zero or missing.
bench_ratio() {
	awk -v o="$1" -v p="$2" 'BEGIN {
		if (p + 0 == 0 || o == "" || o == "nan" || p == "nan") { print "n/a"; exit }
		printf "%.3g\n", o / p
	}'
}

# bench_alternate OURS_FN PEER_FN: warm-up rounds, then BENCH_ROUNDS rounds,
# swapping which side goes first every round so drift (thermal, caches,
# neighbours) hits both sides alike. Each function prints one figure.
# Results: BENCH_OURS and BENCH_PEER, space-separated figures.
bench_alternate() {
	local ours_fn=$1 peer_fn=$2 i v
	BENCH_OURS=
	BENCH_PEER=
	for ((i = 0; i < BENCH_WARMUP; i++)); do
		"$ours_fn" >/dev/null || return 1
		"$peer_fn" >/dev/null || return 1
	done
	for ((i = 0; i < BENCH_ROUNDS; i++)); do
		if ((i % 2 == 0)); then
			v=$("$ours_fn") || return 1
			BENCH_OURS+="$v "
			v=$("$peer_fn") || return 1
			BENCH_PEER+="$v "
		else
			v=$("$peer_fn") || return 1
			BENCH_PEER+="$v "
			v=$("$ours_fn") || return 1
			BENCH_OURS+="$v "
		fi
	done
}

# bench_raw LABEL FIGURES...: one raw line with every figure and the stats.
bench_raw() {
	local label=$1 s
	shift
	s=$(bench_stats "$@")
	read -r med min max n <<<"$s"
	echo "  $BENCH_NAME $label: median=$med min=$min max=$max n=$n raw=[$*]"
}

# bench_report OURS_FIGURES PEER_FIGURES UNIT PEER_NAME: raw lines, then the
# one result line `bench NAME: ours=X peer=Y ratio=Z unit=U vs=PEER` (medians).
bench_report() {
	local ours=$1 peer=$2 unit=$3 vs=$4 om pm
	# shellcheck disable=SC2086 # figure lists are space-separated on purpose
	{
		bench_raw "ours" $ours
		bench_raw "peer ($vs)" $peer
		om=$(bench_median $ours)
		pm=$(bench_median $peer)
	}
	echo "bench $BENCH_NAME: ours=$om peer=$pm ratio=$(bench_ratio "$om" "$pm") unit=$unit vs=$vs"
}
