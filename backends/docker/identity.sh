# USER, LOGNAME and HOME from the image's passwd entry for the session's uid (builtins only);
# when the image has none, ensure_user.sh adds `reposim` with the home the workspace archive
# creates. Sent first to the command shell and to the terminal's shell.
while IFS=: read -r __n _ __u _ _ __h _; do
  [ "$__u" = "$UID" ] && { USER=$__n; HOME=$__h; break; }
done </etc/passwd
export USER="${USER:-reposim}"
export LOGNAME="$USER"
[ -z "$HOME" ] || [ "$HOME" = / ] && export HOME=/home/reposim
unset __n __u __h
