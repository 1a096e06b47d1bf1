# bash wiring for the cudaenv hook (after select.sh and hook.sh): the hook runs
# before each prompt through PROMPT_COMMAND, added once.
case ";${PROMPT_COMMAND-};" in
    *";_cudaenv_prompt;"*) ;;
    *) PROMPT_COMMAND="_cudaenv_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}" ;;
esac
# And after every change of directory: `bash -ic 'cd proj && make'` and a
# script's `cd proj && python build.py` never show a prompt, so the build would
# get the toolkit of the directory the shell started in. bash has no chpwd
# (zsh and fish do, see their wiring), so cd, pushd and popd are wrapped; a cd
# of the user's own (rvm's, autoenv's), defined before this, keeps running
# under the name _cudaenv_user_cd. Loading this twice wraps nothing twice.
for _ce_cmd in cd pushd popd; do
    if ! declare -F "_cudaenv_user_$_ce_cmd" >/dev/null; then
        if declare -F "$_ce_cmd" >/dev/null; then
            _ce_def=$(declare -f "$_ce_cmd")
            eval "_cudaenv_user_$_ce_cmd ${_ce_def#"$_ce_cmd "}"
        else
            eval "_cudaenv_user_$_ce_cmd() { builtin $_ce_cmd \"\$@\"; }"
        fi
        eval "$_ce_cmd() { _cudaenv_user_$_ce_cmd \"\$@\" || return; _cudaenv_hook || :; }"
    fi
done
unset _ce_cmd _ce_def
_cudaenv_hook || :
