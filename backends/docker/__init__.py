"""The `docker` backend: one container per session, as fast to use as a local shell.

The container runs `sleep infinity` under docker-init as root with CAP_KILL as its only
capability; commands run as an unprivileged user (uid 1000) with no capability at all,
no-new-privileges, memory (no swap), CPU (every host core but one by default), pids and disk
limits, no network unless asked for, no docker.sock, and published ports on 127.0.0.1 only. It
carries RepoSim's labels (backends/docker_engine.py) so `reposim gc` can find it if this process
dies. The caller gives a typed `DockerOptions`; the backend reads no configuration itself.

Modules, one concern each:
- options: `DockerOptions` and its checks;
- container: the container's configuration, the workspace archive, removal at exit;
- stream: attached execs and Docker's stream multiplexing;
- programs: what runs inside the container, kept as package data (the .sh files here);
- reaper (+ reaper.sh): the root process that signals, clears and reports OOM kills;
- channel (+ identity.sh, shell_start.sh): the command shell's channel, for
  `backends.shell.PersistentShell`;
- pty (+ pty_start.sh): the terminal pane's interactive shell;
- files (+ file_service.py shipped into the container, file_functions.sh as a fallback):
  file operations confined to the workspace;
- backend: `DockerBackend`, which puts them together.
"""

from __future__ import annotations

from backends.docker.backend import DockerBackend
from backends.docker.options import DEFAULT_IMAGE, DockerLimits, DockerOptions
from backends.docker.pty import DockerPty

__all__ = ["DEFAULT_IMAGE", "DockerBackend", "DockerLimits", "DockerOptions", "DockerPty"]
