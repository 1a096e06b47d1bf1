# bash completion for cudaenv. `cudaenv init - bash` loads it; or install it as
# /usr/share/bash-completion/completions/cudaenv. Versions and program names
# come from globs over the store ($CUDAENV_ROOT/aliases, $CUDAENV_ROOT/shims):
# no Python per <Tab>. Options come from `cudaenv completions CMD`, asked only
# when the word being completed starts with "-".
#
# A name is data, never code: candidates are matched against the word with a
# plain prefix test in a loop (`compgen -W` would expand $( ), backticks and
# globs in a file name), kept one array element each (spaces and newlines
# included), and offered quoted with printf %q, so the word inserted on the
# command line reads back as exactly that name.
# A root that is not absolute is refused, as the shims and the CLI refuse it: no
# names are offered (and nothing is printed into the command line).
_cudaenv_comp_root() {
    local root=${CUDAENV_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/cudaenv}
    [[ $root == /* ]] || return 1
    printf '%s\n' "$root"
}

# Offer each argument that starts with the word being completed ($cur).
_cudaenv_comp_add() {
    local w q
    for w in "$@"; do
        printf -v q '%q' "$w"
        if [[ $w == "$cur"* || $q == "$cur"* ]]; then
            COMPREPLY+=("$q")
        fi
    done
}

# The names of the files in directory $2 that pass `test $1` (-f, or -x),
# offered; the caller's glob options are kept.
_cudaenv_comp_files_in() {
    local test=$1 dir=$2 f restore
    restore=$(shopt -p nullglob failglob dotglob)
    shopt -s nullglob; shopt -u failglob dotglob
    local -a names=()
    for f in "$dir"/*; do
        if [ -f "$f" ] && { [ "$test" = -f ] || [ -x "$f" ]; }; then
            names+=("${f##*/}")
        fi
    done
    eval "$restore"
    _cudaenv_comp_add "${names[@]}"
}

# aliases/ holds the versions, and shims/ the programs of every installed toolkit.
_cudaenv_comp_versions() {
    local root
    root=$(_cudaenv_comp_root) || return 0
    _cudaenv_comp_files_in -f "$root/aliases"
}
_cudaenv_comp_programs() {
    local root
    root=$(_cudaenv_comp_root) || return 0
    _cudaenv_comp_files_in -x "$root/shims"
}

# Programs of the toolkit selected here (one fast `cudaenv prefix`).
_cudaenv_comp_selected() {
    local prefix
    prefix=$(command cudaenv prefix 2>/dev/null) || return 0
    _cudaenv_comp_files_in -x "$prefix/bin"
}

# The options of one command, one a line from `cudaenv completions`.
_cudaenv_comp_options() {
    local -a opts=()
    local line
    while IFS= read -r line; do
        [[ $line == -* ]] && opts+=("$line")
    done < <(command cudaenv completions "$1" 2>/dev/null)
    _cudaenv_comp_add "${opts[@]}"
}

_cudaenv() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="version root versions local global shell prefix which exec env install uninstall cache resolve doctor mirror modulefiles export venv config rehash init version-name version-origin version-file whence latest help commands completions"
    local IFS=$' \t\n'
    local -a cmds
    read -ra cmds <<<"$commands"
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        _cudaenv_comp_add "${cmds[@]}" --help --version
        return
    fi
    case $cur in
        -*)
            _cudaenv_comp_options "${COMP_WORDS[1]}"
            return ;;
    esac
    case ${COMP_WORDS[1]} in
        local | global | prefix | uninstall | install | resolve | latest) _cudaenv_comp_versions ;;
        shell) _cudaenv_comp_versions; _cudaenv_comp_add - ;;
        env)
            if [ "$prev" = --format ]; then
                _cudaenv_comp_add sh systemd dotenv json
            elif [ "$prev" = --shell ]; then
                _cudaenv_comp_add bash zsh fish sh
            else
                _cudaenv_comp_versions
            fi ;;
        init) _cudaenv_comp_add - bash zsh fish sh ;;
        which | whence) _cudaenv_comp_programs ;;
        exec)
            if [ "$COMP_CWORD" -eq 2 ] || { [ "$COMP_CWORD" -eq 3 ] && [ "$prev" = -- ]; }; then
                _cudaenv_comp_selected
            else
                # The command's own arguments: bash's own file name completion, which
                # quotes what it inserts.
                compopt -o default 2>/dev/null
            fi ;;
        help | completions) _cudaenv_comp_add "${cmds[@]}" ;;
    esac
}
complete -F _cudaenv cudaenv
