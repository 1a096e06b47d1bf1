# The shim's own rare path (after select-rare.sh in the file a shim sources).

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
                exec "$_ce_next" "$@"
            fi
        done
        IFS=$_ce_saved_ifs
        set +f
    fi
    _cudaenv_origin
    printf "cudaenv: '%s' is not in the selected toolkit %s (%s)\n" "$_ce_name" "$_ce_root" "$_ce_origin" >&2
    # pyenv's hint: which installed toolkits do have it (full-release aliases
    # and system, as cudaenv.inventory lists them).
    _cudaenv_root
    _ce_have=
    for _ce_alias in "$_ce_r"/aliases/*.*.* "$_ce_r"/aliases/system; do
        [ -f "$_ce_alias" ] || continue
        { IFS= read -r _ce_ar && IFS= read -r _ce_rel; } <"$_ce_alias" || continue
        case ", $_ce_have, " in *", $_ce_rel, "*) continue ;; esac
        [ -f "$_ce_ar/bin/$_ce_name" ] && [ -x "$_ce_ar/bin/$_ce_name" ] && _ce_have=${_ce_have:+$_ce_have, }$_ce_rel
    done
    [ -z "$_ce_have" ] || printf '%s\n' @EXISTS_IN{name=$_ce_name,releases=$_ce_have}@ >&2
    exit 127
}
