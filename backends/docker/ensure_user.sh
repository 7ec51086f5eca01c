# Give the session's uid ($1) a passwd and group entry when the image has none (git and ssh want
# one), named $2 with home $3. Run as the container's root, which has no capability but owns
# /etc/passwd. Prints the user's name.
entry="^[^:]*:[^:]*:$1:"
grep -q "$entry" /etc/passwd || echo "$2:x:$1:$1:RepoSim:$3:/bin/sh" >> /etc/passwd
grep -q "$entry" /etc/group || echo "$2:x:$1:" >> /etc/group
grep "$entry" /etc/passwd | cut -d: -f1
