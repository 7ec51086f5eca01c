# The terminal's shell, after identity.sh. It waits for one line before it announces its pid, so
# nothing it prints can be lost in the HTTP client's buffer while the daemon hijacks the
# connection; then it becomes an interactive bash.
stty -echo
read -r _
stty echo
printf '\036PID:%d\036\n' $$
exec bash -i
