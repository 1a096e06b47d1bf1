# cudaenv prompt hook, shared by bash and zsh (`cudaenv init - bash|zsh` inlines
# it after select.sh). It runs before every prompt, so the common case, nothing
# changed, must cost next to nothing and start no process: it walks up with
# `[ -f ]`, reads the version file with the `read` builtin and compares a key
# with the last one. Only when the key changes does it select, resolve and
# export, and only then can it print an error: once, not at every prompt.

# The user's own values, saved once per shell, restored when no selection applies.
if [ -z "${_CUDAENV_SAVED-}" ]; then
    _CUDAENV_SAVED=1
    _CUDAENV_HAD_CUDA_HOME=${CUDA_HOME+1} _CUDAENV_ORIG_CUDA_HOME=${CUDA_HOME-}
    _CUDAENV_HAD_CUDA_PATH=${CUDA_PATH+1} _CUDAENV_ORIG_CUDA_PATH=${CUDA_PATH-}
    _CUDAENV_HAD_CUDAToolkit_ROOT=${CUDAToolkit_ROOT+1} _CUDAENV_ORIG_CUDAToolkit_ROOT=${CUDAToolkit_ROOT-}
    _CUDAENV_HAD_CUDACXX=${CUDACXX+1} _CUDAENV_ORIG_CUDACXX=${CUDACXX-}
    # An entry a parent shell's cudaenv put on PATH stays this shell's baseline.
    _CUDAENV_ORIG_PATH_ENTRY=${CUDAENV_PATH_ENTRY-}
    _CUDAENV_ORIG_LD_ENTRY=${CUDAENV_LD_ENTRY-}
    _CUDAENV_APPLIED=
    _CUDAENV_KEY=
    _CUDAENV_STATUS=0
fi

# Undo what this shell's hook exported: the saved values come back exactly, and
# PATH loses only the entry the hook added (changes the user made since stay).
_cudaenv_restore() {
    [ -n "$_CUDAENV_APPLIED" ] || return 0
    _CUDAENV_APPLIED=
    if [ -n "$_CUDAENV_HAD_CUDA_HOME" ]; then export CUDA_HOME="$_CUDAENV_ORIG_CUDA_HOME"; else unset CUDA_HOME; fi
    if [ -n "$_CUDAENV_HAD_CUDA_PATH" ]; then export CUDA_PATH="$_CUDAENV_ORIG_CUDA_PATH"; else unset CUDA_PATH; fi
    if [ -n "$_CUDAENV_HAD_CUDAToolkit_ROOT" ]; then
        export CUDAToolkit_ROOT="$_CUDAENV_ORIG_CUDAToolkit_ROOT"
    else
        unset CUDAToolkit_ROOT
    fi
    if [ -n "$_CUDAENV_HAD_CUDACXX" ]; then export CUDACXX="$_CUDAENV_ORIG_CUDACXX"; else unset CUDACXX; fi
    _cudaenv_list_without "${PATH-}" "${CUDAENV_PATH_ENTRY-}"
    if [ -n "$_CUDAENV_ORIG_PATH_ENTRY" ]; then
        export PATH="$_CUDAENV_ORIG_PATH_ENTRY${_ce_list:+:$_ce_list}" CUDAENV_PATH_ENTRY="$_CUDAENV_ORIG_PATH_ENTRY"
    else
        export PATH="$_ce_list"
        unset CUDAENV_PATH_ENTRY
    fi
    if [ -n "${CUDAENV_LD_ENTRY-}" ] && [ "$CUDAENV_LD_ENTRY" != "$_CUDAENV_ORIG_LD_ENTRY" ]; then
        _cudaenv_list_without "${LD_LIBRARY_PATH-}" "$CUDAENV_LD_ENTRY"
        if [ -n "$_CUDAENV_ORIG_LD_ENTRY" ]; then
            export LD_LIBRARY_PATH="$_CUDAENV_ORIG_LD_ENTRY${_ce_list:+:$_ce_list}" CUDAENV_LD_ENTRY="$_CUDAENV_ORIG_LD_ENTRY"
        else
            if [ -n "$_ce_list" ]; then export LD_LIBRARY_PATH="$_ce_list"; else unset LD_LIBRARY_PATH; fi
            unset CUDAENV_LD_ENTRY
        fi
    fi
}

# The lines of version file $1 up to its first value line, into _ce_raw: the
# cheap part of the key. Validation happens only when the key changes.
_cudaenv_raw_value() {
    local line tool=
    case $1 in */.tool-versions) tool=1 ;; esac  # there, the cuda line is the value
    _ce_raw=
    while IFS= read -r line || [ -n "$line" ]; do
        _ce_raw="$_ce_raw|$line"
        line=${line%%#*}
        _cudaenv_trim "$line"
        [ -n "$_ce_trimmed" ] || continue
        [ -z "$tool" ] && return 0
        case $_ce_trimmed in cuda | cuda[" $_ce_tab"]*) return 0 ;; esac
    done <"$1"
}

_cudaenv_hook() {
    local key
    _cudaenv_root
    key="$_ce_r|${CONDA_PREFIX-}|${CUDAENV_LD_LIBRARY_PATH-}|"
    _cudaenv_trim "${CUDAENV_VERSION-}"
    if [ -n "$_ce_trimmed" ]; then
        key="${key}env|$CUDAENV_VERSION"
    elif _cudaenv_find_file; then
        _cudaenv_raw_value "$_ce_file" 2>/dev/null
        key="${key}file|$_ce_file|$_ce_raw"
    elif ! _cudaenv_global_file || [ -f "$_ce_global" ]; then
        _cudaenv_raw_value "$_ce_global" 2>/dev/null
        key="${key}global|$_ce_global|$_ce_raw"
    else
        key=none
    fi
    [ "$key" = "$_CUDAENV_KEY" ] && return "${_CUDAENV_STATUS:-0}"
    _CUDAENV_KEY=$key
    # _CUDAENV_STATUS keeps the outcome (0, 1 invalid, 127 not installed) for
    # prompts and scripts that want to show it after the one-time message.
    _CUDAENV_STATUS=0
    if [ "$key" = none ]; then
        # Outside any project and no global version: the user's own environment.
        _cudaenv_restore
        return 0
    fi
    if ! _cudaenv_select; then
        _CUDAENV_STATUS=1
    elif ! _cudaenv_resolve; then
        _CUDAENV_STATUS=127
    fi
    if [ "$_CUDAENV_STATUS" != 0 ]; then
        # Never leave the previous project's toolkit exported under a broken selection.
        printf 'cudaenv: %s\n' "$_ce_err" >&2
        _cudaenv_restore
        return "$_CUDAENV_STATUS"
    fi
    _cudaenv_apply "$_ce_root"
    _CUDAENV_APPLIED=1
}

# Run from the prompt: keeps the user's $? intact for their prompt.
_cudaenv_prompt() {
    local last=$?
    _cudaenv_hook
    return $last
}

# The `cudaenv` command in the shell: `shell` has to change this shell's
# variables, so its output (validated by Python, then quoted) is evaluated
# here; any other command runs as usual, and then the hook looks again
# (`install`, `local`, `global` may have changed what applies).
cudaenv() {
    local out rc
    if [ "${1-}" = shell ]; then
        shift
        out=$(command cudaenv sh-shell --shell @SHELL@ "$@") || return
        eval "$out"
        _CUDAENV_KEY=
        _cudaenv_hook
        return
    fi
    command cudaenv "$@"
    rc=$?
    _CUDAENV_KEY=
    _cudaenv_hook
    return $rc
}
