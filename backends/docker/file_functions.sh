# RepoSim's file operations for images without python3: functions a second persistent shell
# defines once (backends/docker/files.py). Same status codes as file_service.py; slower (a few
# forks per operation, writes arrive base64-encoded). $W is the workspace.
__rs_in() { case "$1" in "$W"|"$W"/*) return 0;; *) return 3;; esac; }
__rs_full() { local r; r=$(realpath -m -- "$1") || return 3; __rs_in "$r" || return 3; R=$r; }
__rs_link() {
  [ "$1" = "$W" ] && { R=$W; return 0; }
  local d; d=$(realpath -m -- "$(dirname -- "$1")") || return 3
  __rs_in "$d" || return 3; R=$d/$(basename -- "$1"); return 0
}
__rs_read() {
  __rs_full "$1" || return; [ -d "$R" ] && return 4; [ -e "$R" ] || return 2
  [ -r "$R" ] || return 7; cat -- "$R"
}
__rs_write() {
  __rs_full "$1" || return; [ -d "$R" ] && return 4
  mkdir -p -- "$(dirname -- "$R")" 2>/dev/null || return 7
  { [ -e "$R" ] && [ ! -w "$R" ]; } && return 7
  base64 -d > "$R" <<< "$2" || return 7
}
__rs_delete() {
  __rs_link "$1" || return; [ "$R" = "$W" ] && return 4
  { [ -e "$R" ] || [ -L "$R" ]; } || return 2; rm -rf -- "$R" || return 7
}
__rs_rename() {
  __rs_link "$1" || return; local s=$R; __rs_link "$2" || return
  { [ -e "$s" ] || [ -L "$s" ]; } || return 2; { [ -e "$R" ] || [ -L "$R" ]; } && return 6
  mkdir -p -- "$(dirname -- "$R")" && mv -T -- "$s" "$R" || return 7
}
__rs_stat() {
  __rs_link "$1" || return; { [ -e "$R" ] || [ -L "$R" ]; } || return 2
  stat -c '%f %s %Y' -- "$R"
}
__rs_list() {
  __rs_full "$1" || return; [ -e "$R" ] || return 2; [ -d "$R" ] || return 5
  find "$R" -mindepth 1 -maxdepth 1 -printf '%Y %s %P\0'
}
