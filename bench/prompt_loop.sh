# Sourced by bench/hook.sh and bench/shared_roots.sh: one way to time the bash
# prompt hook. `bash --norc -c "$bash_loop" _ INIT DIR N LABEL` sources the
# rendered hook INIT, cds to DIR, and prints "LABEL <t0> <t1> <t2>" in µs: an
# empty loop of N iterations from t0 to t1, N hook calls from t1 to t2.
bash_loop='
source "$1"; cd "$2"; _cudaenv_prompt; n=$3
t0=$EPOCHREALTIME; for ((i = 0; i < n; i++)); do :; done; t1=$EPOCHREALTIME
for ((i = 0; i < n; i++)); do _cudaenv_prompt; done; t2=$EPOCHREALTIME
echo "$4 ${t0/./} ${t1/./} ${t2/./}"'
