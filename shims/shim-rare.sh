# The shim's own rare path (after select-rare.sh in the file a shim sources).

# No version file from the shim's directory up: a consumer started in a project may
# be building somewhere else (torch's load() in ~/.cache/torch_extensions,
# `ninja -C ~/.cache/flashinfer/...`, CMake's -B directory), and the global
# toolkit would compile there while the consumer's own probe, run from the
# project, saw the project's. So the nearest ancestor process whose working
# directory has a version file selects, as if the shim ran there: at most 16
# ancestors, only our own user's (-O on /proc/<pid>: another user's process is
# not ours to follow, and its cwd is unreadable anyway), the same file rules
# as for our own directory (_cudaenv_find_file). Builtins only: `cd -P` into
# /proc/<pid>/cwd gives the path, and `cd -P` back to our own directory's
# physical path returns (no descriptor is opened: one the caller passed, such
# as make's jobserver, stays as it was).
_cudaenv_find_ancestor() {
    local pid here back stat n=0
    _ce_via=
    here=$PWD
    cd -P . 2>/dev/null || return 1
    back=$PWD
    pid=$PPID
    while [ $n -lt 16 ]; do
        n=$((n + 1))
        case $pid in '' | *[!0123456789]* | 0 | 1) break ;; esac
        [ -O "/proc/$pid" ] || break
        if cd -P "/proc/$pid/cwd" 2>/dev/null && _cudaenv_find_file; then
            _ce_via=$pid
            break
        fi
        # The parent's pid, from the PPid: line of /proc/<pid>/status, the 7th:
        # dash's `read` takes a byte per read(2), and that line comes about 100
        # bytes in, where /proc/<pid>/stat's one line is some 300.
        stat=
        while IFS= read -r stat; do
            case $stat in PPid:*) break ;; esac
        done <"/proc/$pid/status" 2>/dev/null
        pid=${stat#PPid:}
        pid=${pid#"$_ce_tab"}
    done
    if ! cd -P -- "$back" 2>/dev/null; then
        _ce_err="cannot return to $back after looking for the project of this build"
        _cudaenv_say "cudaenv: $_ce_err"
        exit 1
    fi
    PWD=$here
    [ -n "${_ce_via-}" ]
}

# The selected toolkit lacks the program $_ce_name (another toolkit has it,
# which is why the shim exists): run the next one of that name on PATH, as
# rbenv does, skipping this shims directory. _CUDAENV_FALLBACK stops a loop
# through another store's shim of the same name. Otherwise the error, with
# pyenv's hint, and exit 127. Never returns.
_cudaenv_not_in_toolkit() {
    if [ "${_CUDAENV_FALLBACK-}" != "$_ce_name" ]; then
        _cudaenv_root
        _ce_saved_ifs=$IFS
        IFS=:
        set -f
        for _ce_dir in ${PATH-}; do
            _ce_dir=${_ce_dir:-.}
            _ce_next=$_ce_dir/$_ce_name
            if [ -f "$_ce_next" ] && [ -x "$_ce_next" ] && ! [ "$_ce_next" -ef "$0" ] \
                && ! [ "$_ce_dir" -ef "$_ce_r/shims" ]; then
                IFS=$_ce_saved_ifs
                set +f
                _CUDAENV_FALLBACK=$_ce_name
                export _CUDAENV_FALLBACK
                _cudaenv_unguard
                exec "$_ce_next" "$@"
            fi
        done
        IFS=$_ce_saved_ifs
        set +f
    fi
    _cudaenv_origin
    _cudaenv_say "cudaenv: '$_ce_name' is not in the selected toolkit $_ce_root ($_ce_origin)"
    # pyenv's hint: which installed toolkits do have it (full-release aliases
    # and system, as cudaenv.selecting.inventory lists them).
    _cudaenv_root
    _ce_have=
    for _ce_alias in "$_ce_r"/aliases/*.*.* "$_ce_r"/aliases/system; do
        [ -f "$_ce_alias" ] || continue
        { IFS= read -r _ce_ar && IFS= read -r _ce_rel; } <"$_ce_alias" || continue
        case ", $_ce_have, " in *", $_ce_rel, "*) continue ;; esac
        [ -f "$_ce_ar/bin/$_ce_name" ] && [ -x "$_ce_ar/bin/$_ce_name" ] && _ce_have=${_ce_have:+$_ce_have, }$_ce_rel
    done
    [ -z "$_ce_have" ] || _cudaenv_say @EXISTS_IN{name=$_ce_name,releases=$_ce_have}@
    exit 127
}

# The toolkit's bin/ is this shims directory: it would exec this file forever. Never returns.
_cudaenv_own_shims() {
    _cudaenv_say "cudaenv: toolkit root $_ce_root points at cudaenv's own shims; fix the alias with 'cudaenv rehash'"
    exit 1
}

# Version file $1 is in a directory of another user, who can swap it for a
# FIFO between the shim's test of it and its open, and an open of a FIFO waits
# for a writer (the shell cannot open without waiting). So a watchdog, for such
# directories only, ends the shim after 2 s with the usual
# refusal of a FIFO; it is stopped before the shim execs anything
# (_cudaenv_unguard), so it never signals the program that takes its place.
_cudaenv_guard() {
    [ -z "${_ce_guard-}" ] || return 0
    _ce_guarded=$1
    trap '_cudaenv_not_regular "$_ce_guarded"; _cudaenv_say "cudaenv: $_ce_err"; exit 1' ALRM
    (command -p sleep 2 && kill -s ALRM $$) >/dev/null 2>&1 &
    _ce_guard=$!
}

# Stop the watchdog (_cudaenv_guard), if one runs.
_cudaenv_unguard() {
    [ -n "${_ce_guard-}" ] || return 0
    kill "$_ce_guard" 2>/dev/null
    trap - ALRM
    _ce_guard=
}

# The fix for a build that would mix toolkits, into _ce_fix: one toolkit for
# the whole build, the selected one.
_cudaenv_one_fix() {
    _ce_fix="run the build as 'cudaenv exec -- <command>', or export CUDA_HOME=$_ce_root CUDA_PATH=$_ce_root CUDACXX=$_ce_root/bin/nvcc PATH=$_ce_root/bin:\$PATH"
}

# The store root was taken for a toolkit root, but its include/ and lib64/ are
# not the toolkit selected here (see shim.sh). Never returns.
_cudaenv_mixed_root() {
    _cudaenv_origin
    _cudaenv_one_fix
    _cudaenv_say "cudaenv: $0 was called as a toolkit's nvcc with $_ce_r as the toolkit root (CUDA_HOME from 'which $_ce_name'), whose include/ and lib64/ follow the global selection, but the toolkit selected here is $_ce_root ($_ce_origin); $_ce_fix"
    exit 1
}

# nvcc was given another toolkit's headers or libraries (_ce_bad). Never returns.
_cudaenv_mixed_flags() {
    _cudaenv_origin
    _cudaenv_one_fix
    _cudaenv_say "cudaenv: this build passes nvcc $_ce_bad, which is another toolkit's, but the toolkit selected here is $_ce_root ($_ce_origin); $_ce_fix"
    exit 1
}
