# The command shell, after identity.sh: its own stderr carries only bash's job notices ("Killed
# sleep 30" for a job the reaper cleared), which no command should see; commands have theirs
# merged into stdout by the shell's framing. Then it says its pid, for the reaper.
exec 2>/dev/null
printf '\036PID:%d\036\n' $$
