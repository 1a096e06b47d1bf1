# bash completion for cudaenv. Source it, or install it as
# /usr/share/bash-completion/completions/cudaenv. Versions come from the alias
# table ($CUDAENV_ROOT/aliases), listed with a glob: no Python per <Tab>.
_cudaenv_versions() {
    local root=${CUDAENV_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/cudaenv} f
    for f in "$root"/aliases/*; do
        [ -f "$f" ] && printf '%s\n' "${f##*/}"
    done
}

_cudaenv() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local commands="version root versions local global shell prefix which exec env install uninstall cache resolve doctor rehash init"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    case ${COMP_WORDS[1]} in
        local | global | prefix | uninstall | install | resolve)
            COMPREPLY=($(compgen -W "$(_cudaenv_versions)" -- "$cur")) ;;
        shell) COMPREPLY=($(compgen -W "$(_cudaenv_versions) --unset" -- "$cur")) ;;
        init) COMPREPLY=($(compgen -W "- bash zsh fish" -- "$cur")) ;;
        which) COMPREPLY=($(compgen -W "nvcc ptxas nvlink fatbinary cuobjdump nvdisasm cu++filt" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "--help --json" -- "$cur")) ;;
    esac
}
complete -F _cudaenv cudaenv
