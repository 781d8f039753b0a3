# scripts/lib.sh: what scripts/test and scripts/bench share — logging, phase
# timings, waiting for servers, free ports, long steps in their own process
# group, installing the packages and starting Redis. Sourced, never run: it
# defines functions and a few globals, and starts nothing by itself.
#
# The sourcing script owns TMP (a private temp dir, set before start_redis or
# install_missing) and its own EXIT trap; stop_step and print_timings are
# for that trap.

CI=${CI:-}
in_ci() { [[ $CI == true ]]; }

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die() {
	printf 'ERROR: %s\n' "$*" >&2
	exit 1
}

# ---------------------------------------------------------------------------
# Timing: `phase NAME` closes the previous phase and opens the next one; the
# table is printed on exit.

now_ms() { echo $(($(date +%s%N) / 1000000)); }
RUN_START=$(now_ms)
PHASE=''
PHASE_START=0
TIMINGS=()
phase_end() {
	[[ -n $PHASE ]] || return 0
	local ms=$(($(now_ms) - PHASE_START))
	TIMINGS+=("$(printf '  %-34s %4d.%ds' "$PHASE" $((ms / 1000)) $((ms % 1000 / 100)))")
	PHASE=''
}
phase() {
	phase_end
	PHASE=$1
	PHASE_START=$(now_ms)
	log "$1"
}

# ---------------------------------------------------------------------------
# Waiting, without guessing how long things take.

# wait_for PID SECONDS CMD [ARGS...]: run CMD every 0.1 s until it succeeds.
# Fails after SECONDS, or at once if process PID has exited (no point waiting
# for a server that died).
wait_for() {
	local pid=$1 deadline=$(($(now_ms) + $2 * 1000))
	shift 2
	while kill -0 "$pid" 2>/dev/null; do
		"$@" && return 0
		(($(now_ms) < deadline)) || return 1
		sleep 0.1
	done
	return 1
}

# startup_failed NAME PID: say why a server we were waiting for is not ready.
startup_failed() {
	local name=$1 pid=$2 rc=0
	if gone "$pid"; then
		wait "$pid" 2>/dev/null || rc=$?
		log "$name exited during startup (status $rc)"
	else
		log "$name was not ready in time"
	fi
}

gone() { ! kill -0 -- "$1" 2>/dev/null; }

# stop_pid NAME PID: SIGTERM, up to 10 s to exit, then SIGKILL.
stop_pid() {
	local name=$1 pid=$2
	kill -TERM -- "$pid" 2>/dev/null || return 0
	local deadline=$(($(now_ms) + 10000))
	until gone "$pid"; do
		if (($(now_ms) >= deadline)); then
			warn "$name (pid $pid) ignored SIGTERM for 10 s; killing it"
			kill -KILL -- "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null || true # reap it if it is our child; quiet the "Terminated" notice
}

# ---------------------------------------------------------------------------
# Ports. Python-free: bash's /dev/tcp tells whether something listens.
# Candidates come from 20000-31999, below Linux's ephemeral range
# (32768-60999), so they don't collide with outgoing connections' ports.
# Between the check and the server's bind another process could take the port;
# each start_* retries on "address in use" for that reason.

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PORT=''
PORTS_TAKEN=' '
# free_port: sets PORT to a port nobody listens on and that we did not hand out.
free_port() {
	local p
	for _ in {1..200}; do
		p=$((20000 + RANDOM % 12000))
		[[ $PORTS_TAKEN == *" $p "* ]] && continue
		if ! port_open "$p"; then
			PORTS_TAKEN+="$p "
			PORT=$p
			return 0
		fi
	done
	return 1
}

# run_step CMD [ARGS...]: run a long step (go vet, go test) in its own
# process group, and wait for it with `wait`.
# Why not simply in the foreground: bash runs a trap only once the foreground
# child has exited, so a SIGTERM sent to this script (a CI runner giving up)
# would wait for the whole test run, and the servers could die under it
# meanwhile. `wait` returns at once on a trapped signal; cleanup then ends the
# step's whole group, go and the test binaries it started, and only then
# stops the servers. Ctrl-C works the same way.
STEP_PID=''
run_step() {
	setsid "$@" &
	STEP_PID=$!
	local rc=0
	wait "$STEP_PID" || rc=$?
	STEP_PID=''
	return "$rc"
}

# stop_step: end the running step (see run_step), its whole group, for a
# script that is exiting.
stop_step() {
	[[ -n $STEP_PID ]] || return 0
	log "interrupted: stopping $(ps -o args= -p "$STEP_PID" 2>/dev/null || echo "pid $STEP_PID")"
	# The whole group: go, and the test binaries it runs. Then wait for go
	# itself, our child (a group member reparented to pid 1 could linger
	# as a zombie until pid 1 reaps it, so "group gone" is no test).
	kill -TERM -- "-$STEP_PID" 2>/dev/null
	stop_pid "the step" "$STEP_PID"
	kill -KILL -- "-$STEP_PID" 2>/dev/null # whatever of it outlived go
}

# print_timings: the phases and the total, to stderr.
print_timings() {
	phase_end
	local ms=$(($(now_ms) - RUN_START))
	printf '\nTimings:\n' >&2
	printf '%s\n' "${TIMINGS[@]}" >&2
	printf '  %-34s %4d.%ds\n' total $((ms / 1000)) $((ms % 1000 / 100)) >&2
}

# A server that did not start: fatal in CI, a warning elsewhere.
unavailable() {
	local name=$1 why=$2
	if in_ci; then
		die "$name: $why (CI=true: every test server is required)"
	fi
	warn "$name: $why; its tests will skip"
}

# ---------------------------------------------------------------------------
# Go itself: the machine's Go lives in /usr/local/go, which a bare
# environment may not have on PATH.

use_go() {
	if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
		PATH=/usr/local/go/bin:$PATH
	fi
	command -v go >/dev/null || die "go is not on PATH"
}

# ---------------------------------------------------------------------------
# Packages.

find_nginx() {
	if [[ -n ${PACER_NGINX_BIN:-} && -x $PACER_NGINX_BIN ]]; then
		NGINX_BIN=$PACER_NGINX_BIN
	elif command -v nginx >/dev/null; then
		NGINX_BIN=$(command -v nginx)
	elif [[ -x /usr/sbin/nginx ]]; then # /usr/sbin is not on every user's PATH
		NGINX_BIN=/usr/sbin/nginx
	else
		return 1
	fi
}

find_postgres() {
	# Debian installs each major version in its own dir; take the newest.
	PG_BIN=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n1)
	[[ -x $PG_BIN/initdb && -x $PG_BIN/pg_ctl ]]
}

find_redis() { command -v redis-server >/dev/null; }

# install_missing PACKAGE...: install Debian's PACKAGEs (none: say all is
# there), needing root or sudo; the apt log goes to $TMP/apt.log. A failure is
# unavailable(), so fatal only in CI.
install_missing() {
	local missing=("$@") sudo=()
	if ((${#missing[@]} == 0)); then
		log "the packages needed are installed"
	else
		if ((EUID != 0)); then
			command -v sudo >/dev/null && sudo=(sudo)
		fi
		log "installing ${missing[*]} (apt log: $TMP/apt.log)"
		# Lock::Timeout: wait for another apt (e.g. unattended-upgrades) instead of failing.
		if "${sudo[@]}" apt-get update -q >"$TMP/apt.log" 2>&1 &&
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=120 \
				"${missing[@]}" >>"$TMP/apt.log" 2>&1; then
			log "installed: $(grep -oP '^Setting up \K\S+' "$TMP/apt.log" | tr '\n' ' ')"
		else
			tail -n 30 "$TMP/apt.log" >&2
			unavailable "apt-get install ${missing[*]}" "failed"
		fi
	fi
}

# start_redis: Redis on a free loopback port, files in $TMP/redis; sets
# REDIS_PID and exports PACER_REDIS_ADDR.
start_redis() {
	local dir=$TMP/redis
	mkdir -p "$dir"
	for _ in 1 2 3; do
		free_port || return 1
		: >"$dir/redis.log"
		# No RDB snapshots, no AOF: nothing to write, nothing to clean.
		# setsid (here and for nginx): a Ctrl-C at the terminal must not stop
		# the servers under the running tests; cleanup stops them, in order.
		# (pg_ctl detaches postgres the same way by itself.)
		setsid redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no \
			--dir "$dir" --logfile "$dir/redis.log" --daemonize no </dev/null &
		REDIS_PID=$!
		if wait_for "$REDIS_PID" 10 redis_ping "$PORT"; then
			export PACER_REDIS_ADDR=127.0.0.1:$PORT
			return 0
		fi
		startup_failed redis "$REDIS_PID"
		stop_pid redis "$REDIS_PID"
		REDIS_PID=''
		grep -q 'Address already in use' "$dir/redis.log" || break
		log "redis: port $PORT was taken meanwhile; trying another"
	done
	log "redis log:"
	tail -n 20 "$dir/redis.log" >&2
	return 1
}

# redis_ping PORT: one RESP PING over /dev/tcp (no redis-cli needed).
redis_ping() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1"
		printf 'PING\r\n' >&3
		IFS= read -r -t 2 reply <&3
		[[ $reply == $'+PONG\r' ]]
	) 2>/dev/null
}

# start_redis_cluster: a Redis Cluster of three primaries, each with one
# replica, on free loopback ports, files in $TMP/redis-cluster; sets
# REDIS_CLUSTER_PIDS (every node, for cleanup: stop_redis_cluster) and exports
# PACER_REDIS_CLUSTER_ADDRS (every node's host:port, comma-separated). Built
# by `redis-cli --cluster create` (redis-tools, which redis-server depends
# on), and ready once every node says cluster_state:ok.
REDIS_CLUSTER_PIDS=()
start_redis_cluster() {
	local dir=$TMP/redis-cluster addrs=() i node port bus pid
	command -v redis-cli >/dev/null || {
		log "redis-cli is not installed (Debian's redis-tools)"
		return 1
	}
	mkdir -p "$dir"
	for i in 0 1 2 3 4 5; do
		node=$dir/$i
		mkdir -p "$node"
		for _ in 1 2 3; do
			free_port || return 1
			port=$PORT
			# The cluster bus gets a port of its own: the default, port+10000,
			# may be in the ephemeral range or taken.
			free_port || return 1
			bus=$PORT
			: >"$node/redis.log"
			rm -f "$node/nodes.conf"
			# A node that misses pings for 5 s is failed over. The tests never
			# stop a node of this cluster (it is shared; a test that fails one
			# over starts its own), so the timeout only has to be long enough
			# that a busy machine never trips it.
			setsid redis-server --bind 127.0.0.1 --port "$port" --cluster-port "$bus" \
				--cluster-enabled yes --cluster-config-file "$node/nodes.conf" \
				--cluster-node-timeout 5000 --save '' --appendonly no \
				--dir "$node" --logfile "$node/redis.log" --daemonize no </dev/null &
			pid=$!
			if wait_for "$pid" 10 redis_ping "$port"; then
				REDIS_CLUSTER_PIDS+=("$pid")
				addrs+=("127.0.0.1:$port")
				continue 2
			fi
			startup_failed "redis cluster node $i" "$pid"
			stop_pid "redis cluster node $i" "$pid"
			grep -q 'Address already in use' "$node/redis.log" || break
			log "redis cluster: port $port or $bus was taken meanwhile; trying others"
		done
		tail -n 20 "$node/redis.log" >&2
		return 1
	done
	# --cluster-yes accepts the proposed layout: the first three nodes are
	# primaries, each of the others a replica of one of them.
	if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
		</dev/null >"$dir/create.log" 2>&1; then
		tail -n 20 "$dir/create.log" >&2
		return 1
	fi
	# create returns once the nodes agree on the configuration; each node
	# says ok once it sees every slot served.
	for i in "${!addrs[@]}"; do
		if ! wait_for "${REDIS_CLUSTER_PIDS[$i]}" 30 cluster_ok "${addrs[$i]##*:}"; then
			log "redis cluster node ${addrs[$i]} is not ok:"
			redis-cli -p "${addrs[$i]##*:}" cluster info 2>&1 | head -n 3 >&2
			return 1
		fi
	done
	export PACER_REDIS_CLUSTER_ADDRS
	PACER_REDIS_CLUSTER_ADDRS=$(
		IFS=,
		echo "${addrs[*]}"
	)
}

# cluster_ok PORT: the node on PORT says cluster_state:ok.
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

# stop_redis_cluster: stop every node start_redis_cluster started.
stop_redis_cluster() {
	local pid
	# All at once, then wait for each: six nodes stop in the time of one.
	for pid in "${REDIS_CLUSTER_PIDS[@]}"; do
		kill -TERM -- "$pid" 2>/dev/null
	done
	for pid in "${REDIS_CLUSTER_PIDS[@]}"; do
		stop_pid "redis cluster node" "$pid"
	done
	REDIS_CLUSTER_PIDS=()
}
