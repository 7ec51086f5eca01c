"""The file service that runs *inside* the container (standard library only, any python3).

RepoSim ships this module's source into the container and runs it as the session's user with
`python3 -I -c SOURCE WORKSPACE`: one resident process serving file operations confined to the
workspace, so the editor reads and saves while a long command runs, with no fork per operation.

Protocol, on stdin/stdout: a request is a JSON line `{"op", "size", "path", ["dst"]}` followed
by `size` raw bytes; the answer is a JSON line `{"code", "size"}` followed by `size` raw bytes.
Paths arrive absolute and normalised; symlinks are resolved here, inside the container, and
anything that resolves outside the workspace is refused (code ESCAPE).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from typing import Any, BinaryIO

OK, MISSING, ESCAPE, IS_DIR, NOT_DIR, EXISTS, DENIED, FAILED = 0, 2, 3, 4, 5, 6, 7, 8


class Escape(Exception):
    """A path that resolves outside the workspace."""


CODES: list[tuple[type[BaseException], int]] = [
    (Escape, ESCAPE),
    (FileNotFoundError, MISSING),
    (IsADirectoryError, IS_DIR),
    (NotADirectoryError, NOT_DIR),
    (FileExistsError, EXISTS),
    (PermissionError, DENIED),
]


class FileService:
    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def inside(self, path: str) -> str:
        if path != self.workspace and not path.startswith(self.workspace + "/"):
            raise Escape(path)
        return path

    def resolved(self, path: str) -> str:
        """The path with every symlink resolved, refused if that leaves the workspace."""
        return self.inside(os.path.realpath(path))

    def entry(self, path: str) -> str:
        """The path with its directory resolved but not its last part (a link is itself)."""
        if path == self.workspace:
            return path
        parent = self.inside(os.path.realpath(os.path.dirname(path)))
        return os.path.join(parent, os.path.basename(path))

    @staticmethod
    def kind(mode: int) -> str:
        return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"

    def handle(self, op: str, request: dict[str, Any], data: bytes) -> bytes:
        if op == "read":
            with open(self.resolved(request["path"]), "rb") as f:
                return f.read()
        if op == "write":
            path = self.resolved(request["path"])
            if os.path.isdir(path):
                raise IsADirectoryError(path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            return b""
        if op == "delete":
            path = self.entry(request["path"])
            if path == self.workspace:
                raise IsADirectoryError(path)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            return b""
        if op == "rename":
            src, dst = self.entry(request["path"]), self.entry(request["dst"])
            if not os.path.lexists(src):
                raise FileNotFoundError(src)
            if os.path.lexists(dst):
                raise FileExistsError(dst)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.rename(src, dst)
            return b""
        if op == "stat":
            st = os.lstat(self.entry(request["path"]))
            return json.dumps([st.st_mode, st.st_size, st.st_mtime]).encode()
        if op == "list":
            return json.dumps(self.list_dir(self.resolved(request["path"]))).encode()
        raise ValueError(f"unknown operation {op!r}")

    def list_dir(self, path: str) -> list[list[Any]]:
        entries: list[list[Any]] = []
        with os.scandir(path) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = self.kind(st.st_mode)
                if stat.S_ISLNK(st.st_mode):
                    try:
                        kind = self.kind(os.stat(e.path).st_mode)
                    except OSError:
                        kind = "symlink"
                entries.append([e.name, kind, st.st_size])
        return entries

    def serve(self, inp: BinaryIO, out: BinaryIO) -> None:
        out.write(b"\x1eREADY:%d\x1e\n" % os.getpid())
        out.flush()
        while True:
            line = inp.readline()
            if not line:
                break
            request = json.loads(line)
            data = inp.read(request["size"]) if request["size"] else b""
            try:
                body, code = self.handle(request["op"], request, data), OK
            except Exception as exc:
                code = next((c for t, c in CODES if isinstance(exc, t)), FAILED)
                body = str(exc).encode()
            out.write(json.dumps({"code": code, "size": len(body)}).encode() + b"\n")
            out.write(body)
            out.flush()


if __name__ == "__main__":
    FileService(sys.argv[1]).serve(sys.stdin.buffer, sys.stdout.buffer)
