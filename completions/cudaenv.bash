# bash completion for cudaenv. `cudaenv init - bash` loads it; or install it as
# /usr/share/bash-completion/completions/cudaenv. Versions and program names
# come from globs over the store ($CUDAENV_ROOT/aliases, $CUDAENV_ROOT/shims):
# no Python per <Tab>. Options come from `cudaenv completions CMD`, asked only
# when the word being completed starts with "-".
_cudaenv_comp_root() {
    printf '%s\n' "${CUDAENV_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/cudaenv}"
}

# The names in one directory of the store: aliases/ holds the versions, and
# shims/ the programs of every installed toolkit.
_cudaenv_comp_names() {
    local root f
    root=$(_cudaenv_comp_root)
    for f in "$root/$1"/*; do
        [ -f "$f" ] && printf '%s\n' "${f##*/}"
    done
}

_cudaenv_comp_versions() { _cudaenv_comp_names aliases; }
_cudaenv_comp_programs() { _cudaenv_comp_names shims; }

# Programs of the toolkit selected here (one fast `cudaenv prefix`).
_cudaenv_comp_selected() {
    local prefix f
    prefix=$(command cudaenv prefix 2>/dev/null) || return 0
    for f in "$prefix"/bin/*; do
        [ -f "$f" ] && [ -x "$f" ] && printf '%s\n' "${f##*/}"
    done
}

_cudaenv() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="version root versions local global shell prefix which exec env install uninstall cache resolve doctor mirror modulefiles export venv config rehash init version-name version-origin version-file whence latest help commands completions"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    case $cur in
        -*)
            COMPREPLY=($(compgen -W "$(command cudaenv completions "${COMP_WORDS[1]}" 2>/dev/null)" -- "$cur"))
            return ;;
    esac
    case ${COMP_WORDS[1]} in
        local | global | prefix | uninstall | install | resolve | latest)
            COMPREPLY=($(compgen -W "$(_cudaenv_comp_versions)" -- "$cur")) ;;
        shell) COMPREPLY=($(compgen -W "$(_cudaenv_comp_versions) -" -- "$cur")) ;;
        env)
            if [ "$prev" = --format ]; then
                COMPREPLY=($(compgen -W "sh systemd dotenv json" -- "$cur"))
            elif [ "$prev" = --shell ]; then
                COMPREPLY=($(compgen -W "bash zsh fish sh" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "$(_cudaenv_comp_versions)" -- "$cur"))
            fi ;;
        init) COMPREPLY=($(compgen -W "- bash zsh fish sh" -- "$cur")) ;;
        which | whence) COMPREPLY=($(compgen -W "$(_cudaenv_comp_programs)" -- "$cur")) ;;
        exec)
            if [ "$COMP_CWORD" -eq 2 ] || { [ "$COMP_CWORD" -eq 3 ] && [ "$prev" = -- ]; }; then
                COMPREPLY=($(compgen -W "$(_cudaenv_comp_selected)" -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi ;;
        help | completions) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
    esac
}
complete -F _cudaenv cudaenv
