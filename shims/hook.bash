# bash wiring for the cudaenv hook (after select.sh and hook.sh): the hook runs
# before each prompt through PROMPT_COMMAND, added once.
case ";${PROMPT_COMMAND-};" in
    *";_cudaenv_prompt;"*) ;;
    *) PROMPT_COMMAND="_cudaenv_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}" ;;
esac
_cudaenv_hook || :
