#!/usr/bin/env bash
# Two hosts on this machine, for real: two network namespaces joined by a veth pair (10.77.0.1 and
# 10.77.0.2, each with a hostname of its own), and mpirun started in the first with a hostfile of both and
# an rsh agent that enters the second — the way OpenMPI starts ranks on another machine over ssh. Ranks
# talk over TCP only (btl tcp,self): what crosses "the network" is what a cluster's would carry.
#   scripts/two_hosts.sh -np 4 build/shardlab train --dp 2 --tp 2 …    (2 slots per host: ranks 0-1, 2-3)
# Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2; where namespaces are not permitted it
# prints one line saying so and exits 77. Removes both namespaces however it ends.
set -uo pipefail
cd "$(dirname "$0")/.."
tag=$$
ns1=shardlab-h1-$tag ns2=shardlab-h2-$tag
dir=$(mktemp -d)
cleanup() { ip netns del "$ns1" 2>/dev/null; ip netns del "$ns2" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
skip() { echo "two hosts: not possible here — $1"; exit 77; }
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2: make deps installs it)"
command -v unshare >/dev/null 2>&1 || skip "no 'unshare' command (util-linux)"
ip netns add "$ns1" 2>"$dir/err" || skip "network namespaces are not permitted ($(head -n 1 "$dir/err"))"
ip netns add "$ns2" 2>"$dir/err" || skip "a second network namespace is not permitted ($(head -n 1 "$dir/err"))"
{ ip link add "slv1-$tag" type veth peer name "slv2-$tag" &&
  ip link set "slv1-$tag" netns "$ns1" && ip link set "slv2-$tag" netns "$ns2" &&
  ip -n "$ns1" addr add 10.77.0.1/24 dev "slv1-$tag" && ip -n "$ns2" addr add 10.77.0.2/24 dev "slv2-$tag" &&
  ip -n "$ns1" link set "slv1-$tag" up && ip -n "$ns2" link set "slv2-$tag" up &&
  ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up; } 2>"$dir/err" ||
  skip "the veth pair between the namespaces could not be made ($(head -n 1 "$dir/err"))"
ip netns exec "$ns1" unshare --uts true 2>"$dir/err" || skip "a hostname of its own is not permitted ($(head -n 1 "$dir/err"))"

printf '10.77.0.1 slots=2\n10.77.0.2 slots=2\n' >"$dir/hostfile"
# The rsh agent: OpenMPI calls it as `agent HOST COMMAND…`, as it would call ssh.
cat >"$dir/agent" <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in
  10.77.0.1) ns=$ns1; name=host1 ;;
  10.77.0.2) ns=$ns2; name=host2 ;;
  *) echo "two hosts: no host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name && \$*"
AGENT
chmod +x "$dir/agent"

flags=(--hostfile "$dir/hostfile" --mca plm_rsh_agent "$dir/agent" --mca pml ob1 --mca btl tcp,self
       --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24
       -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 -x SHARDLAB_STDOUT_TTY=0)
[ -n "${OPENBLAS_CORETYPE:-}" ] && flags+=(-x OPENBLAS_CORETYPE)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
ip netns exec "$ns1" unshare --uts sh -c 'hostname host1 && exec mpirun "$@"' sh "${flags[@]}" "$@"
