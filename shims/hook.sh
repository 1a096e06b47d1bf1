# cudaenv prompt hook, shared by bash and zsh (`cudaenv init - bash|zsh` inlines
# it after select.sh). It runs before every prompt, so the common case, nothing
# changed, must cost next to nothing and start no process: it walks up with
# `[ -f ]`, reads the version file with the `read` builtin and compares a key
# with the last one. Only when the key changes does it select, resolve and
# export, and only then can it print an error: once, not at every prompt.

# Warnings (another user's version file ignored) are said once, when the key changes.
_ce_collect_warn=1

# select-rare.sh is inlined above: nothing to load, unlike in a shim.
_cudaenv_rare() { :; }
_cudaenv_rare_shared() { :; }
# A prompt is not ended by a watchdog (shim-rare.sh's): the hooks test a version file's kind before
# they open it, and Ctrl-C ends a wait on a FIFO swapped in since.
_cudaenv_guard() { :; }

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
    _CUDAENV_MISSING=
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
    _cudaenv_host_compiler_drop
    _cudaenv_list_without "${PATH-}" "${CUDAENV_PATH_ENTRY-}"
    if [ -n "$_CUDAENV_ORIG_PATH_ENTRY" ]; then
        export PATH="$_CUDAENV_ORIG_PATH_ENTRY${_ce_list:+:$_ce_list}" CUDAENV_PATH_ENTRY="$_CUDAENV_ORIG_PATH_ENTRY"
    else
        export PATH="$_ce_list"
        unset CUDAENV_PATH_ENTRY
    fi
    _cudaenv_ld_restore
}

# LD_LIBRARY_PATH loses the entry this shell's hook put first, and an entry
# the parent shell's hook exported comes back: on leaving a project, and when
# the user sets CUDAENV_LD_LIBRARY_PATH=0 mid-shell (_cudaenv_hook_apply).
_cudaenv_ld_restore() {
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

# Apply toolkit $1 for this shell. With CUDAENV_LD_LIBRARY_PATH=0, _cudaenv_apply
# leaves LD_LIBRARY_PATH alone (a shim must not undo its parent shell's), so the
# entry this shell's hook added while the setting was on is taken away here.
_cudaenv_hook_apply() {
    [ "${CUDAENV_LD_LIBRARY_PATH-}" != 0 ] || _cudaenv_ld_restore
    _cudaenv_apply "$1"
    _CUDAENV_APPLIED=1
}

# The bytes of version file $1 in _ce_raw: the cheap part of the key, taken
# at every prompt. Validation happens only when the key changes. Bounded like
# the real read (one byte past the size bound is enough to tell), and never
# opens what is not a regular file (a FIFO would wait for a writer).
_cudaenv_raw_value() {
    local LC_ALL=C  # bash: -N counts bytes
    _ce_raw=
    [ -f "$1" ] && [ -r "$1" ] || return 0
    _cudaenv_raw9 9<"$1"
}

# bash: one `read` of the whole file up to the bound. It drops NUL bytes, so the
# file offset after it goes into the key too. (zsh replaces this with sysread.)
_cudaenv_raw9() {
    IFS= read -r -d '' -N $((@MAX_BYTES@ + 1)) _ce_raw <&9
    _cudaenv_fd9_pos && _ce_raw="$_ce_pos|$_ce_raw"
}

# Nothing selects a toolkit here (no CUDAENV_VERSION, no version file, no
# global version), so `system` applies. Variables the user had set before the
# hook are their own choice of toolkit: those come back. Otherwise the system
# toolkit's root is exported, as for an explicit `system`; with none found,
# nothing is exported and nothing is said (no error at every prompt).
_cudaenv_default() {
    if [ -z "$_CUDAENV_HAD_CUDA_HOME$_CUDAENV_HAD_CUDA_PATH$_CUDAENV_HAD_CUDAToolkit_ROOT$_CUDAENV_HAD_CUDACXX" ]; then
        _ce_spec=system
        _ce_source=default
        if _cudaenv_resolve; then
            _cudaenv_hook_apply "$_ce_root"
            return 0
        fi
    fi
    _cudaenv_restore
}

# No version file of the user's own: the shared stores' global version files
# (the admin's default, _cudaenv_select_shared) into _ce_raw for the key, read
# with builtins as above; status 1 when no store has one (nothing selects).
# Which of them applies is decided when the key changes.
_cudaenv_shared_key() {
    local entry raw= noglob= IFS
    case $- in *f*) noglob=1 ;; esac
    set -f
    IFS=:
    for entry in $CUDAENV_SHARED_ROOTS; do
        _cudaenv_exists "$entry/version" || continue
        _cudaenv_raw_value "$entry/version" 2>/dev/null
        raw="$raw|$entry|$_ce_raw"
    done
    [ -n "$noglob" ] || set +f
    _ce_raw=$raw
    [ -n "$raw" ]
}

_cudaenv_hook() {
    local key
    # A store that is not absolute: said once per value; nothing is applied.
    if ! _cudaenv_root; then
        key="badroot|$CUDAENV_ROOT"
        [ "$key" = "$_CUDAENV_KEY" ] && return 1
        _CUDAENV_KEY=$key
        _CUDAENV_STATUS=1
        _cudaenv_say "cudaenv: $_ce_err"
        _cudaenv_restore
        return 1
    fi
    _ce_warn=
    # The stores themselves (CUDAENV_SHARED_ROOTS too) are looked at when a
    # selection is made, not at every prompt: see the two checks below.
    key="$_ce_r|${CONDA_PREFIX-}|${CUDAENV_LD_LIBRARY_PATH-}|${CUDAENV_SHARED_ROOTS-}|"
    # The user's own host compiler settings (activation.user_compiler reads the
    # same): one named mid-shell takes the place of cudaenv's at the next prompt.
    # What cudaenv exported itself (the value of CUDAENV_CCBIN) is not the user's.
    key="${key}${CC-}|${CXX-}|${NVCC_PREPEND_FLAGS-}|${NVCC_APPEND_FLAGS-}|"
    case "${CUDAHOSTCXX-}|${NVCC_CCBIN-}" in
        "${CUDAENV_CCBIN-}|${CUDAENV_CCBIN-}") ;;
        *) key="${key}${CUDAHOSTCXX-}|${NVCC_CCBIN-}|" ;;
    esac
    _cudaenv_trim "${CUDAENV_VERSION-}"
    if [ -n "$_ce_trimmed" ]; then
        key="${key}env|$CUDAENV_VERSION"
    elif _cudaenv_find_file; then
        _cudaenv_raw_value "$_ce_file" 2>/dev/null
        key="${key}file|$_ce_file|$_ce_raw"
    elif ! _cudaenv_global_file || _cudaenv_exists "$_ce_global"; then
        _cudaenv_raw_value "$_ce_global" 2>/dev/null
        key="${key}global|$_ce_global|$_ce_raw"
    elif [ -n "${CUDAENV_SHARED_ROOTS-}" ] && _cudaenv_shared_key; then
        key="${key}shared|$_ce_raw"
    else
        key="${key}none"
    fi
    key="$key|$_ce_warn"
    # Installs and uninstalls made elsewhere (another terminal, an admin on a
    # shared store) matter to this shell in two cases, each looked at here at
    # a cost that does not grow with the number of stores or toolkits: the
    # applied toolkit was deleted (one `[ -d ]`), so select again rather than
    # keep CUDA_HOME on a removed tree; or the selected release was missing,
    # so look for it again (only while it is missing, and quietly). A newer
    # patch release installed elsewhere applies from the next selection (a new
    # directory, version or shell), as the toolkit in use is still there.
    [ -z "$_CUDAENV_APPLIED" ] || [ -d "${CUDAENV_PATH_ENTRY-}" ] || _CUDAENV_KEY=
    [ -z "${_CUDAENV_MISSING-}" ] || ! _cudaenv_installed_since || _CUDAENV_KEY=
    [ "$key" = "$_CUDAENV_KEY" ] && return "${_CUDAENV_STATUS:-0}"
    _CUDAENV_KEY=$key
    _CUDAENV_MISSING=
    [ -n "$_ce_warn" ] && printf '%s\n' "$_ce_warn" >&2
    # _CUDAENV_STATUS keeps the outcome (0, 1 invalid, 127 not installed) for
    # prompts and scripts that want to show it after the one-time message.
    _CUDAENV_STATUS=0
    case $key in
        *"|none|$_ce_warn")
            _cudaenv_default
            return 0 ;;
    esac
    if ! _cudaenv_select; then
        _CUDAENV_STATUS=1
    else
        _cudaenv_resolve || _CUDAENV_STATUS=$?
        [ "$_CUDAENV_STATUS" != 127 ] || _CUDAENV_MISSING=$_ce_spec
    fi
    if [ "$_CUDAENV_STATUS" != 0 ]; then
        # Never leave the previous project's toolkit exported under a broken selection.
        _cudaenv_say "cudaenv: $_ce_err"
        _cudaenv_restore
        return "$_CUDAENV_STATUS"
    fi
    _cudaenv_hook_apply "$_ce_root"
}

# Has the release the last selection found missing (_CUDAENV_MISSING, a
# validated spec) been installed since? The same lookup as a selection's, in
# every store, with its message dropped: the next selection reports it.
_cudaenv_installed_since() {
    _ce_spec=$_CUDAENV_MISSING
    _cudaenv_resolve 2>/dev/null  # quietly: what it meant was said when it selected
}

# Run from the prompt: keeps the user's $? intact for their prompt.
# Every call of the hook is part of an || list: a script or rc file under
# `set -e` must never exit because a version file ended without a newline or
# the selection is broken (the hook reports that itself).
_cudaenv_prompt() {
    local last=$?
    _cudaenv_hook || :
    return $last
}

# The `cudaenv` command in the shell: `shell` has to change this shell's
# variables, so its output (validated by Python, then quoted) is evaluated
# here; any other command runs as usual, and then the hook looks again
# (`install`, `local`, `global` may have changed what applies). The program
# is named by the path `init` found it at, so a cudaenv installed in a venv
# keeps working in shells where that venv is not active.
cudaenv() {
    local out rc
    if [ "${1-}" = shell ]; then
        shift
        out=$(command @CUDAENV@ sh-shell --shell @SHELL@ "$@") || return
        eval "$out"
        _CUDAENV_KEY=
        _cudaenv_hook || return $?
        return 0
    fi
    rc=0
    command @CUDAENV@ "$@" || rc=$?
    _CUDAENV_KEY=
    _cudaenv_hook || :
    return $rc
}
