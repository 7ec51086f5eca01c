# RepoSim's process reaper, run by backends/docker/reaper.py as
# `bash -c SCRIPT reaper UID [WATCHER]`.
#
# It runs as the container's root with CAP_KILL only, so the session's commands (uid UID, no
# capabilities) can neither kill it nor escape it. Only builtins after start-up: it must keep
# working when the pids limit forbids every fork. Requests, one a line, answered with one line
# starting with the request's ID:
#   ID kill SIG ROOT children   signal the process groups of ROOT's session and descendants
#   ID kill SIG ROOT tree       the same, ROOT included
#   ID oom                      the cgroup's oom_kill counter
#   ID clear                    kill every process of the session's user that no exec started
#   ID guard PID                keep PID (the file service) running: a command's `kill -STOP -1`
#                               reaches it, so it is continued within a fifth of a second
#   - run PID TICKS             (no answer) the command shell PID starts a command (at TICKS,
#                               or `-`: now): until the next `- run`, a clear spares that
#                               command's processes, those whose line of parents up to PID all
#                               started after it did
#   - run -                     (no answer) no command is running
# WATCHER, the source of reaper_watch.py, run beside it when the container has python3: the
# requests then pass through it, and it adds `- look` when there is something to look at (a
# refused fork, the guarded process stopped), so that the reaper can block in `read` while idle;
# without it the reaper looks every fifth of a second itself.
# Between requests it watches the pids cgroup: a session that hit its pids limit (a fork bomb, even
# one left running in the background) is cleared at once, without being asked, and it says so
# with lines of its own: `! clearing`, then `! cleared N`.
#
# A clear it makes of its own accord gives way to a command it has not been told of: the command
# shell names itself `rsm-run` (/proc/PID/comm, which only the shell itself can write) before it
# reads a command and `bash` once it is over. RepoSim's `- run` notice comes on another stream
# than the command, so it can arrive after the command's first processes; a clear that sees the
# name on a shell the notices do not say is running stops before it kills (`! deferred`, once)
# and is made again at the next look, after the notice. The name is read after the processes are
# listed, and written before the command forks: any listed process of a command started since
# the last notice is seen with it.
exec 2>/dev/null
uid=$1
oomfile=
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
  [[ -r $f ]] && { oomfile=$f; break; }
done
# The pids cgroup counts the forks it refused: any new refusal means the session hit its limit.
eventsfile= refused=0
for f in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do
  [[ -r $f ]] && { eventsfile=$f; break; }
done
refusals() {
  local k v n=0
  [[ -n $eventsfile ]] && while read -r k v; do [[ $k == max ]] && n=$v; done < "$eventsfile"
  count=$n
}
refusals; refused=$count
known=
while IFS=: read -r n _ u _; do [[ $u == "$uid" ]] && { known=$n; break; }; done < /etc/passwd
py=$(type -P python3)
watching=
if [[ -n $py && -n $2 ]]; then
  exec {requests}<&0  # read again if the watcher dies
  exec < <(exec "$py" -I -S -c "$2" "$$" "$eventsfile")
  watching=1
fi
read -r up _ < /proc/uptime
printf '\036READY:%s:%s:%s\036\n' "$known" "$py" "$up"

# The running command (see `- run`): its shell's pid and when it started, in clock ticks since
# boot (the unit of a process's start time in /proc/PID/stat). The reaper cannot read a user's
# /proc/PID/environ (that needs CAP_SYS_PTRACE), so a command's processes are told by their
# line of parents: each started after the command did, up to its shell. An earlier command's
# job (a fork bomb's first process is the shell's child) started before. RepoSim sends the
# start time, read before it sent the command, when its clock is this kernel's (the READY
# line's uptime tells it); otherwise this reaper reads it as the request arrives, which is
# late if the reaper was slow to be scheduled.
running= since=0
# When a clear spared the running command's processes, that command's start: once it is over
# (no command runs, or another one does), what it left is cleared too. A fork bomb whose command
# had not yet ended when the clear came kept its lineage through the shell, which grew back
# after it (seen in CI at load 12).
spared=
mark_running() {
  local up _
  running=$1 since=${2:--}
  [[ $running == - ]] && { running=; return; }
  [[ $since =~ ^[0-9]+$ ]] && return
  read -r up _ < /proc/uptime
  up=${up/./}  # hundredths of a second: clock ticks where USER_HZ is 100
  since=$((10#$up - 2))  # a tick of margin each side of the reading
}

# The user's processes that no exec started (an exec's process has no parent in the container):
# what a runaway command left. Root's processes (init, this reaper) are not the user's, nor are
# the running command's.
# `busy` is set when a command shell (an exec's process) runs a command that the notices do not
# say is running: then `found` may hold its processes.
victims() {
  local d p q st f n
  found=() busy=
  unset up_of born; declare -A up_of=() born=()
  local -a mine=() execs=()
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [[ -O $d || $p == 1 ]] && continue
    read -r st < "$d/stat" || continue
    f=(${st##*) })
    # an exec's process (no parent here), or a zombie: dead, nothing to kill or clear
    [[ ${f[1]} == 0 ]] && { execs+=("$p"); continue; }
    [[ ${f[0]} == Z ]] && continue
    up_of[$p]=${f[1]} born[$p]=${f[19]}
    mine+=("$p")
  done
  for p in "${execs[@]}"; do  # after the listing: see the header
    [[ $p == "$running" ]] && continue
    read -r st < "/proc/$p/stat" || continue
    [[ $st == "$p (rsm-run) "* ]] && { busy=1; break; }
  done
  for p in "${mine[@]}"; do
    if [[ -n $running ]]; then
      q=$p n=0
      while [[ -n ${born[$q]} ]] && ((${born[$q]} >= since && n++ < 4096)); do
        [[ ${up_of[$q]} == "$running" ]] && { spared=$since; continue 2; }  # the command's
        q=${up_of[$q]}
      done
    fi
    found+=("$p")
  done
}

# $1: `asked` (a request), `limit` (the pids limit was hit) or `ended` (what a clear spared for a
# command that has ended since). The last two give way to an unannounced command (see the
# header): `deferred` is set, and what was stopped before it was seen is killed.
clear_session() {
  local round killed=0 said= stopped
  deferred=
  [[ $1 == asked ]] && { printf '! clearing\n'; said=1; }
  # Stop first (a stopped process cannot fork), until nothing new appears; then kill them all.
  for ((round = 0; round < 200; round++)); do
    victims
    [[ $1 != asked && -n $busy ]] && { deferred=1; break; }
    ((${#found[@]})) || break
    [[ -n $said ]] || { printf '! clearing\n'; said=1; }
    stopped=("${found[@]}")
    kill -s STOP "${stopped[@]}"
    victims
    if [[ $1 != asked && -n $busy ]]; then  # listed before the command began: not its
      kill -s KILL "${stopped[@]}"
      ((killed += ${#stopped[@]}))
      deferred=1
      break
    fi
    kill -s KILL "${found[@]}"
    ((killed += ${#found[@]}))
  done
  if [[ -z $deferred ]]; then
    refusals; refused=$count
    [[ $1 == limit && -z $said ]] && { printf '! clearing\n'; said=1; }
  fi
  [[ -n $said ]] && printf '! cleared %d\n' "$killed"
}

# An idle look's clear (`pending`: limit or ended), made again at the next look if it gave way.
pending= deferring=
look() {
  clear_session "$pending"
  if [[ -n $deferred ]]; then
    [[ -n $deferring ]] || printf '! deferred\n'
    deferring=1
    return
  fi
  # What this look spared is the command running now, not one a clear spared.
  [[ $pending == ended ]] && spared=
  deferring= pending=
}

guarded=()
# Continue a guarded process that something stopped (state T, or t when traced).
unfreeze() {
  local p st f
  for p in "${guarded[@]}"; do
    read -r st < "/proc/$p/stat" || continue
    f=(${st##*) })
    [[ ${f[0]} == [Tt] ]] && kill -s CONT "$p"
  done
}

at_limit() {
  refusals
  ((count > refused)) || return 1
  refused=$count
}

partial=
# Whether a look is due without the watcher's word: a clear that gave way, or one for what an
# earlier clear spared for a command that has ended since.
due() {
  [[ -n $pending || ( -n $spared && ( -z $running || $since != "$spared" ) ) ]]
}

while :; do
  line=
  if [[ -n $watching ]] && ! due; then
    IFS= read -r line
  else
    IFS= read -r -t 0.2 line
  fi
  status=$?
  if ((status == 0)) && [[ -n $watching && $line == "- "[le]* ]]; then
    [[ $line == "- end" ]] && exit 0  # the backend closed us
    [[ $line == "- look" ]] && line= status=255
  fi
  if ((status > 128)); then  # nothing asked for a while, or the watcher saw something
    partial+=$line
    at_limit && pending=limit
    if [[ -n $spared && ( -z $running || $since != "$spared" ) ]]; then  # the spared one ended
      spared=
      [[ -n $pending ]] || pending=ended
    fi
    [[ -n $pending ]] && look
    ((${#guarded[@]})) && unfreeze
    continue
  fi
  if ((status != 0)) && [[ -n $watching ]]; then  # the watcher died: read the requests again
    exec <&"$requests"
    watching= partial=
    continue
  fi
  ((status == 0)) || exit 0  # end of input: the backend closed us
  line=$partial$line partial=
  # Split into words without a here-string (a pipe and ~8 system calls per line), globbing off.
  set -f; words=($line); set +f
  id=${words[0]-} cmd=${words[1]-} sig=${words[2]-} root=${words[3]-} mode=${words[4]-}
  if [[ $id == - && $cmd == run ]]; then
    mark_running "$sig" "$root"
    continue
  fi
  if [[ $cmd == oom ]]; then
    n=0
    if [[ -n $oomfile ]]; then
      while read -r k v; do [[ $k == oom_kill ]] && n=$v; done < "$oomfile"
    fi
    printf '%s %s\n' "$id" "$n"
    continue
  fi
  ((${#guarded[@]})) && unfreeze
  if [[ $cmd == guard ]]; then
    guarded=($sig)  # one guarded process: the current file service
    printf '%s ok\n' "$id"
    continue
  fi
  if [[ $cmd == clear ]]; then
    clear_session asked
    printf '%s ok\n' "$id"
    continue
  fi
  unset parent group sess; declare -A parent=() group=() sess=()
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    read -r st < "$d/stat" || continue
    f=(${st##*) })
    parent[$p]=${f[1]}; group[$p]=${f[2]}; sess[$p]=${f[3]}
  done
  rootsess=${sess[$root]:-x}; rootgroup=${group[$root]:-x}
  unset doomed; declare -A doomed=()
  # Everything in the shell's session (a job's orphans too), then descendants that left it.
  for p in "${!sess[@]}"; do
    [[ ${sess[$p]} == "$rootsess" && $p != "$root" && $p != $$ ]] && doomed[$p]=1
  done
  frontier=("$root")
  while ((${#frontier[@]})); do
    next=()
    for p in "${!parent[@]}"; do
      for f in "${frontier[@]}"; do
        if [[ ${parent[$p]} == "$f" ]]; then doomed[$p]=1; next+=("$p"); fi
      done
    done
    frontier=("${next[@]}")
  done
  unset groups; declare -A groups=()
  for p in "${!doomed[@]}"; do
    g=${group[$p]}
    [[ $g != "$rootgroup" && $g != 1 ]] && groups[$g]=1
  done
  for g in "${!groups[@]}"; do kill -s "$sig" -- "-$g"; done
  if [[ $sig == 9 || $mode == tree ]]; then
    for p in "${!doomed[@]}"; do kill -s "$sig" "$p"; done
  fi
  [[ $mode == tree ]] && kill -s "$sig" "$root"
  printf '%s ok\n' "$id"
done
