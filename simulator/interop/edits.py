"""Commands that edit files, as other tools' agents write them.

SWE-agent edits through its own shell commands (`edit 287:295` followed by the new lines and
`end_of_edit`, `edit 'search' 'replace'`, `insert`, `create`, `str_replace_editor str_replace ...`);
mini-swe-agent and other bash-only agents edit with `sed -i`, `perl -i`, a here-document into
`cat > file`, `tee`, `patch` or `git apply`. Imported, these are `exec` steps; the replay view's
"next edit" recognises them here, without changing what was imported.
"""

from __future__ import annotations

import re

# The agent tool's own commands: the command line starts with them.
_TOOL_EDIT = re.compile(
    r"""\A\s*(?:
        edit\s+\S                                   # edit N:M / edit 'search' 'replace'
      | insert\s+\S
      | append\s+\S
      | create\s+\S
      | (?:str_replace_editor|edit_tool)\s+(?:create|str_replace|insert|undo_edit)\b
    )""",
    re.VERBOSE,
)
# Shell commands that change a file in place, anywhere in a command line (`cd x && sed -i ...`).
_SHELL_EDIT = re.compile(
    r"""(?:\A|[\s;&|(])(?:
        sed\s+(?:[^|;&\n]*\s)?(?:-[a-zA-Z]*i\S*|--in-place\S*)   # sed -i, sed -E -i.bak
      | perl\s+(?:[^|;&\n]*\s)?-[a-zA-Z]*i                      # perl -pi -e
      | cat\s+(?:<<-?\s*['"]?\w+['"]?\s*)?>>?\s*[^\s&|;>]        # cat > f, cat <<'EOF' > f
      | cat\s+>>?\s*[^\s&|;>]
      | tee\s+(?:-a\s+)?[^\s&|;-]                               # ... | tee f
      | patch\b
      | git\s+apply\b
      | apply_patch\b
    )""",
    re.VERBOSE,
)


def is_edit_command(command: str) -> bool:
    """Whether a shell or agent-tool command line edits a file (see the forms above)."""
    return bool(_TOOL_EDIT.match(command) or _SHELL_EDIT.search(command))
