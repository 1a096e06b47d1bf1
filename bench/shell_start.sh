#!/usr/bin/env bash
# What cudaenv adds to every shell start (target: under 10 ms), against pyenv and mise in the
# same run: for bash, zsh and fish, a bare `SHELL -c true`, then the same shell reading each
# tool's rc line once, timed by hyperfine. Medians, and each line's cost over the bare shell.
#
#   bash bench/shell_start.sh [RUNS]            # default 30 runs per row
#   PYENV=~/.pyenv/bin/pyenv MISE=/path/to/mise bash bench/shell_start.sh
#
# Rows: `cudaenv` is the line `cudaenv init SHELL` prints (sources the kept init file, no Python);
# `cudaenv eval` is `eval "$(cudaenv init - SHELL)"`, what that line falls back to;
# `pyenv` is `eval "$(pyenv init - SHELL)"`; `mise` is `eval "$(mise activate SHELL)"`.
# pyenv and mise rows are left out when the tool is not found. mise: the npm registry's
# @jdxcode/mise-linux-x64 tarball carries the binary (`npm pack @jdxcode/mise-linux-x64`).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-30}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
command -v hyperfine >/dev/null || { echo "shell_start: needs hyperfine" >&2; exit 1; }

export HOME="$work/home" XDG_STATE_HOME="$work/home/.local/state" XDG_DATA_HOME="$work/home/.local/share"
export CUDAENV_ROOT="$work/root" CUDAENV_SYSTEM_SEARCH=""
mkdir -p "$HOME"
python3 "$repo/bench/stub_store.py" "$work" $'13.0\n' >/dev/null
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
cudaenv_bin=$(python3 -c 'from cudaenv.selecting import shell; print(shell.program())')
pyenv=${PYENV:-$(command -v pyenv || true)}
mise=${MISE:-$(command -v mise || true)}
cd "$work/proj"

rows=()
for sh in bash zsh fish; do
  command -v "$sh" >/dev/null || continue
  python3 -m cudaenv init - "$sh" >/dev/null  # writes the kept init file
  line=$(python3 -c "from cudaenv.selecting import shell; print(shell.rc_line('$sh'))")
  case $sh in
    bash) run="bash --norc --noprofile -c"; evalline="eval \"\$($cudaenv_bin init - bash)\"" ;;
    zsh) run="zsh -f -c"; evalline="eval \"\$($cudaenv_bin init - zsh)\"" ;;
    fish) run="fish --no-config -c"; evalline="$cudaenv_bin init - fish | source" ;;
  esac
  printf '%s\n' "$line" >"$work/rc.$sh"
  printf '%s\n' "$evalline" >"$work/eval.$sh"
  src=". "; [ "$sh" = fish ] && src="source "
  cmds=(-n "$sh bare" "$run true" -n "$sh cudaenv" "$run '$src$work/rc.$sh'" -n "$sh cudaenv eval" "$run '$src$work/eval.$sh'")
  if [ -n "$pyenv" ]; then
    if [ "$sh" = fish ]; then echo "$pyenv init - fish | source" >"$work/pyenv.$sh"; else echo "eval \"\$($pyenv init - $sh)\"" >"$work/pyenv.$sh"; fi
    cmds+=(-n "$sh pyenv" "$run '$src$work/pyenv.$sh'")
  fi
  if [ -n "$mise" ]; then
    if [ "$sh" = fish ]; then echo "$mise activate fish | source" >"$work/mise.$sh"; else echo "eval \"\$($mise activate $sh)\"" >"$work/mise.$sh"; fi
    cmds+=(-n "$sh mise" "$run '$src$work/mise.$sh'")
  fi
  hyperfine -N -w 3 -r "$runs" --export-json "$work/$sh.json" "${cmds[@]}" >/dev/null 2>&1
  rows+=("$work/$sh.json")
done

python3 - "${rows[@]}" <<'PY'
import json, statistics, sys
print(f"{'row':<18} {'median ms':>10} {'added ms':>9} {'user+sys ms (mean)':>19}")
for path in sys.argv[1:]:
    results = json.load(open(path))["results"]
    bare = statistics.median(results[0]["times"]) * 1000
    for r in results:
        med = statistics.median(r["times"]) * 1000
        cpu = (r["user"] + r["system"]) * 1000  # hyperfine gives means of these
        print(f"{r['command']:<18} {med:>10.1f} {med - bare:>9.1f} {cpu:>19.1f}")
PY
