#!/usr/bin/env bash
# A codesign sweep on a SLURM allocation: Ray's head on the first node (where this script and the driver run),
# a worker on every other node, Ray token authentication on, the store on object storage (no shared disk).
#
#   export CODESIGN_STORE=s3://your-bucket/codesign   # or a folder every node mounts at the same path
#   export MOONSHOT_API_KEY=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=...   # in your shell, never in a file here
#   sbatch launchers/slurm.sh -m model=kimi-k3,qwen3.8-27b harness=native,claude_code
#
# Arguments go to `python -m codesign`. sbatch and srun pass the environment on, so the keys reach every node
# and the driver; nothing here writes them down. codesign must be installed at the same path on every node:
# CODESIGN_VENV (default ./.venv: `make setup` in a checkout on your home directory).
#SBATCH --job-name=codesign
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
#SBATCH --exclusive
#SBATCH --time=12:00:00
set -euo pipefail

PY=${CODESIGN_VENV:-$PWD/.venv}/bin
port=${CODESIGN_RAY_PORT:-6379}
export CODESIGN_STORE=${CODESIGN_STORE:-s3://your-bucket/codesign}
case $CODESIGN_STORE in
  *your-bucket*) echo "set CODESIGN_STORE to your store (s3://bucket/prefix, gs://..., or a shared folder)" >&2
                 exit 2 ;;
esac
export RAY_USAGE_STATS_ENABLED=0 LITELLM_LOCAL_MODEL_COST_MAP=True

# The cluster's token: made here for this job alone and passed to every node in the environment srun hands on
# (not in a file, not on a command line). Every node and the driver run in token mode.
export RAY_AUTH_MODE=token
RAY_AUTH_TOKEN=$("$PY/python" -c 'import secrets; print(secrets.token_hex(32))')
export RAY_AUTH_TOKEN

mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
head=${nodes[0]}
cpus=${SLURM_CPUS_PER_TASK:-2}
browsers=$((cpus / 2 > 0 ? cpus / 2 : 1))   # trial actors per node: one Chromium per two cores
read -ra ray_args <<<"${CODESIGN_RAY_ARGS:-}"   # more `ray start` arguments for every node, if needed

steps=()   # the srun steps running Ray, head first. Ending a step ends every process in it.
stop_cluster() {
  local code=$? i step deadline
  trap - EXIT
  for ((i = ${#steps[@]} - 1; i >= 0; i--)); do   # workers first, so each drains while the head still answers
    step=${steps[i]} deadline=$((SECONDS + 60))
    kill -TERM "$step" 2>/dev/null || continue   # srun passes SIGTERM on: `ray start` stops its node
    while kill -0 "$step" 2>/dev/null && ((SECONDS < deadline)); do sleep 1; done
    kill -KILL "$step" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  exit "$code"
}
trap stop_cluster EXIT
trap 'exit 143' TERM   # scancel / time limit: stop the cluster on the way out
trap 'exit 130' INT

srun --nodes=1 --ntasks=1 -w "$head" \
  "$PY/python" -m codesign.cluster head --port "$port" --browsers "$browsers" -- --num-cpus="$cpus" "${ray_args[@]}" --block &
steps+=($!)
if ((${#nodes[@]} > 1)); then
  srun --nodes=$((${#nodes[@]} - 1)) --ntasks=$((${#nodes[@]} - 1)) --ntasks-per-node=1 --exclude="$head" \
    "$PY/python" -m codesign.cluster join "$head:$port" --browsers "$browsers" -- --num-cpus="$cpus" "${ray_args[@]}" --block &
  steps+=($!)
fi

# Wait for the cluster's own state, not a fixed time: every node alive in the head's view (the token is in the
# environment, so this client is admitted like the nodes).
COUNT_ALIVE='
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
socket.create_connection((host, int(port)), timeout=10).close()   # the head answers at all (else ray.init waits)
import ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
alive = sum(node["Alive"] for node in ray.nodes())
print(f"codesign: {alive} of {sys.argv[2]} Ray nodes up", flush=True)
sys.exit(0 if alive >= int(sys.argv[2]) else 1)
'
deadline=$((SECONDS + ${CODESIGN_NODE_TIMEOUT:-600}))
until timeout 120 "$PY/python" -c "$COUNT_ALIVE" "$head:$port" "${#nodes[@]}" 2>/dev/null; do
  for step in "${steps[@]}"; do
    kill -0 "$step" 2>/dev/null || { echo "a Ray start step ended early: see its output above" >&2; exit 1; }
  done
  ((SECONDS < deadline)) || { echo "not every node joined within ${CODESIGN_NODE_TIMEOUT:-600} s" >&2; exit 1; }
  sleep 5
done

# The sweep: as many trial actors as the nodes have browsers for. The driver runs on the head (a Ray node).
RAY_ADDRESS="$head:$port" "$PY/python" -m codesign executor.num_workers=null "$@"
