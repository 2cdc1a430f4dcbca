# Sourced by scripts/run.sh and scripts/run-llamacpp.sh: a temporary
# discovery directory (kv), the children's pids (pids), their stop on any
# exit or signal, the environment of a one-machine stack (file discovery,
# TCP request plane, loopback, no grace periods), and get, which reads a
# page of the frontend on $port without curl.

kv=$(mktemp -d "${TMPDIR:-/tmp}/dynamo-run.XXXXXX")
pids=()

# alive succeeds while any child runs.
alive() {
	local p
	for p in "${pids[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

# stop ends the children (SIGTERM, then SIGKILL after 10 s) and removes
# the discovery directory. It runs once, on any exit.
stop() {
	trap - EXIT INT TERM
	if ((${#pids[@]})); then
		echo
		echo "stopping..."
		kill -TERM "${pids[@]}" 2>/dev/null || true
		for _ in $(seq 100); do
			alive || break
			sleep 0.1
		done
		kill -KILL "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
		echo "stopped."
	fi
	rm -rf "$kv"
}
# on_signal stops everything, then dies of the signal it got, as a
# program that does not catch it would (make then says "Interrupt").
on_signal() {
	stop
	trap - "$1"
	kill -"$1" $$
}
trap stop EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM

export DYN_DISCOVERY_BACKEND=file DYN_FILE_KV="$kv" DYN_REQUEST_PLANE=tcp
export DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1
# Quick Ctrl-C: no grace period before the frontend and workers drain.
export DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0


# get prints the body of GET http://127.0.0.1:$port$1, with bash's
# /dev/tcp so that curl is not needed.
get() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$port"
		printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$1" >&3
		cat <&3
	) 2>/dev/null
}
