# The command shell, after identity.sh: its own stderr carries only bash's job notices ("Killed
# sleep 30" for a job the reaper cleared), which no command should see; commands have theirs
# merged into stdout by the shell's framing. It makes the private directory (container.py's
# PRIVATE_DIR, on the /tmp tmpfs that Docker's archive API cannot reach), then says its pid, for
# the reaper.
exec 2>/dev/null
[ -d /tmp/reposim ] || (umask 077 && mkdir /tmp/reposim)
printf '\036PID:%d\036\n' $$
