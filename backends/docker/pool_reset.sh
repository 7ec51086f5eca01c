# RepoSim's pooled-container reset, run by backends/docker/pool.py as the session's uid.
#
#   scan WORKSPACE         every path outside the workspace (and /proc, /sys) that this uid owns
#                          or may write, one a line: the only places a session can leave a trace
#                          (once per pool: it is the image's property)
#   look PATH...           those paths, recursively: `kind mode uid gid size ctime path` a line
#                          (a ctime cannot be set back: any write or chmod shows)
#   reset WORKSPACE HOME HOME_MODE
#                          between two users of one container: kill every other process of the
#                          uid (a non-root `kill -1` reaches all of them, the exec-started ones
#                          and whatever they left in the background), wipe the workspace, /tmp,
#                          /var/tmp, /run/lock and /dev/shm, put the home's mode back; then report
#                          `LEFT N` (processes of the uid still alive), `SHM N` (left in /dev/shm)
exec 2>/dev/null
mode=$1
shift
if [[ $mode == scan ]]; then
  find / -xdev \( -path /proc -o -path /sys -o -path "$1" \) -prune \
    -o \( -user "$UID" -o -writable \) -print
  exit 0
fi
if [[ $mode == look ]]; then
  find "$@" -printf '%y %m %U %G %s %C@ %p\n'
  exit 0
fi
workspace=$1 home=$2 home_mode=$3
me=$BASHPID

# Processes of our uid other than this shell, zombies left out (they hold nothing and init reaps
# them). The uid comes from /proc/PID/status: a process that made itself non-dumpable shows root
# as the owner of its /proc directory.
others() {
  local d st k r
  left=0
  for d in /proc/[0-9]*; do
    [[ ${d#/proc/} == "$me" ]] && continue
    read -r st < "$d/stat" || continue
    st=${st##*) }
    [[ ${st:0:1} == Z ]] && continue
    while read -r k r _; do
      [[ $k == Uid: ]] && { [[ $r == "$UID" ]] && ((left++)); break; }
    done < "$d/status"
  done
}

for ((round = 0; round < 200; round++)); do
  # Stop first (a stopped process cannot fork), then kill: a fork bomb cannot outrun it.
  kill -s STOP -1
  kill -s KILL -1
  others
  ((left == 0)) && break
done

wipe() {
  local d
  for d in "$@"; do
    [[ -d $d && ! -L $d ]] || continue
    # Directories the session made unreadable or unwritable to itself, opened again first.
    find "$d" -mindepth 1 -user "$UID" -type d -exec chmod u+rwx {} +
    find "$d" -mindepth 1 -delete
  done
}
wipe "$workspace" /tmp /var/tmp /run/lock /dev/shm
[[ -d $home && -O $home ]] && chmod "$home_mode" "$home"
shm=0
for f in /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?*; do [[ -e $f || -L $f ]] && ((shm++)); done
others
printf 'LEFT %d\nSHM %d\n' "$left" "$shm"
