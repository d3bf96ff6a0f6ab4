#!/usr/bin/env bash
# sbatch launchers/slurm.sh -m model=kimi-k3,qwen3.8-27b harness=native,claude_code
#SBATCH --job-name=codesign
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
#SBATCH --time=12:00:00
set -euo pipefail
export RAY_USAGE_STATS_ENABLED=0
export CODESIGN_STORE=${CODESIGN_STORE:-$HOME/codesign-store}   # shared filesystem: every node sees it
PY=${CODESIGN_VENV:-$PWD/.venv}/bin
nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
head=${nodes[0]}
port=6379
srun --nodes=1 --ntasks=1 -w "$head" "$PY/ray" start --head --port=$port --include-dashboard=false --block &
sleep 15
for node in "${nodes[@]:1}"; do
  srun --nodes=1 --ntasks=1 -w "$node" "$PY/ray" start --address="$head:$port" --block &
done
sleep 15
trap '"$PY/ray" stop' EXIT   # never leave a cluster behind: a stale one makes later ray.init() hang
RAY_ADDRESS="$head:$port" "$PY/python" -m codesign executor.num_workers=$((2 * ${#nodes[@]})) "$@"
