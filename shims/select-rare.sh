# The rarely taken paths of cudaenv's shell selection (see select.sh): every
# error and its message, .tool-versions, version files in sticky directories or
# with NUL bytes, `system`, and an alias table that is stale for a hand edit
# or a shared store. The hooks inline this file after select.sh; a shim
# sources it, as `cudaenv rehash` wrote it next to the shims, only when one of
# these paths is taken. Same rules and same safety as select.sh.

# The first part, the only one a shim under shared stores loads on its
# common path (_cudaenv_rare_shared in shim.sh): the shared stores' checks.

# Printable ASCII: values holding anything else are not echoed back verbatim,
# so a crafted file cannot put escape sequences on the user's terminal.
_ce_printable=' !"#$%&'\''()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~'

# CUDAENV_SHARED_ROOTS is set (_cudaenv_shared, select.sh): checks each entry
# (absolute, printable ASCII) and whether the alias table is stale: built for
# another list (aliases/.shared-roots records it) or older than a shared
# store's versions/ (an admin added or removed a toolkit). A few `test`
# builtins per store, no process: a shim under shared stores costs the same as
# one without (the target of docs/performance.md).
_cudaenv_shared_stale() {
    local entry marker= noglob= IFS
    # The setting is checked and normalized once per value: a prompt hook
    # does that once per shell (and looks at the stores only when it selects,
    # not at a prompt where nothing changed). The checks (~30 µs a pattern in bash)
    # look at the whole value: an entry is relative where the value or a
    # field starts with anything but "/", and a byte that is not printable
    # ASCII is in some entry. select-rare.sh names the first bad entry.
    # (`case` rather than `[`: syntax, not a command, so cheaper in bash.)
    case $CUDAENV_SHARED_ROOTS in
        "${_ce_shared_checked-}") ;;
        *)
            case $CUDAENV_SHARED_ROOTS in
                [!/:]* | *:[!/:]* | *[!"$_ce_printable"]*)
                    _cudaenv_rare
                    _cudaenv_shared_bad
                    return 1 ;;
            esac
            # Globbing is turned off around the splitting only where a path holds
            # a pattern character: `set -f` and its undoing cost more than the
            # tests themselves in bash.
            _ce_shared_glob=
            case $CUDAENV_SHARED_ROOTS in *[*?[]*) _ce_shared_glob=1 ;; esac
            [ -z "$_ce_shared_glob" ] || { case $- in *f*) noglob=1 ;; esac; set -f; }
            IFS=:
            _ce_shared_list=
            for entry in $CUDAENV_SHARED_ROOTS; do
                [ -z "$entry" ] && continue
                while :; do case $entry in ?*/) entry=${entry%/} ;; *) break ;; esac; done
                _ce_shared_list=${_ce_shared_list:+$_ce_shared_list:}$entry
            done
            [ -z "$_ce_shared_glob" ] || [ -n "$noglob" ] || set +f
            _ce_shared_checked=$CUDAENV_SHARED_ROOTS ;;
    esac
    _ce_shared=$_ce_shared_list
    case $_ce_shared_glob in 1) case $- in *f*) noglob=1 ;; esac; set -f ;; esac
    IFS=:
    for entry in $_ce_shared; do
        [ "$entry/versions" -nt "$_ce_r/aliases" ] && _ce_stale=1
    done
    case $_ce_shared_glob$noglob in 1) set +f ;; esac
    [ -f "$_ce_r/aliases/.shared-roots" ] && IFS= read -r marker <"$_ce_r/aliases/.shared-roots"
    case $marker in "$_ce_shared") ;; *) _ce_stale=1 ;; esac
    return 0
}

# A shim that loaded only the part above for its shared stores stops here.
case ${_ce_rare_part-} in 1) return 0 ;; esac

_ce_allowed=@ALLOWED@

# $1 fit for a terminal, into _ce_clean: each byte that is not printable ASCII
# (a terminal escape such as OSC 52 or CSI, a newline in a directory name)
# becomes '?'. Every message the shims and hooks print passes here, through
# _cudaenv_say or _cudaenv_warn: paths come from directory names anyone can
# choose. Builtins only; only error and warning paths get here.
_cudaenv_clean() {
    local LC_ALL=C s rest c
    _ce_clean=$1
    case $1 in *[!"$_ce_printable"]*) ;; *) return 0 ;; esac
    _ce_clean=
    s=$1
    while [ -n "$s" ]; do
        rest=${s#?}
        c=${s%"$rest"}
        s=$rest
        case $c in [!"$_ce_printable"]) c='?' ;; esac
        _ce_clean=$_ce_clean$c
    done
}

# Message $1 on stderr, one line, made fit for a terminal (_cudaenv_clean).
_cudaenv_say() {
    _cudaenv_clean "$1"
    printf '%s\n' "$_ce_clean" >&2
}

# The errors of select.sh's common functions, here so a shim does not parse them.
_cudaenv_root_not_absolute() {
    _cudaenv_describe "$CUDAENV_ROOT"
    _ce_err=@ROOT_NOT_ABSOLUTE{shown=$_ce_shown}@
    return 1
}
_cudaenv_version_file_not_absolute() {
    _cudaenv_describe "$CUDAENV_VERSION_FILE"
    _ce_err=@VERSION_FILE_NOT_ABSOLUTE{shown=$_ce_shown}@
    return 1
}
_cudaenv_env_invalid() {
    _cudaenv_describe "$_ce_trimmed"
    _cudaenv_invalid @ENV_INVALID{shown=$_ce_shown}@
}

# A grammar error: what is wrong, and what would be right.
_cudaenv_invalid() {
    _ce_err="$1; allowed are $_ce_allowed"
}

# A bounded, printable rendering of an untrusted value (like versions.describe).
_cudaenv_describe() {
    case $1 in
        *[!"$_ce_printable"]*) _ce_shown=@UNPRINTABLE@ ;;
        *)
            if [ ${#1} -gt 40 ]; then
                _ce_shown=$1
                while [ ${#_ce_shown} -gt 40 ]; do _ce_shown=${_ce_shown%?}; done
                _ce_shown="'$_ce_shown...'"
            else
                _ce_shown="'$1'"
            fi
            ;;
    esac
}

# The origin of the selection, into _ce_origin: "set by ..." for messages.
_cudaenv_origin() {
    case $_ce_source in
        CUDAENV_VERSION) _ce_origin=@ORIGIN_ENV@ ;;
        default) _ce_origin=@ORIGIN_DEFAULT@ ;;
        "${_ce_shared_default-}") _ce_origin=@SHARED_ORIGIN{source=$_ce_source}@ ;;
        *) _ce_origin=@ORIGIN_FILE{source=$_ce_source}@ ;;
    esac
}

# No version file of the user's own selects (_cudaenv_select): the admin's
# default, the `version` file of the first shared store that has one (as
# `cudaenv global` wrote it there), before `system`; as
# cudaenv/selecting/shared_roots.py global_version_file. Builtins only.
_cudaenv_select_shared() {
    local entry noglob= IFS
    _ce_shared_default=
    _cudaenv_shared || return 1
    case $- in *f*) noglob=1 ;; esac
    set -f
    IFS=:
    for entry in $_ce_shared; do
        [ "$entry" != "$_ce_r" ] && _cudaenv_exists "$entry/version" || continue
        _cudaenv_untrusted_shared "$entry" && continue  # another user's default is not obeyed
        _ce_shared_default=$entry/version
        break
    done
    [ -n "$noglob" ] || set +f
    if [ -n "$_ce_shared_default" ]; then
        _ce_source=$_ce_shared_default
        # A store that passed _cudaenv_untrusted_shared: nobody but root and us may swap its files.
        _ce_noguard=1
        _cudaenv_read_version "$_ce_source"
        set -- "$?"
        _ce_noguard=
        return $1
    fi
    _ce_source=default
    _ce_spec=system
}

# Version files are at most @MAX_BYTES@ bytes in at most @MAX_LINES@ lines (the
# whole file, as cudaenv/selecting/versionfile.py reads it): reading stops as soon as
# either is passed, so no file costs more than that to look at.
_cudaenv_too_large() {
    _ce_err=@TOO_LARGE{path=$1}@
}

# Measure version file $1 without reading it (see _cudaenv_size_known): `stat
# -c %s` takes its size from stat(2), without opening it (an open of a FIFO
# swapped in since would wait), found on the standard PATH (`command -p`),
# never on the caller's. Status 1 past the bound. Within it, a stamp
# spares the next runs this process; it is written after the measure, in
# directories of our own made private (umask 077), dated as the file (`touch
# -r`), for our own files only. A size that cannot be measured is status 0:
# the readers still count every byte. The stamp goes at _ce_stamp, the path
# _cudaenv_size_known derived (empty: the file gets none).
_cudaenv_size_check() {
    local size dir="$_ce_r/@SIZE_STAMPS@"
    size=$(command -p stat -L -c %s -- "$1" 2>/dev/null) || return 0
    _cudaenv_trim "$size"
    case $_ce_trimmed in '' | *[!0123456789]*) return 0 ;; esac
    [ ${#_ce_trimmed} -gt 15 ] || [ "$_ce_trimmed" -gt @MAX_BYTES@ ] && return 1
    [ -n "$_ce_stamp" ] && [ -O "$1" ] || return 0
    # Nothing is made or written in a stamps directory that is not ours.
    { [ ! -e "$dir" ] && [ ! -h "$dir" ]; } || { [ -O "$dir" ] && [ ! -h "$dir" ]; } || return 0
    if [ ! -d "${_ce_stamp%/*}" ]; then
        (umask 077 && command -p mkdir -p -- "${_ce_stamp%/*}") 2>/dev/null || return 0
    fi
    [ -O "$dir" ] && [ -O "${_ce_stamp%/*}" ] || return 0
    command -p touch -r "$1" -- "$_ce_stamp" 2>/dev/null || :
    return 0
}

# Read the version file $1 (already opened on fd 9 by the caller), all of it up
# to the bound. Sets _ce_spec and _ce_line, or _ce_err and returns 1. Lines up
# to the value are checked; what follows only counts towards the size.
# With $2 = tool, $1 is a .tool-versions: only its `cuda <version>` line counts,
# and a file without one returns 2 (the walk up goes on, as asdf's does).
# With $3 = careful, each line's length comes from the file offset (slower, one
# more read per line): used only when the fast pass found bytes that `read`
# dropped, to tell which line holds the NUL.
_cudaenv_scan_fd9() {
    local LC_ALL=C  # bash/zsh: ${#x} counts bytes, not characters
    local line value rest nl len count=0 lineno=0 err= spec= at= quick=
    # Lengths from `read` are exact where NUL bytes are not dropped (zsh), or
    # checked against the offset at the end (the fast pass of dash and bash).
    [ "${3-}" != careful ] && [ -z "${_ce_nul-}" ] && quick=1
    while :; do
        nl=1
        _cudaenv_line9 $((@MAX_BYTES@ + 1 - count)) || nl=0
        line=$_ce_l
        if [ "${3-}" = careful ]; then
            _cudaenv_fd9_pos || { _ce_err="$1: cannot check the version file (needs /proc/self/fdinfo)"; return 1; }
            # At the end of the file, a last line of only NUL bytes reads as empty.
            [ $nl = 0 ] && [ -z "$line" ] && [ "$_ce_pos" = "$count" ] && break
            len=$((_ce_pos - count - nl))
            count=$_ce_pos
        else
            [ $nl = 0 ] && [ -z "$line" ] && break
            len=${#line}
            count=$((count + len + nl))
        fi
        lineno=$((lineno + 1))
        if [ $count -gt @MAX_BYTES@ ] || [ $lineno -gt @MAX_LINES@ ]; then
            _cudaenv_too_large "$1"
            return 1
        fi
        # A UTF-8 byte order mark (Windows editors write one) starts no value.
        [ $lineno = 1 ] && _cudaenv_strip_bom "$line" && line=$_ce_nobom len=$((len - 3))
        # Decided already: the rest only counts towards the size.
        [ -n "$err$spec" ] && { [ $nl = 1 ] && continue || break; }
        # A whole-line comment within the length limit needs nothing more in
        # the fast pass (the common line before the value): a NUL byte dropped
        # from it shows in the offset check after the loop.
        case $line in
            '#'*) [ -n "$quick" ] && [ $len -le @MAX_LINE@ ] && { [ $nl = 1 ] && continue || break; } ;;
        esac
        rest=${line%"$_ce_cr"}
        [ "$rest" != "$line" ] && len=$((len - 1))
        if [ $len -gt @MAX_LINE@ ]; then
            _cudaenv_invalid "$1:$lineno: "@LINE_TOO_LONG@
            err=$_ce_err
        # A byte went missing (dash, bash), or zsh kept the NUL in the value.
        elif [ ${#rest} -ne $len ] || { [ -n "${_ce_nul-}" ] && _cudaenv_has_nul "$line"; }; then
            _cudaenv_invalid "$1:$lineno: "@NUL_BYTE@
            err=$_ce_err
        else
            value=${rest%%#*}
            _cudaenv_trim "$value"
            value=$_ce_trimmed
            if [ "${2-}" = tool ]; then
                case $value in
                    cuda)
                        _cudaenv_invalid "$1:$lineno: "@NO_CUDA_VERSION@
                        err=$_ce_err
                        value= ;;
                    cuda[" $_ce_tab"]*)
                        _cudaenv_trim "${value#cuda}"
                        value=${_ce_trimmed%%[" $_ce_tab"]*} ;;
                    *) value= ;;
                esac
            fi
            if [ -z "$value" ]; then
                :
            elif ! _cudaenv_valid_spec "$value"; then
                _cudaenv_describe "$value"
                _cudaenv_invalid "$1:$lineno: "@INVALID_VERSION{shown=$_ce_shown}@
                err=$_ce_err
            else
                spec=$value
                at=$lineno
            fi
        fi
        [ $nl = 1 ] || break
    done
    # dash and bash drop NUL bytes: if the offset is past the bytes counted,
    # read again, carefully, to find the line that holds one (zsh keeps them).
    if [ "${3-}" != careful ] && [ -z "${_ce_nul-}" ]; then
        _cudaenv_fd9_pos || { _ce_err="$1: cannot check the version file (needs /proc/self/fdinfo)"; return 1; }
        if [ "$_ce_pos" != "$count" ]; then
            _cudaenv_scan_fd9 "$1" "${2-}" careful 2>/dev/null 9<"$1"
            return
        fi
    fi
    if [ -n "$err" ]; then
        _ce_err=$err
        return 1
    fi
    if [ -n "$spec" ]; then
        _ce_spec=$spec
        _ce_line=$at
        return 0
    fi
    if [ "${2-}" = tool ]; then
        _cudaenv_invalid "$1: "@NO_CUDA_LINE@
        return 2
    fi
    _cudaenv_invalid "$1: "@NO_VERSION@
    return 1
}

# $1 without a leading UTF-8 byte order mark, into _ce_nobom; status 1 when it has
# none. The mark's bytes are made only for a line that starts with a byte
# outside printable ASCII (one process, once per shell): the templates hold no
# byte outside ASCII, as shells and locales may mangle one.
_cudaenv_strip_bom() {
    case $1 in
        [!"$_ce_printable$_ce_tab"]*) ;;
        *) return 1 ;;
    esac
    [ -n "${_ce_bom-}" ] || _ce_bom=$(printf '\357\273\277')
    case $1 in
        "$_ce_bom"*) _ce_nobom=${1#"$_ce_bom"} ;;
        *) return 1 ;;
    esac
}

# zsh keeps NUL bytes in variables; the zsh hook sets _ce_nul to one.
_cudaenv_has_nul() {
    case $1 in *"$_ce_nul"*) return 0 ;; esac
    return 1
}

# A version file must be a regular file: say what $1 is instead. Tested before
# opening it, so a FIFO is never opened (that would wait for a writer).
_cudaenv_not_regular() {
    local what=@KIND_OTHER@
    if [ -h "$1" ] && [ ! -e "$1" ]; then
        what=@KIND_DANGLING@
    elif [ -d "$1" ]; then
        what=@KIND_DIRECTORY@
    elif [ -p "$1" ]; then
        what=@KIND_FIFO@
    elif [ -c "$1" ] || [ -b "$1" ]; then
        what=@KIND_DEVICE@
    elif [ -S "$1" ]; then
        what=@KIND_SOCKET@
    fi
    _ce_err=@NOT_REGULAR{path=$1,what=$what}@
}

# The whole reading of version file $1, for every case _cudaenv_read_version
# (select.sh) does not settle in its quick pass.
_cudaenv_read_slow() {
    if [ ! -f "$1" ]; then
        _cudaenv_not_regular "$1"
        return 1
    fi
    if [ ! -r "$1" ]; then
        local reason="Permission denied"
        _ce_err=@UNREADABLE{path=$1,reason=$reason}@
        return 1
    fi
    [ -O "${1%/*}" ] || [ -n "${_ce_noguard-}" ] || _cudaenv_guard "$1"
    case $1 in
        */.tool-versions) _cudaenv_scan_fd9 "$1" tool 2>/dev/null 9<"$1" ;;
        *) _cudaenv_scan_fd9 "$1" 2>/dev/null 9<"$1" ;;
    esac
}

# Is version file $2 in directory $1 one to ignore: another user's (not root's)
# in a world-writable sticky directory such as /tmp, where anyone can put one?
# Warns (see below). Called only for a sticky directory (the caller's -k test);
# a file that is not plainly ours costs one `stat` process, as no shell
# builtin tells a file's owner.
_cudaenv_foreign() {
    local dir file out
    dir=${1:-/}
    file=$2
    [ -k "$dir" ] || return 1
    [ -O "$file" ] && [ ! -h "$file" ] && return 1
    # The owner of /proc/self is our effective user.
    out=$(command -p stat -c '%a %u' -- "$dir" "$file" /proc/self 2>/dev/null) || return 1
    set -- $out
    [ $# = 6 ] || return 1
    case $1 in *[2367]) ;; *) return 1 ;; esac  # the "others" digit has the write bit
    [ "$4" = 0 ] || [ "$4" = "$6" ] && return 1
    _cudaenv_warn @FOREIGN{path=$file,uid=$4,directory=$dir}@
    return 0
}

# Warning $1: a shim says it at once; the prompt hook collects it, to say it
# once and not at every prompt.
_cudaenv_warn() {
    if [ -n "${_ce_collect_warn-}" ]; then
        _cudaenv_clean "$1"
        _ce_warn="${_ce_warn:+$_ce_warn
}$_ce_clean"
    else
        _cudaenv_say "$1"
    fi
}

# Is shared store $1 one to skip: does it, or a directory above it, belong to
# a user who is neither root nor us, or may others write it (a sticky
# directory above it, such as /tmp, is fine)? The rule of cudaenv/foundation/ownership.py,
# worded the same; warns on stderr. A missing store is not skipped:
# it offers nothing. One `stat` process, on the stale-table path only.
_cudaenv_untrusted_shared() {
    local store dir out me= mygid myname uid gid user group mode name why= target=1
    store=$1
    dir=$(command cd -P -- "$store" 2>/dev/null && pwd -P) || return 1  # `command`: not the hook's own cd wrapper, which would run the hook again
    set -- "$dir"
    while [ "$dir" != / ]; do
        dir=${dir%/*}
        dir=${dir:-/}
        set -- "$@" "$dir"
    done
    # The owner of /proc/self is our effective user.
    out=$(command -p stat -c '%u %g %U %G %a %n' -- /proc/self "$@" 2>/dev/null) || return 1
    while IFS=' ' read -r uid gid user group mode name; do
        if [ -z "$me" ]; then
            me=$uid mygid=$gid myname=$user
            continue
        fi
        if [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
            why="$name belongs to uid $uid"
            break
        fi
        # The group or the "others" digit has the write bit; a sticky directory above passes.
        case $mode in *[2367] | *[2367]?) ;; *) target=; continue ;; esac
        # Group write only, by the user's private group (primary, named after them): nobody else's.
        case $mode in *[2367]) ;; *) [ "$gid" = "$mygid" ] && [ "$group" = "$myname" ] && { target=; continue; } ;; esac
        case $target:$mode in :[1357]???) target=; continue ;; esac
        case $mode in ?) mode=000$mode ;; ??) mode=00$mode ;; ???) mode=0$mode ;; esac
        why="$name is writable by others (mode $mode)"
        break
    done <<EOF
$out
EOF
    [ -n "$why" ] || return 1
    # Said at once, and once per store in a shell whose prompt hook selects again and again.
    case ":${_ce_untrusted_said-}:" in
        *":$store:"*) ;;
        *)
            _cudaenv_say @SHARED_UNTRUSTED{root=$store,why=$why}@
            _ce_untrusted_said=${_ce_untrusted_said:+$_ce_untrusted_said:}$store ;;
    esac
    return 0
}

# The version file in directory $1 (which holds a .cuda-version or a
# .tool-versions) into _ce_file, status 0; status 1 when there is none to use
# here and the walk up goes on: a .tool-versions without a cuda line, or only
# files another user planted in a sticky directory.
_cudaenv_find_in() {
    local f
    # Only a sticky directory (-k) can hold a file to ignore.
    f=$1/.cuda-version
    if [ -e "$f" -o -h "$f" ] && { [ ! -k "${1:-/}" ] || ! _cudaenv_foreign "$1" "$f"; }; then
        _ce_file=$f
        return 0
    fi
    f=$1/.tool-versions
    if [ -e "$f" -o -h "$f" ] && { [ ! -k "${1:-/}" ] || ! _cudaenv_foreign "$1" "$f"; }; then
        _cudaenv_read_version "$f"
        if [ $? != 2 ]; then
            _ce_file=$f
            return 0
        fi
    fi
    return 1
}

# `system`: the toolkit the user's shell has right now, into _ce_root: conda,
# then the first toolkit bin/ on PATH. Status 1 when there is none (the alias
# table's `system` entry comes next).
_cudaenv_system_root() {
    local entry dir added IFS=: noglob
    added=${CUDAENV_PATH_ENTRY:-$_ce_r}
    if [ -n "${CONDA_PREFIX-}" ] && [ -x "$CONDA_PREFIX/bin/nvcc" ]; then
        _ce_root=$CONDA_PREFIX
        return 0
    fi
    _cudaenv_list_without "${PATH-}" ""
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set -f
    for entry in $_ce_list; do
        while :; do case $entry in ?*/) entry=${entry%/} ;; *) break ;; esac; done
        # A relative entry names another directory in every cwd (a cloned
        # repository's bin/ among them): never a toolkit root, as in discover.py.
        case $entry in
            '' | [!/]* | "$_ce_r" | "$_ce_r"/* | "$added") continue ;;
        esac
        # A toolkit's bin/, not a wrapper such as /usr/local/bin/nvcc:
        # its parent must hold the runtime headers (as discover.py checks).
        if [ -f "$entry/nvcc" ] && [ -x "$entry/nvcc" ] && [ -f "$entry/../include/cuda_runtime.h" ]; then
            case $entry in
                */*) dir=${entry%/*} ;;
                *) dir=. ;;
            esac
            _ce_root=${dir:-/}
            break
        fi
    done
    [ -n "$noglob" ] || set +f
    [ -n "$_ce_root" ]
}

# No toolkit for _ce_spec: the error, status 127 (as cudaenv.selecting.selection.locate).
_cudaenv_not_installed() {
    _cudaenv_origin
    if [ "$_ce_spec" = system ]; then
        _ce_err=@NO_SYSTEM{origin=$_ce_origin}@
    else
        _ce_err=@NOT_INSTALLED{spec=$_ce_spec,origin=$_ce_origin}@
    fi
    return 127
}

# The newest managed toolkit in versions/ that _ce_spec matches, into
# _ce_root, ranked as cudaenv.selecting.aliases.build ranks them; status 1 when none
# does. Only X.Y.Z directory names without leading zeros count, as in
# store.managed_toolkits.
_cudaenv_scan_versions() {
    local d rel rest maj min pat bmaj=-1 bmin=-1 bpat=-1 best= noglob
    [ "$_ce_spec" = system ] && return 1
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set +f
    for d in "$_ce_r"/versions/*; do
        rel=${d##*/}
        case $rel in
            *[!0-9.]* | .* | *. | *..* | 0[0-9]* | *.0[0-9]*) continue ;;
        esac
        maj=${rel%%.*}
        rest=${rel#*.}
        case $rest in "$rel" | *.*.*) continue ;; *.*) ;; *) continue ;; esac
        min=${rest%%.*}
        pat=${rest#*.}
        case $_ce_spec in "$rel" | "$maj.$min" | "$maj") ;; *) continue ;; esac
        [ -d "$d/bin" ] || continue
        if [ "$maj" -gt "$bmaj" ] || { [ "$maj" -eq "$bmaj" ] && { [ "$min" -gt "$bmin" ] ||
            { [ "$min" -eq "$bmin" ] && [ "$pat" -gt "$bpat" ]; }; }; }; then
            best=$d bmaj=$maj bmin=$min bpat=$pat
        fi
    done
    [ -z "$noglob" ] || set -f
    [ -n "$best" ] || return 1
    _ce_root=$best
}

# CUDAENV_SHARED_ROOTS holds a bad entry (_cudaenv_shared found one): the
# error names the first.
_cudaenv_shared_bad() {
    local entry noglob IFS=:
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set -f
    for entry in $CUDAENV_SHARED_ROOTS; do
        case $entry in
            '') ;;
            [!/]* | *[!"$_ce_printable"]*) break ;;
        esac
    done
    [ -n "$noglob" ] || set +f
    _cudaenv_describe "$entry"
    _ce_err=@SHARED_NOT_ABSOLUTE{shown=$_ce_shown}@
}

# Alias file $1 into _ce_root and _ce_aorigin (its third line); status 1 when
# it is missing or names no toolkit.
_cudaenv_alias_entry() {
    _ce_root=
    _ce_aorigin=
    [ -f "$1" ] || return 1
    { IFS= read -r _ce_root && IFS= read -r _ce_aorigin && IFS= read -r _ce_aorigin; } <"$1" || return 1
    [ -n "$_ce_root" ] && [ -d "$_ce_root/bin" ]
}

# The user's table is stale for a shared store: look _ce_spec up store by
# store, in the order the table is built: the user's own install, then each
# shared store's own table (its managed toolkits only: what its owner found
# elsewhere on their machine is not this one's), then what discovery found
# here. Only after an admin's change, until the user's next rehash.
_cudaenv_resolve_stale() {
    local entry found= noglob IFS
    _cudaenv_alias_entry "$_ce_r/aliases/$_ce_spec" && [ "$_ce_aorigin" = cudaenv ] && return 0
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set -f
    IFS=:
    for entry in $_ce_shared; do
        _cudaenv_untrusted_shared "$entry" && continue
        _cudaenv_alias_entry "$entry/aliases/$_ce_spec" && [ "$_ce_aorigin" = cudaenv ] && { found=1; break; }
    done
    [ -n "$noglob" ] || set +f
    [ -n "$found" ] && return 0
    if _cudaenv_alias_entry "$_ce_r/aliases/$_ce_spec"; then
        case $_ce_aorigin in
            cudaenv | "shared: "*) ;;
            *) return 0 ;;
        esac
    fi
    _ce_root=
    return 1
}

# The host compiler cudaenv applied before (CUDAENV_CCBIN) is nobody's choice: drop it.
_cudaenv_host_compiler_drop() {
    [ -n "${CUDAENV_CCBIN-}" ] || return 0
    [ "${NVCC_CCBIN-}" != "$CUDAENV_CCBIN" ] || unset NVCC_CCBIN
    [ "${CUDAHOSTCXX-}" != "$CUDAENV_CCBIN" ] || unset CUDAHOSTCXX
    unset CUDAENV_CCBIN
}

# The host compiler `cudaenv rehash` chose for toolkit $1 when its nvcc refuses the
# default one (cudaenv/selecting/hostcc.py): host-compiler/<spec> holds the root and the
# compiler, and exists only then, so the common case costs one `test`. Applied
# as NVCC_CCBIN and CUDAHOSTCXX unless the user named a compiler (CC, CXX,
# CUDAHOSTCXX, NVCC_CCBIN, -ccbin in NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS), as
# activation.user_compiler decides.
_cudaenv_host_compiler() {
    local root= cc=
    _cudaenv_host_compiler_drop
    [ -f "$_ce_r/host-compiler/$_ce_spec" ] || return 0
    { IFS= read -r root && IFS= read -r cc; } <"$_ce_r/host-compiler/$_ce_spec" || return 0
    [ "x$root" = "x$1" ] && [ -n "$cc" ] || return 0
    [ -z "${CC-}${CXX-}${CUDAHOSTCXX-}${NVCC_CCBIN-}" ] || return 0
    case " ${NVCC_PREPEND_FLAGS-} ${NVCC_APPEND_FLAGS-}" in
        *[" $_ce_tab"]-ccbin* | *[" $_ce_tab"]--compiler-bindir*) return 0 ;;
    esac
    export NVCC_CCBIN="$cc" CUDAHOSTCXX="$cc" CUDAENV_CCBIN="$cc"
}
